"""Configuration: the repository opt-in file, the bot settings, and admin defaults.

The names below are imported on first use (``bot.lazy``): ``bot.config.errors`` alone does not
load pydantic, so ``tortoise-bot --help`` never pays for the models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.lazy import lazy_exports

if TYPE_CHECKING:
    from bot.config.bot import BotSettings, load_bot_settings
    from bot.config.errors import ConfigError, ConfigProblem
    from bot.config.recommend import RecommendSettings
    from bot.config.repo import RepoConfig, load_repo_config

__all__ = [
    "BotSettings",
    "ConfigError",
    "ConfigProblem",
    "RecommendSettings",
    "RepoConfig",
    "load_bot_settings",
    "load_repo_config",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "BotSettings": "bot.config.bot",
        "load_bot_settings": "bot.config.bot",
        "ConfigError": "bot.config.errors",
        "ConfigProblem": "bot.config.errors",
        "RecommendSettings": "bot.config.recommend",
        "RepoConfig": "bot.config.repo",
        "load_repo_config": "bot.config.repo",
    },
)
