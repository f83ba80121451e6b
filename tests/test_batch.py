"""Batch mode: many events through the library, one scan and one index write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import CLI, edit_node, git, read_node

from narrative.delta.request import EventRequest
from narrative.engine.check import check
from narrative.engine.event import run_event
from narrative.model import Delta, SetOp
from narrative.store.batch import batch
from narrative.store.worldrepo import WorldRepo

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both


def mood(n: int, who: str = "lin-yuan") -> EventRequest:
    return EventRequest(content=f"beat {n}", delta=Delta(ops=[
        SetOp(op="set", target=who, field="/state/mood", value=f"m{n}")]))


def index_matches_head(wr: WorldRepo) -> bool:
    index = wr.repo.index
    index.read(force=True)
    head = wr.head_commit()
    assert head is not None
    return index.write_tree() == head.tree.id


def test_a_batch_records_every_event_and_leaves_git_clean(world: Path) -> None:
    edit_node(world, "old-zhou", mood="before the batch")
    wr = WorldRepo.open(world)
    try:
        with batch(wr):
            first = run_event(wr, mood(1))
            for n in range(2, 6):
                run_event(wr, mood(n, "su-qing" if n % 2 else "lin-yuan"))
        assert [e["field"] for e in first.to_json()["edits"]] == ["/state/mood"]
        assert index_matches_head(wr)
        assert check(wr).ok
    finally:
        wr.close()
    assert git(world, "status", "--porcelain") == ""
    assert read_node(world, "su-qing")["state"]["mood"] == "m5"
    assert len(CLI(world).json("log")["items"]) == 6


def test_hand_edits_made_during_a_batch_wait_for_the_next_event(world: Path) -> None:
    wr = WorldRepo.open(world)
    try:
        with batch(wr):
            run_event(wr, mood(1))
            edit_node(world, "old-zhou", mood="during the batch")
            second = run_event(wr, mood(2))
            assert second.record.edits == []  # not scanned inside the batch
        assert read_node(world, "old-zhou")["state"]["mood"] == "during the batch"
        after = run_event(wr, mood(3))
        assert [(e.target, e.new_value) for e in after.record.edits] == [
            ("old-zhou", "during the batch")]
        assert check(wr).ok and index_matches_head(wr)
    finally:
        wr.close()


def test_a_hand_edit_of_a_node_the_batch_changes_is_never_overwritten(world: Path) -> None:
    wr = WorldRepo.open(world)
    try:
        with batch(wr):
            run_event(wr, mood(1))
            edit_node(world, "lin-yuan", mood="mine")
            result = run_event(wr, mood(2))
            assert result.kept_paths  # the journal left the user's file alone
        assert read_node(world, "lin-yuan")["state"]["mood"] == "mine"
        after = run_event(wr, mood(3, "su-qing"))
        assert [(e.target, e.old_value, e.new_value) for e in after.record.edits] == [
            ("lin-yuan", "m2", "mine")]
        assert check(wr).ok
    finally:
        wr.close()


def test_a_batch_cut_short_leaves_a_stale_index_the_next_event_repairs(world: Path) -> None:
    wr = WorldRepo.open(world)
    try:
        with pytest.raises(RuntimeError), batch(wr):
            run_event(wr, mood(1))
            run_event(wr, mood(2))
            assert wr.batch is not None
            wr.batch.deferred_index.clear()  # what a kill -9 inside the batch loses
            raise RuntimeError("killed")
        assert not index_matches_head(wr)
        assert CLI(world).json("status")["edits"] == []  # stale index entries are not edits
        run_event(wr, mood(3))
        assert index_matches_head(wr)
        assert check(wr).ok
    finally:
        wr.close()
    assert git(world, "status", "--porcelain") == ""


def test_replay_runs_its_events_in_one_batch(world: Path) -> None:
    narr = CLI(world)
    for n in range(4):
        narr("event", f"E{n}", "--diffuser", "explicit", "--set", f"lin-yuan.state.step={n}")
    narr("reset", "HEAD~4")
    narr("event", "Meanwhile", "--diffuser", "explicit", "--set", "su-qing.state.mood=x")
    out = narr.json("replay", "1", "--reuse")
    assert [e["content"] for e in out["events"]] == ["E0", "E1", "E2", "E3"]
    assert git(world, "status", "--porcelain") == ""
    assert json.loads(narr("check", "--json").stdout)["ok"]
