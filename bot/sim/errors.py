"""Simulator errors.

Hierarchy::

    SimError        an impossible ClusterSpec, or an output that cannot be written
"""

from __future__ import annotations


class SimError(Exception):
    """The simulator was asked for something it cannot produce; the message says what."""
