tracy-json cut-mid.tracy -o out.json; e=$?; cat out.json; exit $e
