"""Branch keys and names: grouping of change sets and safe, deterministic git branch names."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from bot.model import ChangeSet, WorkloadRef

if TYPE_CHECKING:
    from bot.config.forge import PullRequestConfig

Grouping: TypeAlias = Literal["workload", "namespace", "environment", "repository"]

REPOSITORY_KEY = "all"
"""Key of the single change set when grouping is per repository."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
"""Characters outside this set never reach a ref name (``git check-ref-format`` rules)."""


def group_key(ref: WorkloadRef, grouping: Grouping) -> str:
    """The change-set key of ``ref``: ``env/namespace/name``, ``env/namespace``, ``env`` or ``all``."""
    if grouping == "workload":
        return f"{ref.environment}/{ref.namespace}/{ref.name}"
    if grouping == "namespace":
        return f"{ref.environment}/{ref.namespace}"
    if grouping == "environment":
        return ref.environment
    return REPOSITORY_KEY


def group_change_sets(
    change_sets: Iterable[ChangeSet], grouping: Grouping
) -> tuple[ChangeSet, ...]:
    """Change sets merged per ``group_key`` (order of first appearance, changes kept in order)."""
    merged: dict[str, tuple[list[object], list[object]]] = {}
    for change_set in change_sets:
        for change in change_set.changes:
            merged.setdefault(group_key(change.ref, grouping), ([], []))[0].append(change)
        for rec in change_set.recommendations:
            merged.setdefault(group_key(rec.ref, grouping), ([], []))[1].append(rec)
    return tuple(
        ChangeSet(key, tuple(changes), tuple(recs))  # type: ignore[arg-type]
        for key, (changes, recs) in merged.items()
    )


def _component(text: str) -> str:
    part = _UNSAFE.sub("-", text).strip("-.")
    part = re.sub(r"\.\.+", ".", part)
    part = part.removesuffix(".lock")
    return part or "_"


def branch_name(key: str, *, prefix: str = "tortoise-bot", template: str = "{prefix}/{key}") -> str:
    """The branch of change set ``key``: ``template`` filled, each ``/``-part made ref-safe."""
    raw = template.format(prefix=prefix, key=key)
    return "/".join(_component(part) for part in raw.split("/") if part)


_KEY_MARKER = "tortoisebotkeymarker0"
"""A key made only of ref-safe characters, to find where keys go in a branch template."""


def branch_affixes(
    *, prefix: str = "tortoise-bot", template: str = "{prefix}/{key}"
) -> tuple[str, str]:
    """(head, tail): every bot branch is ``head + something + tail`` (e.g. ``tortoise-bot/``, ``""``)."""
    name = branch_name(_KEY_MARKER, prefix=prefix, template=template)
    head, _, tail = name.partition(_KEY_MARKER)
    return head, tail


def is_bot_branch(
    name: str, *, prefix: str = "tortoise-bot", template: str = "{prefix}/{key}"
) -> bool:
    """Whether ``name`` has the shape of the bot's branches."""
    head, tail = branch_affixes(prefix=prefix, template=template)
    return name.startswith(head) and name.endswith(tail) and len(name) > len(head) + len(tail)


@dataclass(frozen=True, slots=True)
class BranchNames:
    """The bot's branch names of one repository's settings (``prefix``, ``template``)."""

    prefix: str = "tortoise-bot"
    template: str = "{prefix}/{key}"

    @classmethod
    def of_settings(cls, config: PullRequestConfig) -> BranchNames:
        """The branch names of a repository's pull-request settings."""
        return cls(config.branch_prefix, config.branch_template)

    def of(self, key: str) -> str:
        """The branch of change set ``key`` (``branch_name``)."""
        return branch_name(key, prefix=self.prefix, template=self.template)

    def is_bot(self, name: str) -> bool:
        """Whether ``name`` has the shape of the bot's branches (``is_bot_branch``)."""
        return is_bot_branch(name, prefix=self.prefix, template=self.template)

    @property
    def head(self) -> str:
        """What every bot branch starts with (listing remote branches asks for it)."""
        return branch_affixes(prefix=self.prefix, template=self.template)[0]

    def key_of(self, branch: str) -> str:
        """The key part of a bot branch name (as sanitised into the name)."""
        head, tail = branch_affixes(prefix=self.prefix, template=self.template)
        return branch[len(head) : len(branch) - len(tail)]
