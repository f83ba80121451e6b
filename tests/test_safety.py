"""Safety: the write lock, and crashes at every step of recording an event.

A crash leaves the old event or the new one, never a state ``narr check``
rejects, and never loses a hand edit: each one is either still a hand edit or
recorded in the new event's ``edits``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest
from helpers import CLI, git, narr_subprocess, node_file, read_node, rel_path, snapshot, write_node
from kills import Where, crash_seed, kill_at_line, line_points, preload, run_killed

from narrative.delta.request import EventRequest
from narrative.engine.event import run_event
from narrative.model import CreateOp, Delta, Node, RelateOp, SetOp
from narrative.store import journal, worktree
from narrative.store.catalog import nodes as catalog_nodes
from narrative.store.lock import WriteLock
from narrative.store.worldrepo import WorldRepo

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both

BUSY = 15
EXPLICIT = ["--diffuser", "explicit"]  # exactly the changes a test spells out

# What does not depend on where node files sit runs on a flat world only.
ONE_LAYOUT = pytest.mark.parametrize("layout", ["flat"])


class Crash(BaseException):
    """What a crash looks like from the inside: nothing catches it."""


def head_of(root: Path) -> str:
    repo = pygit2.Repository(str(root))
    try:
        return str(repo.head.target)
    finally:
        repo.free()


# --- the write lock -----------------------------------------------------------------------


def lock_path(root: Path) -> Path:
    return root / ".git" / "narr" / "lock"


@ONE_LAYOUT
def test_event_refused_while_another_process_writes(narr: CLI, world: Path) -> None:
    node = read_node(world, "lin-yuan")
    node["state"]["mood"] = "impatient"
    write_node(world, node_file(world, "lin-yuan").relative_to(world).as_posix(), node)
    before, head = snapshot(world), head_of(world)
    holder = WriteLock(lock_path(world), timeout=0)
    holder.acquire()
    try:
        who = f"pid {os.getpid()}: {' '.join(sys.argv[:4])}"
        message = f"narr: error: another narr process ({who}) is changing this world"
        result = narr("event", "Lin Yuan waits", "--set", "su-qing.state.mood=calm", expect=BUSY)
        assert result.stderr.splitlines() == [
            message, "hint: wait for it to finish and run the command again; "
                     "the event is kept: narr event --retry runs it again"]
        proc = narr_subprocess(world, "event", "Lin Yuan waits", env={"NARR_LOCK_TIMEOUT": "0.1"})
        assert proc.returncode == BUSY
        assert proc.stderr.splitlines()[0] == message
        # reading never waits for the lock
        t0 = time.monotonic()
        narr("status")
        narr("log")
        narr("get", "lin-yuan")
        narr("check")
        assert time.monotonic() - t0 < 2
    finally:
        holder.release()
    assert head_of(world) == head
    assert snapshot(world) == before
    rec = narr.json("event", "Lin Yuan waits", *EXPLICIT, "--set", "su-qing.state.mood=calm")
    assert rec["edits"] == [{"target": "lin-yuan", "field": "/state/mood", "old_value": "anxious",
                             "new_value": "impatient"}]


HOLDER = """
import sys, time
from pathlib import Path
from narrative.store.lock import WriteLock
lock = WriteLock(Path(sys.argv[1]), timeout=0)
lock.acquire()
print("held", flush=True)
time.sleep(float(sys.argv[2]))
lock.release()
"""


def start_holder(root: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_path(root)), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "held\n"
    proc.stdout.close()
    return proc


@ONE_LAYOUT
def test_event_waits_for_a_holder_that_finishes_in_time(narr: CLI, world: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LOCK_TIMEOUT", "10")
    holder = start_holder(world, 0.5)
    try:
        t0 = time.monotonic()
        rec = narr.json("event", "A beat", *EXPLICIT, "--set", "lin-yuan.state.mood=patient")
        waited = time.monotonic() - t0
    finally:
        holder.wait(10)
    assert holder.returncode == 0
    assert waited >= 0.3  # it did wait for the holder
    assert rec["commit"] == head_of(world)


@ONE_LAYOUT
def test_lock_timeout_is_honoured(narr: CLI, world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LOCK_TIMEOUT", "0.5")
    holder = start_holder(world, 5)
    try:
        t0 = time.monotonic()
        narr("event", "A beat", expect=BUSY)
        waited = time.monotonic() - t0
    finally:
        holder.kill()
        holder.wait(10)
    assert 0.4 <= waited < 3


@ONE_LAYOUT
def test_a_killed_holder_leaves_no_stale_lock(narr: CLI, world: Path) -> None:
    holder = start_holder(world, 60)
    narr("event", "A beat", expect=BUSY)
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    narr("event", "A beat", *EXPLICIT, "--set", "lin-yuan.state.mood=free")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "free"


@ONE_LAYOUT
def test_concurrent_events_never_interleave(narr: CLI, world: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(world), "event",
                               f"Beat {i}", *EXPLICIT, "--set", f"lin-yuan.state.beat{i}={i}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "NARR_LOCK_TIMEOUT": "30"})
             for i in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    log = narr.json("log")["items"]
    assert sorted(e["content"] for e in log[:4]) == [f"Beat {i}" for i in range(4)]
    state = read_node(world, "lin-yuan")["state"]
    assert all(state[f"beat{i}"] == i for i in range(4))
    assert narr("check").exit_code == 0
    assert git(world, "status", "--porcelain") == ""


# --- what a crash may leave, and what it may not ---------------------------------------------


@dataclass
class Before:
    """The world just before an event that may crash."""

    head: str
    world_files: dict[str, bytes]
    edits: list[dict[str, Any]]  # the pending hand edits, as ``narr status`` reports them

    @property
    def edit_keys(self) -> list[str]:
        return change_keys(self.edits)


def git_locks(root: Path) -> list[str]:
    """Lock files git (and libgit2) leave behind when killed while writing."""
    git_dir = root / ".git"
    return sorted(p.relative_to(git_dir).as_posix() for p in git_dir.glob("**/*.lock")
                  if not p.relative_to(git_dir).as_posix().startswith("objects/"))


def world_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted((root / "world").rglob("*")) if p.is_file()}


def tree_world_files(repo: pygit2.Repository, tree: pygit2.Tree) -> dict[str, bytes]:
    from narrative.store.trees import walk_blobs

    world = tree["world"]
    assert isinstance(world, pygit2.Tree)
    return {path: repo[oid].read_raw() for path, oid in walk_blobs(repo, world, "world")}


def pending_edits(root: Path) -> list[dict[str, Any]]:
    from narrative.engine.status import status

    wr = WorldRepo.open(root)
    try:
        st = status(wr).to_json()
    finally:
        wr.close()
    assert st["problems"] == []
    return list(st["edits"])


def before_event(root: Path) -> Before:
    return Before(head_of(root), world_files(root), pending_edits(root))


def change_keys(changes: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps({k: v for k, v in c.items() if k != "path"}, sort_keys=True)
                  for c in changes)


def verify(root: Path, before: Before, content: str, *, fresh_process: bool = False) -> str:
    """After a crash: recover, then the old event or the new one, and no hand edit lost.

    Returns "old" or "new".
    """
    from narrative.engine.check import check
    from narrative.engine.status import status
    from narrative.store import records

    if fresh_process:  # recovery and check by a new narr process, as a user would run it
        proc = narr_subprocess(root, "check")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    wr = WorldRepo.open(root)
    try:
        st = status(wr).to_json()
        report = check(wr)
        assert report.ok, [str(p) for p in report.problems] + report.worktree_problems
    finally:
        wr.close()
    assert not (root / ".git" / "narr" / journal.JOURNAL).exists()
    assert git_locks(root) == []
    assert st["problems"] == []

    repo = pygit2.Repository(str(root))
    try:
        head = repo.head.peel(pygit2.Commit)
        # the index is HEAD's tree again: git diff --cached is empty
        assert len(repo.index.diff_to_tree(head.tree)) == 0
        if str(head.id) == before.head:
            outcome = "old"
            assert world_files(root) == before.world_files  # every hand edit, byte for byte
            assert change_keys(st["edits"]) == before.edit_keys
        else:
            outcome = "new"
            assert [str(p) for p in head.parent_ids] == [before.head]
            record = records.decode(head.message)
            assert record is not None and record.content == content
            # every hand edit pending before the event is recorded in it, and none is pending now
            assert change_keys([c.model_dump(mode="json") for c in record.edits]) == before.edit_keys
            assert st["edits"] == []
            # the working tree holds exactly HEAD's world, byte for byte
            assert world_files(root) == tree_world_files(repo, head.tree)
    finally:
        repo.free()
    return outcome


# --- one event with a bit of everything, and hand edits pending ---------------------------


def make_hand_edits(root: Path, i: int) -> None:
    """Modify a node (in a non-canonical layout), create one, delete one."""
    ring = node_file(root, "black-ring")
    node = json.loads(ring.read_text(encoding="utf-8"))
    node["state"]["colour"] = f"colour-{i}"
    ring.write_text(json.dumps(node, ensure_ascii=False), encoding="utf-8")  # one line: reformatted
    lin = node_file(root, "lin-yuan")
    node = json.loads(lin.read_text(encoding="utf-8"))
    node["state"]["mood"] = f"mood-{i}"
    lin.write_text(json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    write_node(root, rel_path(root, f"hand-{i}", "item"), {
        "id": f"hand-{i}", "name": f"Hand {i}", "layer": "item", "kind": "", "aliases": [],
        "summary": "", "lifecycle": "permanent", "created_by_event": None, "traits": {},
        "state": {"n": i}, "relations": {}})
    for node_id in committed_ids(root, "hand-")[:1]:
        path = root / rel_path(root, node_id, "item")
        if path.exists():
            path.unlink()


def committed_ids(root: Path, prefix: str) -> list[str]:
    from narrative.store.trees import walk_blobs

    repo = pygit2.Repository(str(root))
    try:
        tree = repo.head.peel(pygit2.Commit).tree
        names = (path.split("/")[-1] for path, _ in walk_blobs(repo, tree, ""))
        return sorted(n.removesuffix(".json") for n in names if n.startswith(prefix))
    finally:
        repo.free()


def event_delta(i: int) -> Delta:
    made = Node(id=f"made-{i}", name=f"Made {i}", layer="ambient", lifecycle="event")
    return Delta(ops=[
        SetOp(op="set", target="lin-yuan", field="/state/location", value=f"place-{i}"),
        SetOp(op="set", target="su-qing", field="/state/mood", value=f"mood-{i}"),
        CreateOp(op="create", node=made),
        RelateOp(op="relate", source="su-qing", type="saw", target=f"made-{i}"),
    ])


def event_args(root: Path, i: int, tmp: Path) -> list[str]:
    spec = tmp / f"made-{i}.json"
    spec.write_text(json.dumps({"id": f"made-{i}", "name": f"Made {i}", "layer": "ambient",
                                "lifecycle": "event"}), encoding="utf-8")
    return ["event", f"Event {i}", *EXPLICIT, "--set", f'lin-yuan.state.location="place-{i}"',
            "--set", f"su-qing.state.mood=mood-{i}", "--create", str(spec),
            "--relate", f"su-qing:saw:made-{i}"]


def run_library_event(root: Path, i: int) -> None:
    wr = WorldRepo.open(root)
    try:
        run_event(wr, EventRequest(content=f"Event {i}", delta=event_delta(i)), keep_failed=False)
    finally:
        wr.close()


# --- (a) deterministic faults at each step ---------------------------------------------------


def _fail_on_call(n: int, real: Callable[..., Any]) -> Callable[..., Any]:
    calls = {"n": 0}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == n:
            raise Crash(f"crash at call {n} of {real.__name__}")
        return real(*args, **kwargs)

    return wrapper


def _after(real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        raise Crash(f"crash after {real.__name__}")

    return wrapper


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise Crash("crash")


def _fault(name: str, mp: pytest.MonkeyPatch) -> None:
    from narrative.store.catalog import Catalog

    if name == "before the journal":  # the commit object exists; nothing else has moved
        mp.setattr(journal, "run", _raise)
    elif name == "while writing the journal":
        mp.setattr(journal, "write_atomic", _fail_on_call(1, journal.write_atomic))
    elif name == "before the ref moves":
        mp.setattr(journal, "_set_ref", _raise)
    elif name == "after the ref moved, before the working tree":
        mp.setattr(journal, "_apply", _raise)
    elif name.startswith("halfway through the working tree"):
        n = int(name.rsplit(" ", 1)[1])  # the journal is write 1, files follow
        mp.setattr(journal, "put_file", _fail_on_call(n - 1, journal.put_file))
    elif name == "between a file's removal and its new bytes' rename":
        real_put, calls = journal.put_file, [0]

        def put(full: Path, data: bytes, staged: Path) -> None:
            calls[0] += 1
            if calls[0] < 2:  # one file written whole, then the second cut short
                return real_put(full, data, staged)
            staged.write_bytes(data)
            full.unlink(missing_ok=True)
            raise Crash("crash between a file's removal and its rename")

        mp.setattr(journal, "put_file", put)
    elif name == "before the index is written":
        # The scan before sealing rewrites an index whose cached trees took it over 5 ms to
        # check (a loaded machine can take that long on any index): not the write meant here.
        mp.setattr(worktree, "_REBUILT_TREES", float("inf"))
        mp.setattr(pygit2.Index, "write", _raise)
    elif name == "after the index, before the journal is removed":
        mp.setattr(journal, "_apply", _after(journal._apply))
    elif name == "before the derived index":
        mp.setattr(Catalog, "apply", _raise)
    elif name == "halfway through the derived index":
        real_apply = Catalog.apply

        def apply(self: Catalog, *args: Any, **kwargs: Any) -> None:
            with pytest.MonkeyPatch.context() as inner:
                # the old rows are gone, the first node's new ones gathered: then the crash
                inner.setattr(catalog_nodes._Rows, "add", _fail_on_call(2, catalog_nodes._Rows.add))
                real_apply(self, *args, **kwargs)

        mp.setattr(Catalog, "apply", apply)
    elif name == "before the event id is remembered":
        mp.setattr(Catalog, "remember_event", _raise)
    else:
        raise AssertionError(name)


def crash_event(world: Path, fault: str, i: int) -> None:
    """Run library event ``i`` and crash it at ``fault``, as a kill at that moment would."""
    with pytest.MonkeyPatch.context() as mp:
        _fault(fault, mp)
        with pytest.raises(Crash):
            run_library_event(world, i)


FAULTS = {
    "before the journal": "old",
    "while writing the journal": "old",
    "before the ref moves": "old",
    "after the ref moved, before the working tree": "new",
    "halfway through the working tree 2": "new",
    "halfway through the working tree 3": "new",
    "halfway through the working tree 4": "new",
    "between a file's removal and its new bytes' rename": "new",
    "before the index is written": "new",
    "after the index, before the journal is removed": "new",
    "before the derived index": "new",
    "halfway through the derived index": "new",
    "before the event id is remembered": "new",
}


@pytest.mark.slow
def test_crash_at_each_step_of_sealing(world: Path, tmp_path: Path) -> None:
    """Each fault in turn, on one story: after each, a fresh ``narr check`` passes, the world
    is the old event or the new one as the fault's place says, and no hand edit is lost."""
    narr = CLI(world)
    for i, (fault, expected) in enumerate(FAULTS.items(), 1):
        make_hand_edits(world, i)
        before = before_event(world)
        assert len(before.edits) >= 3
        crash_event(world, fault, i)
        assert verify(world, before, f"Event {i}", fresh_process=True) == expected, fault
    # the story goes on, and the history still explains the world
    narr(*event_args(world, 99, tmp_path))
    assert narr.json("show", "HEAD")["content"] == "Event 99"
    assert narr("check").exit_code == 0
    git(world, "fsck", "--strict")
    assert git(world, "status", "--porcelain") == ""


