"""Git and GitHub: checkouts, branches, pull requests, the dashboard issue.

Imports ``bot.model``, ``bot.report`` and ``bot.config``. ``lifecycle.decide`` is the pure
decision; ``github.GitHubForge`` acts on it; ``auth`` builds token or App credentials.
"""
