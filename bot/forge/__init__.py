"""Git and forges: checkouts, branches, pull requests, the dashboard.

Imports ``bot.model``, ``bot.report`` and ``bot.config``. What any forge does is here:
``protocol`` (the primitives a forge implements, and what the pipeline asks), ``publish`` (the
pull-request lifecycle on those primitives) with ``act`` (what one step writes),
``lifecycle.decide`` and ``schedule`` (pure decisions), ``checkout``, ``dashboard`` and
``messages``; ``github/`` implements the primitives for GitHub (``auth`` builds token or App
credentials).
"""
