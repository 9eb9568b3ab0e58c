# func_5 gone and func_7 renamed in b.tracy; the other way, func_5 is added.
tracegen -z 3000 -o a.tracy && tracegen -z 3000 --drop 5 --rename 7:load_batch -o b.tracy &&
tracy-diff a.tracy b.tracy && tracy-diff b.tracy a.tracy
