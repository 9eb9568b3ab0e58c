tracy-csv no-such-file.tracy
