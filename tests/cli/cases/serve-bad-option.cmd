tracy-serve --frobnicate small.tracy
