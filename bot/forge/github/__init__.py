"""GitHub as a forge (the primitives of ``bot.forge.protocol``), through PyGithub:
``GitHubForge`` opens one ``RepositorySession`` per repository and run; ``bot.forge.publish``
runs the pull-request lifecycle on it.

Reads are kept to what the lifecycle needs (``docs/pull-requests.md``, "API budget"): the
repository, one listing of pull requests, one lookup of the dashboard issue, and the commits
of an open bot pull request only when its branch moved away from the commit the bot pushed.
Everything else is a write, made only when something changes. Bot branches are listed with
``git ls-remote``, not through the API.

Modules: ``api`` (the REST client: retries, errors, budget), ``answers`` (the bound on each
answer's size), ``listing`` (the bot's pull requests, as ``bot.forge.pulls.ListedPull``),
``dashboard`` (the dashboard issue), ``writes`` (open, edit, comment, close, labels, reviews),
``session`` (one repository in one run), ``forge`` (``GitHubForge``).
"""

from bot.forge.github.api import make_retry
from bot.forge.github.forge import GitHubForge
from bot.forge.github.session import RepositorySession

__all__ = ["GitHubForge", "RepositorySession", "make_retry"]
