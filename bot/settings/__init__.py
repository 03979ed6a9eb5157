"""Every effective setting a repository, environment or workload gets, resolved once, each with
where it came from (``Origin``: file, 1-based line, key; ``default`` when nobody set it).

- ``repository``: ``RepositorySettings``, one per checkout: the bot config over the defaults,
  the opt-in file over them (pull requests and their prices, the schedule, ``update_mode``);
- ``environment``: ``EnvironmentSettings``, one inventory environment's Prometheus selector,
  namespace and ``update_mode``;
- ``workload``: ``WorkloadSettings``, one workload's recommend settings, container policies and
  allocation bounds (the engine's defaults and a declared VPA's bounds included), emergency and
  skip;
- ``origin``: ``Origin`` and ``Resolved`` (a value with its origin).

The pipeline, the commands and the engine's input (``recommend.inputs.build_input``) receive
these resolved values; none merges settings again.
"""

from __future__ import annotations

from bot.settings.environment import EnvironmentSettings
from bot.settings.origin import Origin, Resolved
from bot.settings.repository import RepositorySettings
from bot.settings.workload import WorkloadSettings

__all__ = ["EnvironmentSettings", "Origin", "RepositorySettings", "Resolved", "WorkloadSettings"]
