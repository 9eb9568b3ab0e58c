tracy-merge -q -o empty.tracy small.tracy
