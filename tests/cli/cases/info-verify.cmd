tracy-info --verify small.tracy
