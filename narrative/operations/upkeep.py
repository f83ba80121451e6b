"""Rows of upkeep."""

from __future__ import annotations

from narrative.operations import Operation

ROWS: tuple[Operation, ...] = ()
