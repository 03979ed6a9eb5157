"""Mercari Tortoise's rules (v1.2.3): replica slots, HPA targets, requests, emergency."""
