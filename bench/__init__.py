"""Benchmarks of the harness against the physical limit of this setup (issue 7): `python -m bench.run_bench`."""
