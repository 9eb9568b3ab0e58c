tracy-info empty.tracy
