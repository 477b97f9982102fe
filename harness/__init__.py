"""verifier-bench: the AIOps verifier system under test, and the harness that measures it."""

__version__ = "0.1.0"
