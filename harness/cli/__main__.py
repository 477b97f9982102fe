"""`python -m harness.cli`: the same as the `vbench` script."""

from harness.cli import run

run()
