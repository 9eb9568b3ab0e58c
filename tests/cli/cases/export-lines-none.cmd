tracy-export -f lines -o out.txt empty.tracy; echo "exit $?"; ls out.txt 2>&1 | sed "s/:.*//"
