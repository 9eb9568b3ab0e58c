tracy-json small.tracy -o no/such/dir/out.json
