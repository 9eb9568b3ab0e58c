printf "a b" > tok; chmod 600 tok
tracy-serve --token-file tok --cache cache small.tracy
