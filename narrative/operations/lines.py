"""Rows of the story's lines: branches, switching between them, merging them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from narrative.operations import NoParams, Operation

if TYPE_CHECKING:
    from narrative.engine.branches import Branches
    from narrative.store import WorldRepo


def run_branches(wr: WorldRepo, p: NoParams) -> Branches:
    from narrative.engine.branches import list_branches

    return list_branches(wr)


E = "narrative.engine"
ROWS = (
    Operation("branches", "The story's branches and which one is current.",
              NoParams, run_branches, f"{E}.branches:Branches", "GET", "/api/branches", "branch"),
)
