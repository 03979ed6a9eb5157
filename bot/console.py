"""Terminal output: rich tables and progress on a TTY, plain text otherwise.

``--color auto|always|never``: ``auto`` means stdout is a TTY, ``TERM`` is not ``dumb`` and
``NO_COLOR`` is unset (https://no-color.org).
"""

from __future__ import annotations

import os
import sys
from typing import Literal, TextIO

from rich.console import Console

ColorMode = Literal["auto", "always", "never"]


def use_rich(stream: TextIO, color: ColorMode = "auto") -> bool:
    """Whether to draw rich output on ``stream``."""
    if color == "always":
        return True
    if color == "never" or os.environ.get("NO_COLOR"):
        return False
    return stream.isatty() and os.environ.get("TERM", "") != "dumb"


def make_console(stream: TextIO | None = None, color: ColorMode = "auto") -> Console:
    """A rich Console that degrades to plain text (no colour, no live widgets) off a TTY."""
    out = stream or sys.stdout
    fancy = use_rich(out, color)
    return Console(
        file=out,
        force_terminal=fancy,
        no_color=not fancy,
        highlight=False,
        soft_wrap=not fancy,
        width=None if fancy else 200,
    )
