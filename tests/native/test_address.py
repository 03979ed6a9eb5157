"""``bot.native.address``: the pointer every wrapper passes to its kernel."""

from __future__ import annotations

import numpy as np
import pytest

from bot import native


def _read_only() -> np.ndarray:
    return np.frombuffer(b"\x00" * 64, dtype=np.float64)


def _view() -> np.ndarray:
    return np.arange(10.0)[3:]


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(20.0),
        lambda: np.zeros(3, dtype=np.int32),
        _read_only,
        _view,
        lambda: np.empty(0),
        lambda: np.arange(12.0).reshape(3, 4)[:, :2],  # not contiguous
    ],
    ids=["float64", "int32", "read-only", "view", "empty", "strided"],
)
def test_the_address_is_numpys_data_pointer(make):
    array = make()
    assert native.address(array) == array.ctypes.data


def test_the_address_leaves_the_array_free_to_resize():
    """No buffer export outlives the call (an exported array cannot be resized)."""
    array = np.arange(8.0)
    native.address(array)
    array.resize(16, refcheck=False)
    assert array.size == 16


def _frozen(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False
    return values


def test_a_read_only_arrays_address_is_kept_only_while_it_lives():
    array = _frozen(np.arange(6.0))
    assert native.address(array) == array.ctypes.data
    assert id(array) in native._read_only
    assert native.address(array) == array.ctypes.data  # from the entry
    key = id(array)
    del array
    assert key not in native._read_only


def test_an_id_reused_by_another_array_gets_that_arrays_address():
    seen: dict[int, int] = {}
    for _ in range(50):  # freed arrays' ids come back: each must give its own pointer
        array = _frozen(np.arange(float(len(seen) % 7 + 1)))
        assert native.address(array) == array.ctypes.data
        seen[id(array)] = seen.get(id(array), 0) + 1
    assert max(seen.values()) > 1  # the case was met


def test_a_kept_arrays_data_cannot_move():
    """numpy resizes no array that is weakly referenced: a kept address stays its address,
    even after the array is made writeable again."""
    array = _frozen(np.arange(4.0))
    native.address(array)
    array.flags.writeable = True
    with pytest.raises(ValueError, match="referenced"):
        array.resize(4096, refcheck=False)
    array[0] = 7.0
    assert native.address(array) == array.ctypes.data


@pytest.mark.parametrize(
    ("value", "off"),
    [
        (None, False),
        ("on", False),
        ("off", True),
        (" OFF ", True),
        ("0", True),
        ("no", True),
        ("false", True),
        ("1", False),
    ],
)
def test_the_switch_is_read_at_every_call(monkeypatch, value, off):
    if value is None:
        monkeypatch.delenv(native.SWITCH, raising=False)
    else:
        monkeypatch.setenv(native.SWITCH, value)
    assert native.switched_off() is off
    monkeypatch.setenv(native.SWITCH, "on" if off else "off")
    assert native.switched_off() is not off
