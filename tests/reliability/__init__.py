"""Reliability under faults: crashes, kills, concurrent runs, expiring credentials."""
