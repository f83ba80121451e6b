"""A chapter is recorded whole or not at all: killed at every step of its recording, the world
and its history are as before (the draft kept for ``narr chapter --retry``) or hold all of it,
never part; no hand edit is lost either way.

The sweep is the kill sweep of one event (``test_safety.py``) run over the sealing of a
chapter's chain of commits: a forked child records the chapter and SIGKILLs itself at one line
of the commit, the journal or the catalog, at its first run and half way through its runs."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pygit2
import pytest
from helpers import CLI, git, narr_subprocess
from kills import Where, crash_seed, kill_at_line, line_points
from test_safety import (
    Before,
    before_event,
    change_keys,
    git_locks,
    make_hand_edits,
    tree_world_files,
    world_files,
)

from narrative.store import journal
from narrative.store.worldrepo import WorldRepo

CHAPTER = """\
# Chapter {i}

Lin Yuan walks to the ferry. Su Qing walks to the ferry.

* * *

Old Zhou lifts the paper lantern.
"""


def record(root: Path, i: int) -> None:
    """Chapter ``i``, with two changes added by hand that are new every time."""
    import narrative as narr
    from narrative.model import SetOp

    added = [narr.AddedChange(1, SetOp(target="lin-yuan", field="/state/mood", value=f"m{i}")),
             narr.AddedChange(3, SetOp(target="su-qing", field="/state/mood", value=f"m{i}"))]
    with narr.open_world(root) as world:
        narr.record_chapter(world, CHAPTER.format(i=i), accept="all", added=added, number=i)


def kill_chapter_at_line(root: Path, i: int, stop_at: Where | None) -> tuple[int, list[str]]:
    """Record chapter ``i`` in a forked child that SIGKILLs itself at ``stop_at``."""
    from narrative.store import commit
    from narrative.store.catalog import chapters, connection, events, nodes

    files = {commit.__file__, journal.__file__, connection.__file__, nodes.__file__,
             events.__file__, chapters.__file__}
    return kill_at_line(lambda: record(root, i), files, stop_at, start="seal_chain")


def verify(root: Path, before: Before, i: int) -> str:
    """The old story (and the chapter kept for a retry) or the whole chapter on top of it."""
    from narrative.engine.check import check
    from narrative.engine.status import status
    from narrative.store import records

    wr = WorldRepo.open(root)
    try:
        st = status(wr).to_json()
        report = check(wr)
        assert report.ok, [str(p) for p in report.problems] + report.worktree_problems
    finally:
        wr.close()
    assert not (root / ".git" / "narr" / journal.JOURNAL).exists()
    assert git_locks(root) == [] and st["problems"] == []
    repo = pygit2.Repository(str(root))
    try:
        head = repo.head.peel(pygit2.Commit)
        assert len(repo.index.diff_to_tree(head.tree)) == 0
        if str(head.id) == before.head:
            assert world_files(root) == before.world_files  # nothing half-written, no edit lost
            assert change_keys(st["edits"]) == before.edit_keys
            assert (root / ".git/narr/chapters/pending.json").exists()
            return "old"
        chain = []
        commit = head
        while True:  # the events, back to the chapter's own commit
            rec = records.decode(commit.message)
            assert rec is not None and rec.kind in ("event", "chapter")
            chain.append(commit)
            commit = commit.parents[0]
            if rec.kind == "chapter":
                break
        assert str(commit.id) == before.head  # the chapter and its events, nothing else
        assert len(chain) >= 3
        opening = records.decode(chain[-1].message)
        assert opening is not None and opening.chapter is not None and opening.chapter.number == i
        assert change_keys([c.model_dump(mode="json") for c in opening.edits]) == before.edit_keys
        assert st["edits"] == []
        assert world_files(root) == tree_world_files(repo, head.tree)
        return "new"
    finally:
        repo.free()


@pytest.mark.slow
def test_sigkill_at_every_step_of_recording_a_chapter(flat_world: Path) -> None:
    root = flat_world
    make_hand_edits(root, 0)
    status, lines = kill_chapter_at_line(root, 1, None)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and len(lines) > 20
    points = line_points(lines)
    rng = random.Random(crash_seed())
    # every line of the journal at its first run (the commit point and the working tree), a
    # sample of the chain's sealing and of the catalog
    journal_points = [p for p in points if p[0].startswith("journal.py:") and p[1] == 1]
    others = [p for p in points if p not in journal_points]
    points = journal_points + rng.sample(others, min(12, len(others)))
    outcomes = {"old": 0, "new": 0}
    recorded = [1]
    narr = CLI(root)
    for k, stop_at in enumerate(points, 2):
        make_hand_edits(root, k)
        before = before_event(root)
        status, _ = kill_chapter_at_line(root, k, stop_at)
        assert os.WIFSIGNALED(status) or os.WEXITSTATUS(status) == 0, stop_at
        side = verify(root, before, k)
        outcomes[side] += 1
        if side == "new":
            recorded.append(k)
        elif outcomes["old"] <= 2:  # the kept chapter is recorded by a retry, once
            out = narr.json("chapter", "--retry")
            assert out["chapter"]["number"] == k and len(out["events"]) >= 2
            assert not (root / ".git/narr/chapters/pending.json").exists()
            recorded.append(k)
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
    assert narr.json("check")["ok"] is True
    git(root, "fsck", "--strict")
    proc = narr_subprocess(root, "log", "--chapters", "--json")
    listed: list[dict[str, Any]] = json.loads(proc.stdout)["items"]
    assert sorted(c["number"] for c in listed) == recorded


def test_a_crash_after_the_story_moved_is_finished_and_not_told_twice(flat_world: Path) -> None:
    """Crashed once the ref moved, before the files: the next command brings the files along,
    and a retry finds the chapter recorded (by its key) rather than recording it twice."""
    from test_safety import Crash, _raise

    root = flat_world
    make_hand_edits(root, 1)
    before = before_event(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(journal, "_apply", _raise)
        with pytest.raises(Crash):
            record(root, 1)
    assert (root / ".git/narr/journal.json").exists()
    narr = CLI(root)
    result = narr("status")
    assert "finished an interrupted narr command (narr chapter: Chapter 1)" in result.stderr
    assert verify(root, before, 1) == "new"
    out = narr.json("chapter", "--retry")
    assert out["already"] is True and out["chapter"]["number"] == 1
    assert narr.json("show", "chapter:1")["parent"] == narr.json("show", before.head)["id"]
    assert not (root / ".git/narr/chapters/pending.json").exists()
