tracy-diff
