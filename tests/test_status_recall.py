"""``narr status`` asked again and again under a file watcher (a server's, or a world kept open
with ``watch=True``): while the watcher has seen nothing happen, the last scan is the answer;
after anything (a rewrite of the same size in the same instant, a file made, removed or
ignored, plain git beside it), the answer is what a fresh scan finds."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from conftest import copy_world
from helpers import git, node_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import narrative as narr
from narrative.store import watch

NODES = ["lin-yuan", "su-qing", "black-ring", "temple-bell"]


def _status(world: Any) -> dict[str, Any]:
    answer = narr.status(world).to_json()
    return {key: answer[key] for key in ("edits", "problems", "outside_world", "reformat")}


def _fresh(root: Path) -> dict[str, Any]:
    """What a whole scan finds (the watcher of this process hidden meanwhile)."""
    with mock.patch.object(watch, "for_git_dir", lambda git_dir: None), \
            narr.open_world(root) as world:
        return _status(world)


def _scans(root: Path) -> int:
    watcher = watch.for_git_dir((root / ".git").resolve())
    assert watcher is not None
    stats = watcher.describe()
    return int(stats["hinted_scans"]) + int(stats["full_scans"])


def _rewrite(path: Path, value: str) -> None:
    node = json.loads(path.read_text("utf-8"))
    node["state"]["note"] = value
    path.write_text(json.dumps(node, indent=2, ensure_ascii=False) + "\n", "utf-8")


def test_the_same_hand_edits_asked_about_again_are_scanned_once(flat_world: Path) -> None:
    for node_id in NODES[:3]:
        _rewrite(node_file(flat_world, node_id), "changed by hand")
    with narr.open_world(flat_world, watch=True) as world:
        first = _status(world)  # the first scan walks everything; the next is narrowed
        assert _status(world) == first
        scans = _scans(flat_world)
        for _ in range(10):
            assert _status(world) == first
        assert _scans(flat_world) == scans
        assert len(first["edits"]) == 3


def test_a_rewrite_of_the_same_size_right_after_a_status_is_seen(flat_world: Path) -> None:
    path = node_file(flat_world, "lin-yuan")
    with narr.open_world(flat_world, watch=True) as world:
        for value in ("aaaa", "bbbb", "cccc", "dddd"):  # same size, in one clock tick or two
            _rewrite(path, value)
            _status(world)
            said = _status(world)
            assert [e["new_value"] for e in said["edits"]] == [value], said


@pytest.mark.parametrize("where", ["info/exclude", "core.excludesFile"])
def test_an_ignore_rule_written_where_no_watcher_looks_is_seen(flat_world: Path, tmp_path: Path,
                                                                where: str) -> None:
    stray = flat_world / "world" / "item" / "notes.txt"
    stray.write_text("a note\n", "utf-8")
    rules = flat_world / ".git" / "info" / "exclude"
    if where == "core.excludesFile":
        rules = tmp_path / "dotfiles" / "ignore"
        rules.parent.mkdir()
        rules.write_text("", "utf-8")
        (tmp_path / "ignore-link").symlink_to(rules)
        git(flat_world, "config", "core.excludesFile", str(tmp_path / "ignore-link"))
    with narr.open_world(flat_world, watch=True) as world:
        _status(world)
        before = _status(world)
        assert before["problems"], before  # a file that is no node
        rules.parent.mkdir(exist_ok=True)
        with open(rules, "a", encoding="utf-8") as fh:
            fh.write("notes.txt\n")
        assert _status(world) == _fresh(flat_world)
        assert not _status(world)["problems"]


OPS = st.lists(st.one_of(
    st.tuples(st.just("edit"), st.sampled_from(NODES), st.sampled_from(["x", "y", "xy", "z"])),
    st.tuples(st.just("bad"), st.sampled_from(["zz-bad", "zz-other"]), st.just("")),
    st.tuples(st.just("remove"), st.sampled_from(["zz-bad", "zz-other"]), st.just("")),
    st.tuples(st.just("delete"), st.sampled_from(NODES), st.just("")),
    st.tuples(st.just("git"), st.sampled_from(["add -A", "reset -q", "checkout -- world",
                                               "commit -qam by-git"]), st.just("")),
    st.tuples(st.just("event"), st.just(""), st.just("")),
), min_size=1, max_size=8)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS)
def test_a_watched_status_says_what_a_fresh_scan_says(tmp_path_factory: Any,
                                                      sample_worlds: dict[str, Path],
                                                      ops: list[tuple[str, str, str]]) -> None:
    root = copy_world(sample_worlds["flat"], tmp_path_factory.mktemp("recall") / "world")
    paths = {node_id: node_file(root, node_id) for node_id in NODES}
    with narr.open_world(root, watch=True) as world:
        for step, (op, name, value) in enumerate(ops):
            _status(world)  # (a whole scan where git's index changed)
            _status(world)  # a scan the watcher narrowed, kept: the next status may recall it
            if op == "edit" and paths[name].exists():
                _rewrite(paths[name], f"{value}{step % 10}")
            elif op == "bad":
                (root / "world" / "item" / f"{name}.json").write_text("{bad", "utf-8")
            elif op == "remove":
                (root / "world" / "item" / f"{name}.json").unlink(missing_ok=True)
            elif op == "delete":
                paths[name].unlink(missing_ok=True)
            elif op == "git":
                with contextlib.suppress(subprocess.CalledProcessError):  # nothing to commit
                    git(root, *name.split())
            elif op == "event":
                with contextlib.suppress(narr.NarrError):  # a bad file refuses it
                    narr.event(world, "Time passes")
            watched = _status(world)
            assert watched == _status(world)  # the second, recalled
            assert watched == _fresh(root), (op, name, value)


def test_a_fifo_named_like_a_node_file_is_what_a_whole_scan_says(flat_world: Path) -> None:
    """git does not see a FIFO; a scan the watcher narrows does not either (narr check names it)."""
    with narr.open_world(flat_world, watch=True) as world:
        _status(world)
        _status(world)
        os.mkfifo(flat_world / "world" / "item" / "lamp.json")
        assert _status(world) == _fresh(flat_world)
        assert not _status(world)["problems"]
        event = narr.event(world, "Time passes")  # and the event goes on as without a watcher
        assert event.to_json()["commit"]
