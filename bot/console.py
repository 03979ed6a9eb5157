"""Terminal output: tables that read at any width, and progress on a TTY; plain text otherwise.

``--color auto|always|never``: ``auto`` means the stream is a TTY, ``TERM`` is not ``dumb`` and
``NO_COLOR`` is unset (https://no-color.org). Rich output adds only colour and live progress:
tables have no box drawing in either mode, so the layout (and a test of it) is the same.

Tables (``print_table``): a ``Column`` never breaks its cells (identifiers: the table makes
room for them) or breaks them only where its ``breaks`` pattern allows; a ``flex`` column (free
text such as reasons) gives up its width first. Widths come from ``column_widths``; a table is
as wide as the console (``COLUMNS``, else the terminal, else 80). A table whose identifiers and
unbreakable values cannot fit side by side is shown one row at a time (``stacked_lines``): no
value is ever cut, whatever the width.
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


LIST = r"(?<=[,;]) "
"""``Column.breaks``: a cell may break only after ``,`` or ``;`` (a list such as ``cpu 0.5 →
0.325, memory 1 GiB → 489 MiB`` breaks between its items, never inside one)."""


@dataclass(frozen=True, slots=True)
class Column:
    """A table column. ``breaks`` is the pattern of the spaces where a cell may break onto the
    next line (``WORDS``, ``AFTER_ARROWS``, ``LIST``); None: a cell never breaks (identifiers)
    and the table makes room for it. A ``flex`` column (free text) gives up width first."""

    header: str
    breaks: str | None = None
    flex: bool = False


class Prose(str):
    """A cell of running text in a column of another kind (a reason where the column lists
    changes): it breaks between its words whatever the column's ``breaks``."""

    __slots__ = ()


def _breaks_of(text: str, breaks: str | None) -> str | None:
    return WORDS if isinstance(text, Prose) else breaks


