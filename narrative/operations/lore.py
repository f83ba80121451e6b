"""Rows of lore."""

from __future__ import annotations

from typing import Any

from narrative.operations import Operation

ROWS: tuple[Operation[Any], ...] = ()
