tracy-export --split process -f ranks -o parts gen.tracy
