"""tortoise-bot: Tortoise/VPA-style right-sizing, proposed as reviewable GitOps pull requests."""

__version__ = "0.1.0"
