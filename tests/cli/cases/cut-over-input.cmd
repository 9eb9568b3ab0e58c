tracy-cut -q -o small.tracy small.tracy