def wrap_cell(text: str, breaks: str | None, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` cells, broken only where ``breaks`` allows (a part
    longer than ``width`` keeps its own line; ``Prose`` breaks between words)."""
    breaks = _breaks_of(text, breaks)
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        parts = re.split(breaks, paragraph) if breaks else [paragraph]
        line = parts[0]
        for part in parts[1:]:
            if cell_len(line) + 1 + cell_len(part) <= width:
                line += " " + part
            else:
                lines.append(line.rstrip(" "))
                line = part
        lines.append(line.rstrip(" "))
    return lines


def _longest(cells: Sequence[str], breaks: str | None) -> int:
    """The width below which some cell would have to break where ``breaks`` does not allow."""
    return max(
        cell_len(part)
        for cell in cells
        for line in cell.splitlines() or [""]
        for part in _parts(line, _breaks_of(cell, breaks))
    )


def _parts(line: str, breaks: str | None) -> list[str]:
    return re.split(breaks, line) if breaks else [line]


def column_widths(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int
) -> list[int]:
    """Cell widths that fit ``width`` (columns ``COLUMN_GAP`` apart) when the columns allow.

    Every column starts at its widest line. While the table is too wide, a flex column, then
    any other breakable column loses one cell at a time (the one with the most to spare
    first), never below its longest unbreakable part; a column without ``breaks`` never
    shrinks, so an identifier is never broken (the widths then add up to more than asked:
    ``print_table`` shows such a table one row at a time); a header breaks between its words
    whatever its column's ``breaks``. Width a column no longer uses goes to the flex column.
    """
    cells = [[c.header, *(row[i] for row in rows)] for i, c in enumerate(columns)]
    widths = [_longest(col, None) for col in cells]
    least = [
        max(_longest([*col[1:], ""], c.breaks), _longest(col[:1], WORDS))  # header: words
        for c, col in zip(columns, cells, strict=True)
    ]
    room = width - COLUMN_GAP * (len(columns) - 1)
    for kind in ("flex", "breaks"):
        while sum(widths) > room:
            candidates = [
                i for i, c in enumerate(columns) if getattr(c, kind) and widths[i] > least[i]
            ]
            if not candidates:
                break
            widths[max(candidates, key=lambda i: widths[i] - least[i])] -= 1
    used = [
        max(
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


def table_lines(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int
) -> list[tuple[int, str]]:
    """The lines of a table at ``width``, each with the index of its row (-1: the header).

    Side by side when the columns fit; otherwise one row at a time (``stacked_lines``), so no
    value is ever cut: a line is longer than ``width`` only for a token that cannot break."""
    widths = column_widths(columns, rows, width)
    if sum(widths) + COLUMN_GAP * (len(widths) - 1) > width:
        return stacked_lines(columns, rows, width)
    out: list[tuple[int, str]] = []
    gap = " " * COLUMN_GAP
    for index, cells in enumerate([[c.header for c in columns], *rows], start=-1):
        wrapped = [
            wrap_cell(cell, WORDS if index < 0 else c.breaks, w)
            for c, cell, w in zip(columns, cells, widths, strict=True)
        ]
        height = max(len(lines) for lines in wrapped)
        if index < 0:  # headers sit on their last line, above the values
            wrapped = [[""] * (height - len(lines)) + lines for lines in wrapped]
        for k in range(height):
            parts = [(lines[k] if k < len(lines) else "") for lines in wrapped]
            text = gap.join(p + " " * (w - cell_len(p)) for p, w in zip(parts, widths, strict=True))
            out.append((index, text.rstrip(" ")))
    return out


INDENT = "  "
"""How far a stacked row's values sit under its identifiers."""


def stacked_lines(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int
) -> list[tuple[int, str]]:
    """A table too wide for ``width``, one row at a time: the row's identifiers (the columns
    without ``breaks``) on one line, then each other non-empty cell under its header, wrapped
    where its column allows (on the next line when the header leaves too little room)."""
    names = [i for i, c in enumerate(columns) if c.breaks is None] or [0]
    others = [i for i in range(len(columns)) if i not in names]
    label_width = max((cell_len(columns[i].header) for i in others), default=0)
    out: list[tuple[int, str]] = []
    for index, row in enumerate(rows):
        heading = [i for i in names if row[i]]
        gap = " " * COLUMN_GAP
        if others and cell_len(gap.join(row[i] for i in [*heading, others[0]])) <= width:
            heading.append(others[0])  # the first value beside the names when it fits
        out += [(index, line) for line in wrap_cell(gap.join(row[i] for i in heading), r" ", width)]
        for i, column in enumerate(columns):
            if i in heading or i in names or not row[i]:
                continue
            inline = width - cell_len(INDENT) - label_width - COLUMN_GAP
            label = INDENT + column.header.ljust(label_width) + " " * COLUMN_GAP
            if _longest([row[i]], column.breaks) <= inline:
                lines = wrap_cell(row[i], column.breaks, inline)
                out.append((index, label + lines[0]))
                out += [(index, " " * cell_len(label) + line) for line in lines[1:]]
            else:
                out.append((index, INDENT + column.header))
                deeper = INDENT * 2
                wrapped = wrap_cell(row[i], column.breaks, width - cell_len(deeper))
                out += [(index, deeper + line) for line in wrapped]
    return out


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
    shown = [[Prose(visible(c)) if isinstance(c, Prose) else visible(c) for c in r] for r in rows]
    for index, line in table_lines(columns, shown, console.width):
        if index < 0:
            style = "bold" if console.is_terminal else None
        else:
            style = styles[index] if index < len(styles) else None
        console.print(Text(line, style=style or ""), soft_wrap=True, overflow="ignore")


def print_wrapped(console: Console, text: str, *, indent: str = "", style: str = "") -> None:
    """``text`` wrapped between its words at the console's width, continuation lines indented
    by ``indent``: running text never cut, never longer than the width but for one long token."""
    lines = wrap_cell(text, WORDS, max(1, console.width - cell_len(indent)))
    for k, line in enumerate(lines):
        console.print(Text((indent if k else "") + line, style=style), soft_wrap=True)


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
