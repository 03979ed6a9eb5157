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
