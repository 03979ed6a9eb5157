"""Git and forges: checkouts, branches, pull requests, the dashboard.

Imports ``bot.model``, ``bot.report`` and ``bot.config``. What any forge does is here:
``protocol`` (what the pipeline asks), ``lifecycle.decide`` and ``schedule`` (pure decisions),
``checkout``, ``dashboard`` and ``messages``; ``github/`` acts on them for GitHub (``auth``
builds token or App credentials).
"""
