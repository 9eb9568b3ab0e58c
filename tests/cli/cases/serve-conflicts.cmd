# An option given twice with different values is refused in one line, exit
# 1, before anything is listened on or indexed (before, the last one won and
# the server ran: `timeout` ends such a run).
printf 'secret1\n' > tok1 && printf 'secret2\n' > tok2 && chmod 600 tok1 tok2
for a in "-p 8791 -p 0" "-a 127.0.0.1 --addr 0.0.0.0" "--cache c1 --cache c2" \
         "--token-file tok1 --token-file tok2"; do
    timeout 10 tracy-serve $a small.tracy
    echo "exit $?"
done
ls -d c1 c2 2>/dev/null
rm -f tok1 tok2
