tracy-diff --min-time 5parsecs small.tracy small.tracy
