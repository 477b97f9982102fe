"""The store's names that other layers read (the evaluation's key, the id length, the in-memory URL), in a module of
their own so that reading them does not import the store's database toolkit."""

EVALUATION_KEY = "verifier_evaluation"
KEY_LENGTH = 200
"""The longest id or tool name a row holds: PostgreSQL enforces it (varchar), SQLite does not."""
MEMORY_URL = "sqlite://"
