"""Terminal output: tables that read at any width, and progress on a TTY; plain text otherwise.

``--color auto|always|never``: ``auto`` means the stream is a TTY, ``TERM`` is not ``dumb`` and
``NO_COLOR`` is unset (https://no-color.org). Rich output adds only colour and live progress:
tables have no box drawing in either mode, so the layout (and a test of it) is the same.

Tables (``print_table``): a ``Column`` never breaks its cells (identifiers: the table makes
room for them) or breaks them only where its ``breaks`` pattern allows; a ``flex`` column (free
text such as reasons) gives up its width first. Widths come from ``column_widths``; a table is
as wide as the console (``COLUMNS``, else the terminal, else 80).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from bot.redaction import visible

ColorMode = Literal["auto", "always", "never"]

COLUMN_GAP = 2
"""Spaces between two columns."""


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
    return Console(file=out, force_terminal=fancy, no_color=not fancy, highlight=False)


WORDS = r" (?![%)])"
"""``Column.breaks``: a cell may break at a space (free text), except before ``%`` or ``)``."""

AFTER_ARROWS = r"(?<=[→/,;]) "
"""``Column.breaks``: a cell may break only after ``→``, ``/``, ``,`` or ``;`` (values such as
``512 MiB → 410 MiB`` break between the values, never inside one)."""


@dataclass(frozen=True, slots=True)
class Column:
    """A table column. ``breaks`` is the pattern of the spaces where a cell may break onto the
    next line (``WORDS``, ``AFTER_ARROWS``); None: a cell never breaks (identifiers) and the
    table makes room for it. A ``flex`` column (free text) gives up width first; a ``truncate``
    column stays on one line, cut with ``…`` when the table is too wide."""

    header: str
    breaks: str | None = None
    flex: bool = False
    truncate: bool = False


def wrap_cell(text: str, breaks: str | None, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` cells, broken only where ``breaks`` allows (a part
    longer than ``width`` keeps its own line)."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        parts = re.split(breaks, paragraph) if breaks else [paragraph]
        line = parts[0]
        for part in parts[1:]:
            if cell_len(line) + 1 + cell_len(part) <= width:
                line += " " + part
            else:
                lines.append(line)
                line = part
        lines.append(line)
    return lines


def _longest(cells: Sequence[str], breaks: str | None) -> int:
    """The width below which some cell would have to break where ``breaks`` does not allow."""
    return max(
        cell_len(part)
        for cell in cells
        for line in cell.splitlines() or [""]
        for part in (re.split(breaks, line) if breaks else [line])
    )


def column_widths(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int
) -> list[int]:
    """Cell widths that fit ``width`` (columns ``COLUMN_GAP`` apart) when the columns allow.

    Every column starts at its widest line. While the table is too wide, a truncated column,
    then a flex column, then any other breakable column loses one cell at a time (the one with
    the most to spare first), never below its longest unbreakable part; a column without
    ``breaks`` never shrinks, so an identifier is never broken (the table is then wider than
    asked); a header breaks between its words whatever its column's ``breaks``. Width a column no longer uses goes to the flex column.
    """
    cells = [[c.header, *(row[i] for row in rows)] for i, c in enumerate(columns)]
    widths = [_longest(col, None) for col in cells]
    least = [
        min(cell_len(c.header), 12)
        if c.truncate
        else max(_longest([*col[1:], ""], c.breaks), _longest(col[:1], WORDS))  # header: words
        for c, col in zip(columns, cells, strict=True)
    ]
    room = width - COLUMN_GAP * (len(columns) - 1)
    for kind in ("truncate", "flex", "breaks"):
        while sum(widths) > room:
            candidates = [
                i for i, c in enumerate(columns) if getattr(c, kind) and widths[i] > least[i]
            ]
            if not candidates:
                break
            widths[max(candidates, key=lambda i: widths[i] - least[i])] -= 1
    used = [
        w
        if c.truncate
        else max(
            cell_len(line)
            for k, cell in enumerate(col)
            for line in wrap_cell(cell, WORDS if k == 0 else c.breaks, w)
        )
        for c, col, w in zip(columns, cells, widths, strict=True)
    ]
    natural = [_longest(col, None) for col in cells]
    for i, c in enumerate(columns):
        if c.flex:
            used[i] = min(natural[i], used[i] + max(0, room - sum(used)))
    return used


def print_table(
    console: Console,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    styles: Sequence[str | None] = (),
) -> None:
    """``rows`` under ``columns`` at the console's width; ``styles[i]`` colours row ``i``."""
    if not rows:
        return
    widths = column_widths(columns, rows, console.width)
    table = Table(
        box=None,
        show_edge=False,
        pad_edge=False,
        padding=(0, COLUMN_GAP // 2),
        header_style="bold" if console.is_terminal else "",
        expand=False,
    )
    for column, cell_width in zip(columns, widths, strict=True):
        table.add_column(
            "\n".join(wrap_cell(column.header, WORDS, cell_width)),
            width=cell_width,
            no_wrap=True,
            overflow="ellipsis" if column.truncate else "fold",
        )
    for i, row in enumerate(rows):
        cells = [
            Text(cell if c.truncate else "\n".join(wrap_cell(cell, c.breaks, w)))
            for c, cell, w in zip(columns, [visible(cell) for cell in row], widths, strict=True)
        ]
        table.add_row(*cells, style=styles[i] if i < len(styles) else None)
    with console.capture() as captured:
        console.print(table, width=max(console.width, sum(widths) + COLUMN_GAP * len(widths)))
    console.file.write("".join(line.rstrip(" ") + "\n" for line in captured.get().splitlines()))


Advance = Callable[..., None]
"""``advance(task, steps=1, label=None, total=None)``: ``steps`` more of ``task`` done; ``label``
shown after the task's name; ``total`` sets (or corrects) how many there are."""


@contextmanager
def progress(console: Console, totals: Mapping[str, int | None]) -> Iterator[Advance]:
    """One progress bar per task (done / total, elapsed) on a terminal; nothing otherwise.

    A total of None is unknown until an ``advance(..., total=N)``."""
    if not console.is_terminal:

        def nothing(
            task: str, steps: int = 1, label: str | None = None, total: int | None = None
        ) -> None:
            return None

        yield nothing
        return
    # only a terminal draws progress: rich's live display is imported for it alone
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bars:
        ids = {name: bars.add_task(name, total=total) for name, total in totals.items()}

        def advance(
            task: str, steps: int = 1, label: str | None = None, total: int | None = None
        ) -> None:
            description = f"{task} {label}" if label else task
            bars.update(ids[task], advance=steps, description=description)
            if total is not None:
                bars.update(ids[task], total=total)
            bars.refresh()  # every step is drawn, however fast the next one comes

        yield advance
