"""Property: no sequence of narr commands without ``--force`` (events, hand edits, reset, replay,
chains drop, edits drop and restore, switch, merge, branch delete) leaves an event held by no
ref but git's reflog. Stronger, as narr promises it: every event ever made stays in the history
of a story line or an abandoned chain, whatever set-aside edits come and go."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from narrative.delta.request import EventRequest
from narrative.engine.branches import create_branch, delete_branch, switch
from narrative.engine.event import run_event
from narrative.engine.init import init_world
from narrative.engine.merge import merge
from narrative.engine.replay import drop_chain, replay
from narrative.engine.reset import reset
from narrative.engine.setaside import drop_set_aside, restore
from narrative.errors import NarrError
from narrative.ids import node_path
from narrative.model import Delta, SetOp
from narrative.store import records
from narrative.store.worldrepo import WorldRepo

pytestmark = [pytest.mark.slow]

NODES = {"lin-yuan": "character", "su-qing": "character", "black-ring": "item"}
BRANCHES = ["main", "alt"]

step = st.one_of(
    st.tuples(st.just("event"), st.sampled_from(sorted(NODES)), st.sampled_from(["a", "b", "c"])),
    st.tuples(st.just("event"), st.sampled_from(sorted(NODES)), st.sampled_from(["a", "b", "c"])),
    st.tuples(st.just("edit"), st.sampled_from(sorted(NODES)), st.sampled_from(["x", "y"])),
    st.tuples(st.just("reset"), st.integers(1, 3), st.sampled_from(["", "keep", "hard"])),
    st.tuples(st.just("replay"), st.integers(1, 3), st.booleans(), st.booleans()),
    st.tuples(st.just("chains-drop"), st.integers(1, 3)),
    st.tuples(st.just("edits-drop"), st.integers(1, 3)),
    st.tuples(st.just("edits-restore"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("switch"), st.sampled_from(BRANCHES), st.booleans()),
    st.tuples(st.just("merge"), st.sampled_from(BRANCHES)),
    st.tuples(st.just("branch-delete"), st.sampled_from(BRANCHES)),
)


@contextmanager
def new_world() -> Iterator[WorldRepo]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "w"
        init_world(root, sample=True)
        wr = WorldRepo.open(root)
        try:
            yield wr
        finally:
            wr.close()


def _edit(wr: WorldRepo, node_id: str, value: str) -> None:
    path = wr.root / node_path(node_id, NODES[node_id], wr.config.layout)  # type: ignore[arg-type]
    if not path.is_file():
        return
    node = json.loads(path.read_text("utf-8"))
    node["state"]["note"] = value
    path.write_text(json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n", "utf-8")


def apply(wr: WorldRepo, n: int, s: tuple[Any, ...]) -> None:
    kind = s[0]
    with suppress(NarrError):
        if kind == "event":
            run_event(wr, EventRequest(content=f"step {n}", delta=Delta(ops=[
                SetOp(op="set", target=s[1], field="/state/mood", value=f"{s[2]}{n}")])))
        elif kind == "edit":
            _edit(wr, s[1], f"{s[2]}{n}")
        elif kind == "reset":
            reset(wr, f"HEAD~{s[1]}", keep_edits=s[2] == "keep", hard=s[2] == "hard")
        elif kind == "replay":
            replay(wr, str(s[1]), reuse=s[2], diffuser_name=None if s[2] else "explicit", again=s[3])
        elif kind == "chains-drop":
            drop_chain(wr, str(s[1]))
        elif kind == "edits-drop":
            drop_set_aside(wr, str(s[1]))
        elif kind == "edits-restore":
            restore(wr, str(s[1]), force=s[2])
        elif kind == "switch":
            if s[2] and s[1] not in wr.repo.branches.local:
                create_branch(wr, s[1])
            switch(wr, s[1], set_aside=True)
        elif kind == "merge":
            merge(wr, s[1])
        elif kind == "branch-delete":
            delete_branch(wr, s[1])


def _events_from(repo: pygit2.Repository, tips: set[pygit2.Oid]) -> set[str]:
    if not tips:
        return set()
    walker = repo.walk(None, pygit2.enums.SortMode.NONE)
    for tip in tips:
        walker.push(tip)
    out = set()
    for commit in walker:
        rec = records.decode_checked(commit.message)
        if rec is not None and rec.get("kind", "event") == "event":
            out.add(str(commit.id))
    return out


def _tip(repo: pygit2.Repository, name: str) -> pygit2.Oid | None:
    with suppress(KeyError, ValueError, pygit2.GitError):
        return repo.references[name].peel(pygit2.Commit).id
    return None


def every_event_seen(wr: WorldRepo) -> set[str]:
    """The events any ref, or any reflog entry, reaches."""
    repo = wr.repo
    tips: set[pygit2.Oid] = set()
    for name in [*repo.references, "HEAD"]:
        if (tip := _tip(repo, name)) is not None:
            tips.add(tip)
        with suppress(KeyError, pygit2.GitError):
            for entry in repo.references[name].log():
                for oid in (entry.oid_new, entry.oid_old):
                    if isinstance(repo.get(oid), pygit2.Commit):
                        tips.add(oid)
    return _events_from(repo, tips)


def kept_events(wr: WorldRepo) -> set[str]:
    """The events the story lines and the abandoned chains hold."""
    repo = wr.repo
    tips = {tip for name in repo.references if name.startswith(("refs/heads/", "refs/narr/abandoned/"))
            and (tip := _tip(repo, name)) is not None}
    return _events_from(repo, tips)


@given(st.lists(step, min_size=2, max_size=14))
@example([("event", "lin-yuan", "a"), ("event", "lin-yuan", "b"), ("edit", "su-qing", "x"),
          ("reset", 2, ""), ("chains-drop", 1), ("edits-drop", 1)])  # set-aside edits held the chain
@example([("event", "lin-yuan", "a"), ("switch", "alt", True), ("event", "su-qing", "b"),
          ("edit", "lin-yuan", "y"), ("switch", "main", False), ("branch-delete", "alt"),
          ("chains-drop", 1), ("edits-drop", 1)])  # a deleted story line's chain
@settings(max_examples=120)
def test_no_event_is_left_to_the_reflog(plan: list[tuple[Any, ...]]) -> None:
    with new_world() as wr:
        seen: set[str] = set()
        for n, s in enumerate(plan):
            apply(wr, n, s)
            seen |= every_event_seen(wr)
            missing = seen - kept_events(wr)
            assert not missing, (n, s, sorted(missing))
