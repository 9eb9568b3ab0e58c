printf secret > tok; chmod 644 tok
tracy-serve --token-file tok --cache cache small.tracy
