"""The compiled XOR-chunk decoder's shared library (``xor_chunks.c`` beside this file), loaded
once when this module is imported; its functions are called by ``xor_compiled.py``.

It is the one compiled part of the bot: a bit-level loop numpy cannot vectorise, about 10 ns a
sample against about 210 ns for the numpy decoder of ``xor_chunks.py``, which is its reference
(``tests/metrics/test_xor_compiled.py`` checks that both give the same samples to the bit and
refuse the same answers) and the decoder used where the package was installed without a C
compiler. ``DECODER`` says which runs (``tortoise-bot --version`` and the log of a source that
reads remote read answers show it); this module imports nothing but the standard library, so
``--version`` stays light.

The library is built at install time (``setup.py``: an optional extension); ``ctypes``
releases the GIL during a call. Only this module and ``xor_compiled.py`` use ``ctypes``.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
from pathlib import Path
from typing import Any, Final

LIBRARY_STEM = "_xor_chunks"
"""The shared library's file name before the interpreter's extension suffix."""


def library_path() -> Path | None:
    """The built shared library beside this file, if any."""
    here = Path(__file__).resolve().parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = here / f"{LIBRARY_STEM}{suffix}"
        if path.is_file():
            return path
    return None


def _load() -> ctypes.CDLL | None:
    path = library_path()
    if path is None:
        return None
    try:
        return ctypes.CDLL(str(path))
    except OSError:  # a foreign or broken build: the numpy decoder runs
        return None


_I64, _PTR = ctypes.c_int64, ctypes.c_void_p


def _function(library: ctypes.CDLL | None, name: str, argtypes: list[Any]) -> Any | None:
    function = getattr(library, name, None) if library is not None else None
    if function is not None:
        function.restype = ctypes.c_int
        function.argtypes = argtypes
    return function


LIBRARY: Final = _load()
SAMPLES: Final = _function(
    LIBRARY, "tb_xor_samples", [_PTR, _I64, _PTR, _PTR, _I64, _PTR, _I64, _I64] + [_PTR] * 5
)
"""``tb_xor_samples(data*, size, starts*, ends*, n, offsets*, start_ms, end_ms, scratch*,
out_s*, out_v*, kept*, where*) -> status``, or None when the library is not built."""
TABLE: Final = _function(
    LIBRARY,
    "tb_xor_table",
    [_PTR, _I64, _PTR, _I64, _PTR, _I64, _PTR, _I64, _PTR, _I64] + [_PTR] * 2,
)
"""``tb_xor_table(data*, size, spans*, n_spans, series*, cap, labels*, cap, chunks*, cap,
found*, detail*) -> status``, or None when the library is not built."""

AVAILABLE: Final = SAMPLES is not None and TABLE is not None
"""Whether the compiled decoder runs (else the numpy one)."""

DECODER: Final = (
    "compiled" if AVAILABLE else "numpy (the package was installed without a C compiler)"
)
"""Which XOR-chunk decoder this installation runs, in words for ``--version`` and the log."""