@ONE_LAYOUT
def test_recovery_at_the_next_write_command(world: Path) -> None:
    """Without a read in between, the next event finishes the interrupted one first."""
    narr = CLI(world)
    make_hand_edits(world, 1)
    before = before_event(world)
    crash_event(world, "after the ref moved, before the working tree", 1)
    assert (world / ".git/narr/journal.json").exists()
    result = narr("event", "Event 2", *EXPLICIT, "--set", "old-zhou.state.mood=tired")
    assert "narr: warning: finished an interrupted narr command (narr event: Event 1)" in result.stderr
    rec = narr.json("show", "HEAD")
    assert rec["edits"] == []  # nothing of event 1 shows up as a phantom hand edit
    assert narr.json("show", "HEAD~1")["content"] == "Event 1"
    assert change_keys(narr.json("show", "HEAD~1")["edits"]) == before.edit_keys
    assert narr("check").exit_code == 0


@ONE_LAYOUT
def test_status_finishes_an_interrupted_event(world: Path) -> None:
    narr = CLI(world)
    make_hand_edits(world, 1)
    crash_event(world, "halfway through the working tree 2", 1)
    result = narr("status")
    assert result.stderr == "narr: warning: finished an interrupted narr command (narr event: Event 1)\n"
    assert "Nothing to record" in result.stdout
    assert narr.json("status")["edits"] == []


