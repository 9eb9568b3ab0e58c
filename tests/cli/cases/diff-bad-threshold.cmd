tracy-diff --threshold lots small.tracy small.tracy
