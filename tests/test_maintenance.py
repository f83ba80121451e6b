"""Packing: narr gc, and git gc --auto started in the background when loose objects pile up."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers import CLI, git, snapshot

from narrative.store import maintenance
from narrative.store.worldrepo import WorldRepo

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both


def loose(world: Path) -> int:
    objects = world / ".git" / "objects"
    return sum(len(list(d.iterdir())) for d in objects.iterdir()
               if len(d.name) == 2 and d.name != "pa")


def test_narr_gc_packs_and_keeps_everything_narr_keeps(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--diffuser", "explicit", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--diffuser", "explicit", "--set", "lin-yuan.state.mood=b")
    narr("reset", "HEAD~1")  # an abandoned chain under refs/narr/abandoned
    abandoned = narr.json("chains")["items"][0]["tip"]
    assert loose(world) > 0
    before = snapshot(world)
    out = narr.json("gc")
    # what stays loose is only what nothing references (git keeps it two weeks)
    assert out["loose_before"] > 10 * max(out["loose_after"], 1)
    git(world, "cat-file", "-e", abandoned)
    assert narr("check").exit_code == 0
    after = snapshot(world)
    assert {k: v for k, v in after.items() if not k.startswith(".git/")} == {
        k: v for k, v in before.items() if not k.startswith(".git/")}


def test_auto_gc_runs_git_gc_auto_only_past_the_threshold(world: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    wr = WorldRepo.open(world)
    try:
        monkeypatch.setattr(maintenance, "AUTO_LOOSE", 10**9)
        assert maintenance.auto_gc(wr) is False  # below the threshold: not even a process
        monkeypatch.setattr(maintenance, "AUTO_LOOSE", 0)
        monkeypatch.setenv("NARR_AUTO_GC", "0")
        assert maintenance.auto_gc(wr) is False  # turned off
        monkeypatch.delenv("NARR_AUTO_GC")
        started = time.monotonic()
        assert maintenance.auto_gc(wr) is True  # git decides, and packs in the background
        assert time.monotonic() - started < 10
    finally:
        wr.close()
    assert CLI(world)("check").exit_code == 0
