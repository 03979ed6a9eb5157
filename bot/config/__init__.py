"""Configuration: the repository opt-in file, the bot settings, and admin defaults."""

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
