tracy-merge -q -o m.tracy small.tracy cut-mid.tracy; echo "exit $?"; tracy-info m.tracy | grep -E "^(state|events):"
