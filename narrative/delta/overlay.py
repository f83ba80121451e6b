"""Laying recorded hand edits onto the world an event finds, as if the user had made them.

A replayed event brings its own hand edits along: they are applied in memory on
top of the working tree's real edits and recorded in the new event's ``edits``,
exactly like edits picked up from files; sealing the event then writes them out.
"""

from __future__ import annotations

import copy

from narrative import fields
from narrative.delta.world import World
from narrative.model import Change
from narrative.nodefile import NodeDict


def lay(world: World, changes: list[Change]) -> list[str]:
    """Apply ``changes`` over ``world``'s hand edits in place; problems (mismatched old values) or []."""
    current: dict[str, NodeDict | None] = {}
    for ch in changes:
        if ch.target not in current:
            node = world.get(ch.target)
            current[ch.target] = copy.deepcopy(node) if node is not None else None
    problems = fields.apply_changes(current, changes)
    if problems:
        return problems
    for node_id, new in current.items():
        world.lay(node_id, new)
    return []