@ONE_LAYOUT
def test_status_leaves_a_live_writers_journal_alone(world: Path) -> None:
    make_hand_edits(world, 1)
    crash_event(world, "after the ref moved, before the working tree", 1)
    holder = WriteLock(lock_path(world), timeout=0)
    holder.acquire()
    try:
        CLI(world)("status")
        assert (world / ".git/narr/journal.json").exists()
    finally:
        holder.release()
    CLI(world)("status")
    assert not (world / ".git/narr/journal.json").exists()


@ONE_LAYOUT
def test_rolled_back_event_is_announced(world: Path) -> None:
    make_hand_edits(world, 1)
    before = before_event(world)
    crash_event(world, "before the ref moves", 1)
    result = CLI(world)("check")
    assert result.stderr == ("narr: warning: rolled back an interrupted narr command "
                             "(narr event: Event 1)\n")
    assert verify(world, before, "Event 1") == "old"


@ONE_LAYOUT
def test_staged_bytes_changed_after_a_crash_are_never_put_in_place(world: Path) -> None:
    """A crash left a file removed and its new bytes staged; bytes that are no longer the
    move's own (changed by hand, damaged) stay out of the world, and nothing is left staged."""
    crash_event(world, "between a file's removal and its new bytes' rename", 1)
    staged = list((world / ".git/narr/tmp").glob(f"*{journal.STAGED}"))
    assert len(staged) == 1
    staged[0].write_bytes(b"not what the event wrote")
    missing = [p for p in json.loads((world / ".git/narr/journal.json").read_text())["updates"]
               if p["after"] is not None and not (world / p["path"]).exists()]
    assert len(missing) == 1
    CLI(world)("status")
    assert not (world / missing[0]["path"]).exists()
    assert list((world / ".git/narr/tmp").glob(f"*{journal.STAGED}")) == []
    assert not (world / ".git/narr/journal.json").exists()


