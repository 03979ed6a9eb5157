"""The recommendation engine: pure functions from history to explained proposals."""
