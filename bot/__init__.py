"""tortoise-bot: Tortoise/VPA-style right-sizing, proposed as reviewable GitOps pull requests."""

__version__ = "0.1.0"
"""The version: the wheel's (``pyproject.toml`` reads it), ``--version``'s, and the release tag's
(``v`` + this; ``scripts/release_version.py`` checks it before a release is built)."""
