"""The conformance kit: certify any implementation of the spec over the SUT protocol."""
