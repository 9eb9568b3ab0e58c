tracy-cut -q --absolute --from 1000001300 --to 1000001800 -o w.tracy small.tracy && tracy-csv w.tracy
