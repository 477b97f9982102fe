"""Baselines: verifiers the system is compared with, kept outside `system/`.

The replay fingerprint hashes `system/`, not this package, so editing a baseline leaves kept LLM results valid.
A baseline is built like any model, through the provider registry (`harness.run.providers.build_verifier`).
"""

from __future__ import annotations
