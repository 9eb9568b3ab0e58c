tracy-serve -V | sed "s/ [0-9.]* (/ VERSION (/"
