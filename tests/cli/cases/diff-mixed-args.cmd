tracy-diff -b small.tracy small.tracy small.tracy
