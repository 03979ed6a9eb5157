"""A repository's effective settings, resolved once per checkout, each with where it came from.

The layers, later winning: the bot's defaults <- the bot config (``BotSettings``) <- the
repository's opt-in file (``.tortoise-bot.yaml``) <- its ``environments:`` entry (per
environment) <- its ``workloads:`` entries (per workload, ``bot.settings.workload``). The
pipeline, the commands and the forge receive these values; none of them merges settings again.

- ``pull_requests``: the file's ``pull_requests``, with the bot's ``prices`` as its ``cost``
  unless the file sets ``pull_requests.cost``;
- ``environment(name)``: the Prometheus selector, namespace and ``update_mode`` of an inventory
  environment (``bot.settings.environment``);
- ``dashboard_only_reason(now_s)``: why a run only updates the dashboard (``update_mode: off``,
  or outside ``pull_requests.schedule``), or None;
- ``for_workload(declared)``: one workload's settings (``WorkloadSettings``);
- ``origin_of(*key)``: where any key of the file came from (file, line, key), ``default`` when
  the file does not set it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel

from bot.config.bot import BotSettings
from bot.config.errors import ConfigProblem
from bot.config.forge import PullRequestConfig
from bot.config.recommend import RecommendSettings
from bot.config.repo import ConfigSource, RepoConfig, repo_config_source
from bot.config.verify import VerifySettings
from bot.model import DeclaredWorkload
from bot.settings.environment import EnvironmentSettings, environment_settings
from bot.settings.origin import Origin
from bot.settings.workload import RepositoryRules, WorkloadSettings

BOT_SETTINGS = "bot settings"
"""The ``file`` of a value the bot config sets (its path is the command line's)."""


_UNSET = object()


def _child(node: object, part: int | str) -> object:
    """``node``'s value at ``part`` (a model's field the file sets, an item of a tuple or a
    mapping), ``_UNSET`` when the file does not set it."""
    if isinstance(node, BaseModel):
        set_here = isinstance(part, str) and part in node.model_fields_set
        return getattr(node, str(part)) if set_here else _UNSET
    if isinstance(node, Mapping):
        return node.get(part, _UNSET)
    if isinstance(node, Sequence) and isinstance(part, int) and part < len(node):
        return node[part]
    return _UNSET


class RepositorySettings:
    """A repository's settings, read once (see the module doc)."""

    def __init__(
        self, config: RepoConfig, bot: BotSettings, source: ConfigSource | None = None
    ) -> None:
        self.config = config
        self.rules = RepositoryRules(config, bot.recommend, source)
        self.source = self.rules.source
        self.recommend: RecommendSettings = bot.recommend
        """The bot's recommend settings, before the file's (its ``noise`` judges proposals)."""
        self.display_zone: str = bot.report.time_zone
        """The clock of the times pull requests show (``report.time_zone``)."""
        self.verify: VerifySettings = bot.verify
        """The verification of merged proposals; the engine reads ``after_revert_margin``."""
        if "cost" in config.pull_requests.model_fields_set:
            cost_origin = self.origin_of("pull_requests", "cost")
            self.pull_requests: PullRequestConfig = config.pull_requests
        else:
            prices_set = "prices" in bot.model_fields_set
            cost_origin = (
                Origin(BOT_SETTINGS, 0, "prices") if prices_set else Origin.default("prices")
            )
            self.pull_requests = config.pull_requests.model_copy(update={"cost": bot.prices})
        self.cost_origin = cost_origin
        """Where the prices of the cost figures come from (``pull_requests.cost``)."""

    @classmethod
    def of_checkout(cls, root: Path, config: RepoConfig, bot: BotSettings) -> RepositorySettings:
        """The settings of the checkout at ``root``, whose opt-in file ``config`` was read from."""
        return cls(config, bot, repo_config_source(root))

    def origin_of(self, *loc: int | str) -> Origin:
        """Where the file's key at ``loc`` (``"pull_requests", "grouping"``) is set, or a
        ``default`` origin when the file leaves it unset."""
        node: object = self.config
        for part in loc:
            node = _child(node, part)
            if node is _UNSET:
                return Origin.default(".".join(map(str, loc)))
        return self.rules.origin(*loc)

    def environment(self, name: str) -> EnvironmentSettings:
        """The effective settings of the inventory environment ``name``."""
        return environment_settings(self.config, self.source, name)

    def selector(self, environment: str) -> dict[str, str]:
        """The extra Prometheus label matchers of ``environment``'s workloads."""
        return dict(self.environment(environment).selector.value)

    def dashboard_only_reason(self, *, now_s: float) -> str | None:
        """Why this run only updates the dashboard (no pull request is opened or updated), or
        None: ``update_mode: off`` always; ``pull_requests.schedule`` outside its window."""
        if self.config.update_mode == "off":
            return "update_mode is off"
        window = self.pull_requests.schedule
        if window is not None and not window.contains(now_s):
            return "outside the pull-request schedule window"
        return None

    def for_workload(self, declared: DeclaredWorkload) -> WorkloadSettings:
        """The effective settings of one workload (``RepositoryRules.for_workload``)."""
        return self.rules.for_workload(declared)

    def problems(self) -> list[ConfigProblem]:
        """Every problem of the file's settings, whichever workloads they meet."""
        return self.rules.problems()
