# A plain `make` with packages missing changes nothing on the system: one
# line names them and `make deps`; apt-get is never run.
root=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir bin
cat > bin/pkg-config <<'PC'
#!/bin/sh
for a; do case "$a" in libuv|libcjson) exit 1 ;; esac; done
exec /usr/bin/pkg-config "$@"
PC
for t in apt-get sudo dpkg; do
    printf '#!/bin/sh\necho "%s was run" >&2\nexit 1\n' "$t" > "bin/$t"
done
chmod +x bin/*
PATH=$PWD/bin:$PATH env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$root" B="$PWD/b" all 2>&1 |
    sed 's/^Makefile:[0-9]*: //'
test ! -e b && echo "nothing built"
