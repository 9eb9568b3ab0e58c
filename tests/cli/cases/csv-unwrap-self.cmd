tracy-csv --unwrap --self small.tracy
