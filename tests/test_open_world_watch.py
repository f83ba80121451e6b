"""A world a long-lived program keeps open with ``watch=True``: the server's file watcher in
the program's own process, so each event examines only what changed since the last one,
and finds every hand edit, file made or removed, and plain git command all the same."""

from __future__ import annotations

import threading
from pathlib import Path

from conftest import copy_world
from helpers import edit_node, git, node_file, write_node

import narrative as narr
from narrative.store import watch

CUP = {"id": "jade-cup", "layer": "item", "name": "Jade cup", "kind": "cup",
       "lifecycle": "permanent", "aliases": [], "summary": "A cup.", "traits": {}, "state": {},
       "relations": {}}


def _watching() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "narr-watch"]


def test_an_open_world_that_watches_finds_every_change_with_hinted_scans(flat_world: Path) -> None:
    with narr.open_world(flat_world, watch=True) as world:
        watcher = watch.for_git_dir(world.git_dir)
        assert watcher is not None and len(_watching()) == 1
        narr.event(world, "Lin Yuan waits", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                       value="patient"))
        edit_node(flat_world, "su-qing", mood="wary")  # by hand, between two events
        second = narr.event(world, "Su Qing watches")
        assert [(e["target"], e["field"]) for e in second.to_json()["edits"]] == [
            ("su-qing", "/state/mood")]
        write_node(flat_world, "world/item/jade-cup.json", CUP)  # made by hand
        narr.event(world, "A cup appears")
        node_file(flat_world, "jade-cup").unlink()  # and removed by hand
        third = narr.event(world, "The cup is gone")
        assert [(e["target"], e["field"]) for e in third.to_json()["edits"]] == [("jade-cup", "")]
        edit_node(flat_world, "lin-yuan", mood="restless")
        git(flat_world, "add", "-A")  # plain git beside the program: its index is not narr's
        fourth = narr.event(world, "Lin Yuan paces")
        assert [(e["target"], e["field"]) for e in fourth.to_json()["edits"]] == [
            ("lin-yuan", "/state/mood")]
        stats = watcher.describe()
        assert stats["hinted_scans"] >= 2 and stats["full_scans"] >= 1, stats
        assert narr.status(world).to_json()["edits"] == []
    assert watch.for_git_dir(flat_world / ".git") is None  # closed: the watcher stopped
    assert _watching() == []
    assert narr.check(narr.open_world(flat_world)).ok


def test_open_worlds_of_one_world_share_its_watcher(flat_world: Path) -> None:
    first = narr.open_world(flat_world, watch=True)
    second = narr.open_world(flat_world, watch=True)
    try:
        assert watch.for_git_dir(first.git_dir) is not None and len(_watching()) == 1
        first.close()
        assert watch.for_git_dir(second.git_dir) is not None  # the other still keeps it
        narr.event(second, "Lin Yuan waits", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                        value="patient"))
    finally:
        first.close()
        second.close()
    assert _watching() == []


def test_without_watch_nothing_is_watched(flat_world: Path) -> None:
    with narr.open_world(flat_world) as world:
        assert watch.for_git_dir(world.git_dir) is None
        narr.event(world, "Lin Yuan waits", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                       value="patient"))
    assert _watching() == []


def test_the_same_story_either_way(tmp_path: Path, sample_worlds: dict[str, Path]) -> None:
    """Events and hand edits in a row: the records are the same with the watcher as without."""
    stories = []
    for watching in (False, True):
        root = copy_world(sample_worlds["flat"], tmp_path / f"world-{watching}")
        with narr.open_world(root, watch=watching) as world:
            for i in range(4):
                edit_node(root, "black-ring", warmth=f"warmth {i}")
                if i == 1:
                    write_node(root, "world/item/jade-cup.json", CUP)
                if i == 2:
                    node_file(root, "jade-cup").unlink()
                narr.event(world, f"Round {i}", narr.SetOp(target="lin-yuan",
                                                           field="/state/mood", value=f"m{i}"))
            stories.append([(e["content"], e["edits"], e["diffusions"])
                            for e in (x.to_json() for x in narr.log(world, limit=4))])
    assert stories[0] == stories[1]
