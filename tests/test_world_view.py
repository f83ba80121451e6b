"""The world as a view reads it: many nodes at once answer as one at a time does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import CLI, edit_node, node_file

from narrative.ids import node_path
from narrative.store import worktree
from narrative.store.view import WorldView
from narrative.store.worldrepo import WorldRepo

pytestmark = pytest.mark.both_layouts


def test_many_nodes_at_once_are_what_each_alone_is(world: Path, narr: CLI) -> None:
    """Committed nodes, hand-edited ones, one deleted by hand, one made by hand, unknown ids
    and ids no node may have: ``get_many`` gives each what ``get`` gives, and nothing for the
    rest."""
    narr("event", "Lin Yuan rests", "--set", "lin-yuan.state.mood=calm")
    edit_node(world, "su-qing", mood="wary")
    node_file(world, "black-ring").unlink()
    made = json.loads(node_file(world, "su-qing").read_text(encoding="utf-8"))
    made.update(id="old-heng", name="Old Heng", aliases=[], relations={})
    with WorldRepo.open(world) as opened:
        target = world / node_path("old-heng", "character", opened.config.layout)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(made, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    wr = WorldRepo.open(world)
    try:
        head = wr.head_commit()
        assert head is not None
        scan = worktree.scan_for_reader(wr, head.tree)
        ids = [*(row.id for row in wr.catalog.ids()),
               "old-heng", "black-ring", "no-such-node", "../x", "", "su-qing"]
        one_by_one = WorldView(wr, head.tree, scan)
        expected = {i: n for i in ids if (n := one_by_one.get(i)) is not None}
        at_once = WorldView(wr, head.tree, scan).get_many(ids)
        assert at_once == expected
        assert list(at_once) == list(expected)  # in the order asked, each once
        assert at_once["su-qing"]["state"]["mood"] == "wary"
        assert "black-ring" not in at_once and "old-heng" in at_once
        assert set(at_once) == set(ids) - {"black-ring", "no-such-node", "../x", ""}
    finally:
        wr.close()
