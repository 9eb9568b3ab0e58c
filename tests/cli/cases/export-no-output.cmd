tracy-export small.tracy
