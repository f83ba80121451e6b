"""What the studio draws: the world cut to the filters and the focus, and the story line with its chains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import edit_node, read_node

from narrative.api import event, reset, world_view
from narrative.engine.studio import event_view
from narrative.errors import InvalidInputError, NotFoundError
from narrative.store.worldrepo import WorldRepo


def _ids(rows: list[dict[str, object]]) -> list[object]:
    return [r["id"] for r in rows]


def test_filters_search_and_focus(flat_world: Path) -> None:
    wr = WorldRepo.open(flat_world)
    try:
        whole = world_view(wr).to_json()
        assert whole["total"] == whole["matched"] == len(whole["nodes"]) == 22
        assert sum(whole["facets"]["layer"].values()) == 22
        chars = world_view(wr, layers=["character"]).to_json()
        assert set(_ids(chars["nodes"])) == {"lin-yuan", "su-qing", "elder-mo", "lin-xue", "old-zhou"}
        assert {n["layer"] for n in chars["graph"]["nodes"]} == {"character"}
        scenes = world_view(wr, lifecycles=["scene"], kinds=["weather", "crowd"]).to_json()
        assert set(_ids(scenes["nodes"])) == {"autumn-rain", "ferry-crowd"}
        # By a Chinese alias, by an English alias in any case, by a piece of an id.
        assert _ids(world_view(wr, query="林远").to_json()["nodes"]) == ["lin-yuan"]
        assert "elder-mo" in _ids(world_view(wr, query="THE ELDER").to_json()["nodes"])
        assert _ids(world_view(wr, query="qingyun-g").to_json()["nodes"]) == ["qingyun-gate"]
        assert world_view(wr, query="no such name").to_json()["nodes"] == []
        # The focus's neighbourhood, whatever the filters; the relations between drawn nodes only.
        near = world_view(wr, around="lin-xue", depth=1, layers=["item"]).to_json()
        drawn = set(_ids(near["graph"]["nodes"]))
        assert "lin-xue" in drawn and "lin-yuan" in drawn
        assert all(e["source"] in drawn and e["target"] in drawn for e in near["graph"]["edges"])
        assert any(e == {"source": "lin-xue", "target": "lin-yuan", "type": "sibling-of",
                         "kind": "relation"} for e in near["graph"]["edges"])
        # where someone stands is an edge too: Lin Yuan and Old Zhou meet at the ferry's node
        ferry = world_view(wr, around="ferry", depth=1).to_json()
        assert {"source": "old-zhou", "target": "ferry", "type": "at", "kind": "reference",
                "field": "/state/location"} in ferry["graph"]["edges"]
        assert {"source": "black-ring", "target": "lin-yuan", "type": "held by",
                "kind": "reference", "field": "/state/holder"} in world_view(
                    wr, around="black-ring", depth=1).to_json()["graph"]["edges"]
        assert len(world_view(wr, around="lin-xue", depth=2).to_json()["graph"]["nodes"]) > len(drawn)
        assert _ids(world_view(wr, around="lin-xue", depth=0).to_json()["graph"]["nodes"]) == ["lin-xue"]
        # Limits: the list and the drawing are cut, the count is not.
        cut = world_view(wr, limit=3, draw=4).to_json()
        assert (len(cut["nodes"]), len(cut["graph"]["nodes"]), cut["matched"], cut["truncated"]) == (
            3, 4, 22, True)
        degrees = [n["degree"] for n in cut["graph"]["nodes"]]
        assert degrees == sorted(degrees, reverse=True) and degrees[0] == max(
            n["degree"] for n in whole["graph"]["nodes"])
        with pytest.raises(InvalidInputError, match="depth"):
            world_view(wr, depth=9)
        with pytest.raises(InvalidInputError, match="layer 'people'"):
            world_view(wr, layers=["people"])
        with pytest.raises(NotFoundError, match="nobody"):
            world_view(wr, around="nobody")
    finally:
        wr.close()


def test_hand_edits_the_past_and_the_story_line(flat_world: Path) -> None:
    wr = WorldRepo.open(flat_world)
    try:
        genesis = event_view(wr).to_json()["events"][0]["commit"]
        before = json.dumps(read_node(flat_world, "lin-yuan")["relations"])
        relations = {"knows": {"ring-origin": {}}, "sibling-of": {"lin-xue": {}}}
        edit_node(flat_world, "lin-yuan", name="Lin Yuan the Bold", relations=relations)
        now = world_view(wr, around="lin-yuan", depth=1).to_json()
        row = next(n for n in now["nodes"] if n["id"] == "lin-yuan")
        assert (row["name"], row["edited"]) == ("Lin Yuan the Bold", "modified")
        # The edited file's relations are drawn: the new one, and not those it dropped.
        mine = {(e["type"], e["target"]) for e in now["graph"]["edges"]
                if e["source"] == "lin-yuan" and e["kind"] == "relation"}
        assert mine == {("knows", "ring-origin"), ("sibling-of", "lin-xue")}
        edit_node(flat_world, "lin-yuan", relations=json.loads(before))
        event(wr, "Lin Yuan walks to the ferry")
        event(wr, "苏晴怀疑林远")
        story = event_view(wr).to_json()
        assert [e["content"] for e in story["events"]] == [
            "苏晴怀疑林远", "Lin Yuan walks to the ferry", "Genesis: The Black Ring of Qingyun"]
        assert [e["seq"] for e in story["events"]] == [2, 1, 0] and story["total"] == 3
        last = event_view(wr, limit=1).to_json()
        assert ([e["seq"] for e in last["events"]], last["edges"], last["total"]) == ([2], [], 3)
        commits = {e["commit"] for e in story["events"]}
        assert all(e["source"] in commits and e["target"] in commits for e in story["edges"])
        # As of the genesis: the name before the edit, nothing marked edited.
        then = world_view(wr, at=genesis, query="lin yuan").to_json()
        assert then["at"] == genesis
        assert [(n["name"], n["edited"]) for n in then["nodes"]] == [("Lin Yuan", None)]
        reset(wr, genesis)
        after = event_view(wr).to_json()
        assert len(after["events"]) == 1
        assert [c["length"] for c in after["chains"]] == [2]
        assert [b["name"] for b in after["branches"]] == ["main"]
    finally:
        wr.close()


def test_a_past_world_from_the_files_that_differ_equals_the_whole_world_read(flat_world: Path) -> None:
    """The time slider's world (HEAD's and the node files that differ) is the world at that
    commit read whole: nodes, names, aliases and every edge, through creations, renames, new
    relations, reference fields and a node ended while others still name it."""
    from helpers import CLI

    from narrative.engine.studio import _base

    narr = CLI(flat_world)
    narr("new", "character", "Wei Lan", "--alias", "魏兰", "--kind", "person")
    narr("event", "Wei Lan arrives", "--relate", "Wei Lan:knows:Old Zhou", "--diffuser", "explicit")
    edit_node(flat_world, "lin-xue", name="Lin Xue the Lost", aliases=["林雪", "Xue"])
    narr("event", "Lin Yuan walks to the ferry")
    narr("event", "Old Zhou is gone", "--expire", "old-zhou", "--diffuser", "explicit")
    narr("event", "Su Qing suspects Elder Mo", "--relate", "Su Qing:suspects:Elder Mo",
         "--set", "black-ring.state.holder=su-qing", "--diffuser", "explicit")
    wr = WorldRepo.open(flat_world)
    try:
        commits = [e["commit"] for e in event_view(wr).to_json()["events"]]
        assert len(commits) == 5
        for commit in commits[1:]:
            built, read = _base(wr, commit), _base(wr, commit, parse=True)
            assert built.nodes == read.nodes, commit
            assert built.edges == read.edges, commit
            assert {k: set(v) for k, v in built.names.items()} == {k: set(v) for k, v in read.names.items()}
            assert {k: v for k, v in built.aliases.items() if v} == {
                k: v for k, v in read.aliases.items() if v}
            assert built.neighbours == read.neighbours
            assert _view_from(wr, commit, built) == _view_from(wr, commit, read), commit
        at_start = world_view(wr, at=commits[-1], around="old-zhou", depth=1).to_json()
        assert "old-zhou" in {n["id"] for n in at_start["graph"]["nodes"]}
    finally:
        wr.close()


def _view_from(wr: WorldRepo, commit: str, base: object) -> dict[str, object]:
    """The overview and a focus's view of ``commit`` drawn from ``base`` (put where the cache keeps it)."""
    from narrative.engine import studio

    key = (str(wr.git_dir), commit, repr(sorted(wr.config.reference_labels.items())))
    studio._CACHE[key] = base  # type: ignore[assignment]
    try:
        return {"overview": world_view(wr, at=commit, draw=12).to_json(),
                "focus": world_view(wr, at=commit, around="lin-yuan", depth=2).to_json(),
                "search": world_view(wr, at=commit, query="lin", layers=["character"]).to_json()}
    finally:
        studio._CACHE.pop(key, None)


