"""Compiled kernels for the few loops numpy cannot vectorise, loaded with ``ctypes``.

The C sources sit beside this file and are built into one shared library
(``_kernels<EXTENSION_SUFFIX>``) when the package is installed (``setup.py``: an optional
extension, so an install without a C compiler still succeeds). Every kernel has a Python twin
that gives the same numbers to the bit; callers use the kernel when ``kernels()`` returns the
library and the twin when it returns ``None`` (not built, or switched off with
``TORTOISE_BOT_NATIVE=off``). ``tests/native`` runs both on the same inputs and compares them.

A kernel reads and writes only the arrays it is given: no I/O, no allocation the caller sees,
and it releases the GIL while it runs (``ctypes.CDLL``), so threads run kernels in parallel.
Each kernel has a small module here that declares its C types (``kernel``) and takes numpy
arrays (``hpa.py``); the rest of the bot never touches ``ctypes``.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import os
import weakref
from pathlib import Path
from typing import Any

LIBRARY_STEM = "_kernels"
"""The shared library's file name before the interpreter's extension suffix."""

SWITCH = "TORTOISE_BOT_NATIVE"
"""Environment variable: ``off`` (or ``0``, ``false``, ``no``) runs the Python twins."""

_loaded: list[ctypes.CDLL | None] = []


def library_path() -> Path | None:
    """The built shared library beside this file, if any."""
    here = Path(__file__).resolve().parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = here / f"{LIBRARY_STEM}{suffix}"
        if path.is_file():
            return path
    return None


_OFF = frozenset({"off", "0", "false", "no"})
_ENVIRON_BYTES: dict[bytes, bytes] | None = (
    os.environ._data  # type: ignore[attr-defined]
    if os.name == "posix" and isinstance(getattr(os.environ, "_data", None), dict)
    else None
)
"""The store behind ``os.environ`` on POSIX (bytes to bytes, kept current by every change
of ``os.environ``): the switch is read on every kernel call, and a lookup here costs a
fourteenth of ``os.environ.get`` (which encodes the name and decodes the value each time)."""
_SWITCH_BYTES = SWITCH.encode()
_parsed: dict[bytes | None, bool] = {}
"""``switched_off`` by the switch's raw value (few values are ever seen)."""


def switched_off() -> bool:
    """Whether ``TORTOISE_BOT_NATIVE`` asks for the Python twins."""
    if _ENVIRON_BYTES is None:
        return os.environ.get(SWITCH, "on").strip().lower() in _OFF
    raw = _ENVIRON_BYTES.get(_SWITCH_BYTES)
    off = _parsed.get(raw)
    if off is None:
        off = raw is not None and os.fsdecode(raw).strip().lower() in _OFF
        if len(_parsed) < 64:
            _parsed[raw] = off
    return off


def _load() -> ctypes.CDLL | None:
    path = library_path()
    if path is None:
        return None
    try:
        return ctypes.CDLL(str(path))
    except OSError:  # a foreign build: use the twins
        return None


def kernels() -> ctypes.CDLL | None:
    """The compiled kernels, or ``None`` to run the Python twins (module doc)."""
    if switched_off():
        return None
    if not _loaded:
        _loaded.append(_load())
    return _loaded[0]


def address(array: Any) -> int:
    """The address of a C-contiguous array's first element, for a ``c_void_p`` argument: the
    same as ``array.ctypes.data``, without building numpy's ctypes view (about 0.25 µs against
    0.9 µs, and the kernels take a hundred pointers per workload). A read-only or empty array
    (which ``ctypes`` will not map) takes the slower way once: a read-only array's address is
    then kept while the array lives (``_read_only``), and looked up first."""
    known = _read_only.get(id(array))  # first: a refused buffer export costs more than this
    if known is not None and not array.flags.writeable and known[0]() is array:
        return known[1]
    try:
        return ctypes.addressof(_BYTE.from_buffer(array))
    except (TypeError, ValueError, BufferError):
        at = int(array.ctypes.data)
        if not array.flags.writeable:
            _keep_read_only(array, at)
        return at


_read_only: dict[int, tuple[weakref.ref[Any], int]] = {}
"""Addresses of read-only arrays by ``id``, each with a weak reference that tells whether the
entry still names the same live array (an ``id`` is reused once its array is freed). The
histories the engine reads are read-only, and their arrays go to several kernels each. A kept
address stays right: numpy never resizes an array that is weakly referenced (nor one that
cannot be written), and an entry counts only while its array is read-only."""


def _keep_read_only(array: Any, at: int) -> None:
    if len(_read_only) >= _READ_ONLY_KEPT:  # entries leave with their arrays: many live ones
        _read_only.clear()
    key = id(array)
    try:
        ref = weakref.ref(array, functools.partial(_forget, key))
    except TypeError:  # not weakly referable: nothing kept
        return
    _read_only[key] = (ref, at)


_READ_ONLY_KEPT = 4096


def _forget(key: int, _gone: object) -> None:
    """A kept array was freed: its entry goes, unless the ``id`` names a newer array already."""
    entry = _read_only.get(key)
    if entry is not None and entry[0]() is None:
        del _read_only[key]


_BYTE = ctypes.c_char
_functions: dict[str, tuple[Any, list[Any]]] = {}
"""Each kernel loaded so far, with the argument types it was declared with (a wrapper passes
the same list every time, so a second declaration is checked by identity first)."""


def kernel(name: str, restype: Any, argtypes: list[Any]) -> Any | None:
    """The compiled function ``name`` with its return and argument types (pointers as
    ``c_void_p``: callers pass ``address(ndarray)`` of contiguous arrays of the documented
    dtype), or ``None`` to run its Python twin (not built, switched off, or a stale build
    without it). Each wrapper module here declares its own kernels' types."""
    lib = kernels()
    if lib is None:
        return None
    known = _functions.get(name)
    if known is None:
        function = getattr(lib, name, None)
        if function is None:
            return None
        function.restype = restype
        function.argtypes = argtypes
        _functions[name] = (function, argtypes)
        return function
    function, declared = known
    if function.restype is not restype or (
        declared is not argtypes and list(function.argtypes) != list(argtypes)
    ):
        raise TypeError(f"kernel {name} declared with other types before")  # a caller's bug
    return function
