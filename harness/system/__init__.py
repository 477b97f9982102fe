"""The system under test: parser, gatekeeper, verifier, verdict policy, store.

It imports `harness.llm` at most, never the evaluation or report layers.
"""
