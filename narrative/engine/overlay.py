"""Laying recorded hand edits onto the world an event finds, as if the user had made them.

A replayed event brings its own hand edits along: they are applied in memory on
top of the working tree's real edits and recorded in the new event's ``edits``,
exactly like edits picked up from files; ``seal`` then writes them out.
"""

from __future__ import annotations

import copy

from narrative import fields
from narrative.model import Change
from narrative.nodefile import NodeDict, dump
from narrative.store.worktree import HandEdit
from narrative.world import WorldView


def lay(view: WorldView, changes: list[Change]) -> list[str]:
    """Apply ``changes`` to ``view.edits`` in place; problems (mismatched old values) or []."""
    current: dict[str, NodeDict | None] = {}
    for ch in changes:
        if ch.target not in current:
            node = view.get(ch.target)
            current[ch.target] = copy.deepcopy(node) if node is not None else None
    problems = fields.apply_changes(current, changes)
    if problems:
        return problems
    for node_id, new in current.items():
        edit = view.edits.edits.get(node_id)
        committed = view.committed(node_id)
        head_path = committed[0] if committed else None
        old = committed[1] if committed else None
        new_path = view.path(new) if new is not None else None
        # What the working tree holds is tracked by view.edits.raw; raw_oid only says
        # whether the file's bytes differ from the canonical form.
        raw = edit.raw_oid if edit is not None else None
        view.edits.edits[node_id] = HandEdit(
            node_id, old, new, head_path, new_path, raw,
            dump(new) if new is not None else None,
        )
    return []
