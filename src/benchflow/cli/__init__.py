"""The `bench` command line: a thin skin over the library (parse, call, print, exit code)."""
