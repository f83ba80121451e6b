"""Property tests for time travel: random events, hand edits, resets, replays and reverts.

After every step: ``narr check`` passes, the git index equals HEAD's tree, and every
hand edit ever made is in the world, in an event record or in the set-aside edits.
Separately: reset is path-independent, and reset + ``replay --reuse`` gives the
same world back.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from narrative import fields
from narrative.delta.request import EventRequest
from narrative.engine.check import check
from narrative.engine.event import run_event
from narrative.engine.init import init_world
from narrative.engine.replay import replay
from narrative.engine.reset import reset
from narrative.engine.revert import revert
from narrative.errors import NarrError
from narrative.ids import node_path
from narrative.model import Delta, RelateOp, SetOp, UnrelateOp, UnsetOp
from narrative.store import records, refs
from narrative.store.worldrepo import WorldRepo

pytestmark = [pytest.mark.slow, pytest.mark.both_layouts]  # property tests with many examples

NODES = ["lin-yuan", "su-qing", "old-zhou", "black-ring", "jade-token"]
LAYER = {"lin-yuan": "character", "su-qing": "character", "old-zhou": "character",
         "black-ring": "item", "jade-token": "item"}
FIELDS = ["mood", "goal", "note"]
VALUES = ["a", "b", "c", "d"]

event_step = st.tuples(
    st.just("event"),
    st.lists(st.tuples(st.sampled_from(["set", "unset", "relate", "unrelate"]),
                       st.sampled_from(NODES), st.sampled_from(FIELDS), st.sampled_from(VALUES),
                       st.sampled_from(NODES)), min_size=0, max_size=3),
)
edit_step = st.tuples(st.just("edit"), st.sampled_from(NODES), st.sampled_from(FIELDS),
                      st.sampled_from(["x", "y", "z"]))
reset_step = st.tuples(st.just("reset"), st.integers(1, 3), st.sampled_from(["", "keep", "hard"]))
replay_step = st.tuples(st.just("replay"))
revert_step = st.tuples(st.just("revert"), st.integers(0, 2))
steps = st.lists(st.one_of(event_step, event_step, edit_step, reset_step, replay_step, revert_step),
                 min_size=1, max_size=12)


@contextmanager
def new_world(layout: str) -> Iterator[tuple[Path, WorldRepo]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "w"
        init_world(root, sample=True, layout=layout)  # type: ignore[arg-type]
        wr = WorldRepo.open(root)
        try:
            yield root, wr
        finally:
            wr.close()


def path_of(wr: WorldRepo, node_id: str) -> Path:
    return wr.root / node_path(node_id, LAYER[node_id], wr.config.layout)  # type: ignore[arg-type]


def do_event(wr: WorldRepo, n: int, ops: list[tuple[str, str, str, str, str]]) -> None:
    delta_ops: list[Any] = []
    for kind, node, field, value, other in ops:
        if kind == "set":
            delta_ops.append(SetOp(op="set", target=node, field=f"/state/{field}", value=value))
        elif kind == "unset":
            delta_ops.append(UnsetOp(op="unset", target=node, field=f"/state/{field}"))
        elif kind == "relate":
            delta_ops.append(RelateOp(op="relate", source=node, type=field, target=other))
        else:
            delta_ops.append(UnrelateOp(op="unrelate", source=node, type=field, target=other))
    with suppress(NarrError):
        run_event(wr, EventRequest(content=f"step {n}", delta=Delta(ops=delta_ops)))


def do_edit(wr: WorldRepo, node_id: str, field: str, value: str) -> tuple[str, str, str] | None:
    path = path_of(wr, node_id)
    if not path.is_file():
        return None
    node = json.loads(path.read_text("utf-8"))
    node["state"][field] = value
    path.write_text(json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n", "utf-8")
    return node_id, f"/state/{field}", value


def apply_step(wr: WorldRepo, n: int, step: tuple[Any, ...], ledger: list[tuple[str, str, str]]) -> None:
    kind = step[0]
    if kind == "event":
        do_event(wr, n, step[1])
    elif kind == "edit":
        made = do_edit(wr, step[1], step[2], f"{step[3]}{n}")
        if made:
            # The user overwriting their own uncommitted edit supersedes it: only edits
            # already kept elsewhere (a record, a set-aside) stay in the ledger.
            commits = all_commits(wr)
            ledger[:] = [e for e in ledger if e[:2] != made[:2]
                         or edit_is_kept(wr, commits, e, in_world=False)]
            ledger.append(made)
    elif kind == "reset":
        _, k, mode = step
        with suppress(NarrError):
            reset(wr, f"HEAD~{k}", keep_edits=mode == "keep", hard=mode == "hard")
    elif kind == "replay":
        with suppress(NarrError):
            replay(wr, "1", reuse=True)
    elif kind == "revert":
        with suppress(NarrError):
            revert(wr, f"HEAD~{step[1]}")


def all_commits(wr: WorldRepo) -> list[pygit2.Commit]:
    repo = wr.repo
    walker = None
    for name in repo.references:
        if name.startswith(("refs/heads/", "refs/narr/")):
            target = repo.references[name].peel(pygit2.Commit).id
            if walker is None:
                walker = repo.walk(target)
            else:
                walker.push(target)
    return list(walker) if walker is not None else []


def edit_is_kept(wr: WorldRepo, commits: list[pygit2.Commit], edit: tuple[str, str, str],
                 in_world: bool = True) -> bool:
    node_id, field, value = edit
    path = path_of(wr, node_id)
    if in_world and path.is_file():
        try:
            if fields.get(json.loads(path.read_text("utf-8")), field) == value:
                return True
        except ValueError:
            pass
    rel = path.relative_to(wr.root).as_posix()
    for commit in commits:
        rec = records.decode(commit.message)
        if rec is not None:
            for ch in rec.edits:
                if ch.target == node_id and ch.field == field and ch.has_new and ch.new_value == value:
                    return True
        elif commit.message.startswith("narr: hand edits set aside"):
            try:
                blob = commit.tree[rel]
            except KeyError:
                continue
            if fields.get(json.loads(blob.data), field) == value:
                return True
    return False


def assert_invariants(wr: WorldRepo, ledger: list[tuple[str, str, str]]) -> None:
    report = check(wr)
    assert report.ok, [str(p) for p in report.problems] + report.worktree_problems
    head = wr.head_commit()
    assert head is not None
    index = wr.repo.index
    index.read(force=True)
    assert index.write_tree() == head.tree.id, "the git index drifted from HEAD's tree"
    commits = all_commits(wr)
    for edit in ledger:
        assert edit_is_kept(wr, commits, edit), f"hand edit lost: {edit}"


@given(st.sampled_from(["flat", "sharded"]), steps)
def test_random_sessions_keep_every_invariant(layout: str, plan: list[tuple[Any, ...]]) -> None:
    with new_world(layout) as (_root, wr):
        ledger: list[tuple[str, str, str]] = []
        for n, step in enumerate(plan):
            apply_step(wr, n, step, ledger)
            assert_invariants(wr, ledger)


def snapshot_world(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in sorted((root / "world").rglob("*.json")):
        node = json.loads(p.read_text("utf-8"))
        out[p.relative_to(root).as_posix()] = node
    return out


history = st.lists(st.one_of(event_step, event_step, edit_step), min_size=3, max_size=8)


@given(st.sampled_from(["flat", "sharded"]), history, st.integers(1, 3))
def test_reset_is_path_independent(layout: str, plan: list[tuple[Any, ...]], k: int) -> None:
    with new_world(layout) as (root, wr):
        for n, step in enumerate(plan):
            apply_step(wr, n, step, [])
        do_event(wr, 99, [])  # the history ends on an event: every edit is recorded
        depth = sum(1 for _ in _first_parents(wr.head_commit())) - 1
        k = min(k, depth)
        with tempfile.TemporaryDirectory() as tmp:
            twin = Path(tmp) / "twin"
            shutil.copytree(root, twin)
            twin_wr = WorldRepo.open(twin)
            try:
                for _ in range(k):
                    reset(wr, "HEAD~1")
                reset(twin_wr, f"HEAD~{k}")
                assert snapshot_world(root) == snapshot_world(twin)
                assert wr.head_commit().id == twin_wr.head_commit().id  # type: ignore[union-attr]
                assert wr.repo.status() == twin_wr.repo.status()
            finally:
                twin_wr.close()


def _first_parents(commit: pygit2.Commit | None) -> Iterator[pygit2.Commit]:
    while commit is not None:
        yield commit
        commit = commit.parents[0] if commit.parents else None


def _without_provenance(world: dict[str, Any]) -> dict[str, Any]:
    return {path: {**node, "created_by_event": None} for path, node in world.items()}


@given(st.sampled_from(["flat", "sharded"]), history, st.integers(1, 3), st.booleans())
def test_reset_then_replay_reuse_gives_the_same_world(layout: str, plan: list[tuple[Any, ...]],
                                                      k: int, meanwhile: bool) -> None:
    with new_world(layout) as (root, wr):
        for n, step in enumerate(plan):
            apply_step(wr, n, step, [])
        do_event(wr, 99, [])
        depth = sum(1 for _ in _first_parents(wr.head_commit())) - 1
        k = min(k, depth)
        before = snapshot_world(root)
        tip = wr.head_commit()
        reset(wr, f"HEAD~{k}")
        if meanwhile:
            # an unrelated event in between: replay re-applies the recorded changes on top
            run_event(wr, EventRequest(content="meanwhile", delta=Delta(ops=[
                SetOp(op="set", target="qingyun-gate", field="/state/bystander", value=1)])))
        result = replay(wr, "1", reuse=True)
        assert result.conflict is None
        after = snapshot_world(root)
        if meanwhile:
            gate = next(p for p in after if p.endswith("/qingyun-gate.json"))
            assert after[gate]["state"].pop("bystander") == 1
            assert _without_provenance(after) == _without_provenance(before)
        else:
            assert result.fast_forward and after == before
            assert wr.head_commit().id == tip.id  # type: ignore[union-attr]
        assert check(wr).ok
        assert refs.abandoned_refs(wr)
