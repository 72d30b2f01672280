"""Benchmarks: each prints a table and, as its last line, one JSON object of its figures."""
