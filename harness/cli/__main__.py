"""`python -m harness.cli`: the same as the `vbench` script."""

import sys

from harness.cli import main

sys.exit(main())
