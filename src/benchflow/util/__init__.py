"""Small shared helpers with one job each; they import nothing else of BenchFlow."""
