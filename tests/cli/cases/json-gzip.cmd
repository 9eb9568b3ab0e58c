tracy-json small.tracy -o out.json.gz && gzip -dc out.json.gz > a.json && tracy-json small.tracy -o - > b.json && cmp a.json b.json && echo same
