tracy-export --split process -f folded -o parts gen.tracy && ls parts && wc -l < parts/gen.rank1.folded && tracy-export -p 2 -f folded -o - gen.tracy | cmp - parts/gen.rank1.folded && echo same
