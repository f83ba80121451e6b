"""A world a program keeps open follows git's settings as they change beside it.

libgit2 keeps each setting a repository handle has looked up (``core.autocrlf``...) for the
handle's lifetime. A world kept open by a notebook or an agent for many events must see a
``git config`` made meanwhile as a freshly opened world sees it: the same hand edits found,
files written with the line endings git now checks them out with.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import check_out_again, edit_node, git, node_file, write_node

import narrative as narr


def _edits(world: narr.WorldRepo) -> list[tuple[str, str]]:
    return [(e["target"], e["field"]) for e in narr.status(world).to_json()["edits"]]


def _follows(root: Path, change: Callable[[], None], *, watching: bool) -> None:
    with narr.open_world(root, watch=watching) as world:
        narr.event(world, "Lin Yuan sits", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                      value="calm"))
        assert _edits(world) == []  # the handle has looked its settings up
        change()
        check_out_again(root)
        assert b"\r\n" in node_file(root, "su-qing").read_bytes()
        edit_node(root, "black-ring", warmth="warm")
        with narr.open_world(root) as fresh:
            assert narr.status(world).to_json() == narr.status(fresh).to_json()
        assert _edits(world) == [("black-ring", "/state/warmth")]
        recorded = narr.event(world, "Su Qing grows wary", narr.SetOp(
            target="su-qing", field="/state/mood", value="wary"), diffuser="explicit")
        assert [e["target"] for e in recorded.to_json()["edits"]] == ["black-ring"]
        written = node_file(root, "su-qing").read_bytes()
        assert b'"wary"' in written and b"\r\n" in written  # as git checks it out
        assert git(root, "status", "--porcelain") == ""
        assert _edits(world) == []


@pytest.mark.parametrize("watching", [False, True], ids=["unwatched", "watched"])
def test_a_line_ending_setting_made_beside_an_open_world_is_the_one_it_writes_by(
        flat_world: Path, watching: bool) -> None:
    _follows(flat_world, lambda: git(flat_world, "config", "core.autocrlf", "true"),
             watching=watching)


def test_a_world_whose_settings_did_not_change_keeps_its_handle(flat_world: Path) -> None:
    """Following git's settings costs a few ``stat`` calls, not a new handle per command."""
    with narr.open_world(flat_world) as world:
        handle = world.repo
        for k in range(3):
            narr.event(world, f"Step {k}", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                      value=f"m{k}"))
            narr.status(world)
        assert world.repo is handle
        git(flat_world, "config", "user.name", "Someone Else")
        narr.status(world)
        assert world.repo is not handle


CUP = {"id": "jade-cup", "layer": "item", "name": "Jade cup", "kind": "cup",
       "lifecycle": "permanent", "aliases": [], "summary": "A cup.", "traits": {}, "state": {},
       "relations": {}}


@pytest.mark.parametrize("watching", [False, True], ids=["unwatched", "watched"])
def test_a_file_no_longer_ignored_by_git_s_settings_is_seen(flat_world: Path,
                                                            watching: bool) -> None:
    """A node file ignored through ``core.excludesFile``, then the setting taken away: the
    open world finds the new node as a fresh one does (a watcher that had found the file
    ignored must not answer from that memory)."""
    excludes = flat_world.parent / "excludes"
    excludes.write_text("jade-cup.json\n")
    git(flat_world, "config", "core.excludesFile", str(excludes))
    with narr.open_world(flat_world, watch=watching) as world:
        write_node(flat_world, "world/item/jade-cup.json", CUP)
        narr.event(world, "Lin Yuan sits", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                      value="calm"))
        assert _edits(world) == []  # ignored, as git ignores it
        git(flat_world, "config", "--unset", "core.excludesFile")
        with narr.open_world(flat_world) as fresh:
            assert narr.status(world).to_json() == narr.status(fresh).to_json()
        assert _edits(world) == [("jade-cup", "")]
        # (git status last: it may rewrite the index, and a full scan would follow for that alone)
        assert git(flat_world, "status", "--porcelain") == "?? world/item/jade-cup.json\n"