@ONE_LAYOUT
def test_a_hand_edit_made_during_the_crash_window_is_kept(world: Path) -> None:
    """The user edits a file the interrupted event was about to write: their version wins."""
    make_hand_edits(world, 1)
    crash_event(world, "after the ref moved, before the working tree", 1)
    lin = node_file(world, "lin-yuan")
    node = json.loads(lin.read_text(encoding="utf-8"))
    node["state"]["mood"] = "written-meanwhile"
    lin.write_text(json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    st = CLI(world).json("status")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "written-meanwhile"
    assert {(e["target"], e["field"], e.get("new_value")) for e in st["edits"]} >= {
        ("lin-yuan", "/state/mood", "written-meanwhile")}
    assert CLI(world)("check").exit_code == 0


# --- (b) real kills ----------------------------------------------------------------------------

@pytest.mark.slow
def test_sigkill_at_random_moments(world: Path, tmp_path: Path) -> None:
    """``narr event`` SIGKILLed at a random moment of its work, forty times on one story."""
    preload("narrative.engine.event", "narrative.store.commit", "narrative.store.journal",
            "narrative.delta.flags", "narrative.store.catalog", "narrative.engine.check")
    rng = random.Random(crash_seed())
    narr = CLI(world)
    errfile = tmp_path / "stderr.txt"
    # how long the event's own work takes, once everything is imported
    make_hand_edits(world, 0)
    code, took = run_killed(world, event_args(world, 0, tmp_path), None, errfile)
    assert code == 0
    outcomes: dict[str, int] = {"old": 0, "new": 0}
    deadline = time.monotonic() + 3
    scale = 1.2  # of the measured time: the kills' range, moved while they all land on one side
    i = 1
    while i <= 40 and (time.monotonic() < deadline or i <= 8 or not all(outcomes.values())):
        make_hand_edits(world, i)
        before = before_event(world)
        delay = rng.uniform(0, took * scale)
        code, _ = run_killed(world, event_args(world, i, tmp_path), delay, errfile)
        assert code in (0, -signal.SIGKILL)
        side = verify(world, before, f"Event {i}")
        outcomes[side] += 1
        if not all(outcomes.values()):  # a machine under load runs slower than it was measured
            scale *= 1.25 if side == "old" else 0.8
        i += 1
    # the kills landed on both sides of the commit point
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
    assert narr("check").exit_code == 0
    git(world, "fsck", "--strict")


def kill_event_at_line(root: Path, i: int, stop_at: Where | None) -> tuple[int, list[str]]:
    """Run event ``i`` in a forked child that SIGKILLs itself when it reaches ``stop_at``
    (a line of commit, journal or derived index, and which run of it). Returns the child's
    wait status and, when it was not killed, the lines it ran once sealing started."""
    from narrative.store import commit
    from narrative.store.catalog import connection, events, nodes

    files = {commit.__file__, journal.__file__, connection.__file__, nodes.__file__,
             events.__file__}
    return kill_at_line(lambda: run_library_event(root, i), files, stop_at, start="seal")


@pytest.mark.slow
def test_sigkill_at_every_line_of_sealing(world: Path, layout: str) -> None:
    """A kill at every line of commit, journal and derived index that sealing runs (at its
    first run, and halfway through its runs for lines in loops), whatever the code looks like."""
    make_hand_edits(world, 0)
    status, lines = kill_event_at_line(world, 0, None)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and len(lines) > 20
    points = line_points(lines)
    # every line of the journal (the commit point and the working tree); a sample of the rest
    rng = random.Random(crash_seed())
    journal_points = [p for p in points if p[0].startswith("journal.py:")]
    others = [p for p in points if not p[0].startswith("journal.py:")]
    points = journal_points + rng.sample(others, min(12, len(others)))
    if layout == "sharded":  # the flat run covers every journal line; here a sample keeps it quick
        points = rng.sample(points, min(15, len(points)))
    outcomes: dict[str, int] = {"old": 0, "new": 0}
    for i, stop_at in enumerate(points, 1):
        make_hand_edits(world, i)
        before = before_event(world)
        status, _ = kill_event_at_line(world, i, stop_at)
        assert os.WIFSIGNALED(status) or os.WEXITSTATUS(status) == 0, stop_at
        outcomes[verify(world, before, f"Event {i}")] += 1
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
    assert CLI(world)("check").exit_code == 0
    git(world, "fsck", "--strict")


# --- what a kill inside git's own writes leaves: its lock files ---------------------------------


@ONE_LAYOUT
def test_a_stale_index_lock_refuses_the_event_before_anything_moves(world: Path) -> None:
    narr = CLI(world)
    (world / ".git/index.lock").write_bytes(b"")
    before, head = snapshot(world), head_of(world)
    proc = narr_subprocess(world, "event", "A beat", "--set", "lin-yuan.state.mood=x")
    assert proc.returncode == BUSY and "Traceback" not in proc.stderr
    assert ".git/index.lock" in proc.stderr.splitlines()[0]
    assert head_of(world) == head and snapshot(world) == before
    narr("status")


@ONE_LAYOUT
def test_a_kill_inside_the_index_write_is_recovered(world: Path) -> None:
    make_hand_edits(world, 1)
    before = before_event(world)
    crash_event(world, "before the index is written", 1)
    (world / ".git/index.lock").write_bytes(b"")  # what libgit2 leaves when killed mid-write
    assert verify(world, before, "Event 1", fresh_process=True) == "new"


@ONE_LAYOUT
def test_a_stale_branch_lock_gives_one_clear_message(world: Path) -> None:
    (world / ".git/refs/heads/main.lock").write_bytes(b"")
    before, head = snapshot(world), head_of(world)
    proc = narr_subprocess(world, "event", "A beat", "--set", "lin-yuan.state.mood=x")
    assert proc.returncode == BUSY and "Traceback" not in proc.stderr
    assert "refs/heads/main.lock" in proc.stderr.splitlines()[0]
    assert head_of(world) == head and snapshot(world) == before
    assert not (world / ".git/narr/journal.json").exists()
