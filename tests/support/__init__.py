"""Reusable test support: real servers the test suites start in-process."""