def test_hand_edits_drawn_over_head_equal_the_same_files_committed(flat_world: Path, tmp_path: Path) -> None:
    """The hand edits laid over HEAD's world (only the edited nodes touched) are the world their
    files make once committed: names, edges both ways, reference fields, a new node."""
    import shutil
    import subprocess

    from helpers import write_node

    from narrative.engine.studio import _base, _with_edits

    edit_node(flat_world, "lin-yuan", name="Lin Yuan the Bold", aliases=["林远", "Bold"],
              relations={"knows": {"wei-lan": {}}, "sibling-of": {"lin-xue": {}}})
    edit_node(flat_world, "black-ring", holder="su-qing")
    wei = {**read_node(flat_world, "old-zhou"), "id": "wei-lan", "name": "Wei Lan", "aliases": [],
           "relations": {"suspects": {"elder-mo": {}}}}
    wei["state"] = {**wei.get("state", {}), "location": "ferry"}
    write_node(flat_world, "world/character/wei-lan.json", wei)
    copy = tmp_path / "committed"
    shutil.copytree(flat_world, copy, symlinks=True)
    for args in (["add", "-A", "world"], ["commit", "-qm", "the edits"]):
        subprocess.run(["git", "-C", str(copy), *args], check=True, capture_output=True)
    wr, cwr = WorldRepo.open(flat_world), WorldRepo.open(copy)
    try:
        drawn = _with_edits(wr, _base(wr, None))
        whole = _base(cwr, cwr.head_commit().id, parse=True)  # type: ignore[union-attr]
        unmarked = {k: {f: v for f, v in n.items() if f != "edited"} for k, n in drawn.nodes.items()}
        assert unmarked == whole.nodes
        assert {n["edited"] for n in drawn.nodes.values() if "edited" in n} == {"modified", "new"}
        assert drawn.edges == whole.edges
        assert drawn.neighbours == whole.neighbours
        assert {k: set(v) for k, v in drawn.names.items()} == {k: set(v) for k, v in whole.names.items()}
        assert ("wei-lan", "suspects", "elder-mo") in drawn.edges
        assert ("black-ring", "/state/holder", "su-qing") in drawn.edges
    finally:
        wr.close()
        cwr.close()
