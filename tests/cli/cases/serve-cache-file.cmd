# The index folder must be a folder: a file given as --cache is refused at
# the start (it was taken, and every trace then shown as unreadable).
echo x > cachefile
tracy-serve -p 0 --cache "$PWD/cachefile" small.tracy 2> err
echo "exit $?"
sed "s|$PWD/||" err
