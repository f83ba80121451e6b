"""Hostile use, counted: kills, concurrent writers, bad inputs, a full disk, a read-only world.

Run by hand (it is not a benchmark of speed, and pytest only runs its smoke profile,
``tests/test_stress_profile.py``)::

    python benchmarks/stress.py --quick     # 120 kills, 4 writers x 6 events: under a minute
    python benchmarks/stress.py --full      # 1,000 kills, 4 writers x 40 events: about 5 minutes
    python benchmarks/stress.py --smoke     # what CI runs: seconds
    python benchmarks/stress.py --full --kills 5000 --seed 7   # more, or other random moments

Each part counts what was tried and what went wrong:

- **kills**: ``narr event``, ``reset``, ``replay``, ``revert``, ``switch`` and ``edits restore``
  run with hand edits pending, in both layouts, and are SIGKILLed at a random moment of their
  work (the process is forked with narr already imported, so the delay covers the work and
  not Python's start). After each kill, ``narr check`` (which first finishes or rolls back the
  interrupted command) must accept the world, every hand edit pending before the command (each
  carries a unique marker) must still be somewhere a user finds it (the working tree, the new
  event's record, a set-aside or abandoned ref), and ``git fsck`` must be clean.
- **writers**: 4 processes record events at once, one in four of their commands a reset; every
  event a process was told was recorded must be on the story line or in an abandoned chain.
- **bad inputs**: the corpus under ``tests/data/bad_inputs/`` (one JSON file per case: the
  command, files to plant first, the exit code and a piece of the message expected; its
  README says more); each must
  be refused with that code and message, no traceback, and nothing in the world changed.
  Stranger-world cases hand narr a world with links out of it, re-encoding attributes or
  records nested a thousand deep, and check that nothing is written where a link points.
- **disk**: writes refused as on a full disk (at the lock, at the journal, after the story
  moved) and as on a read-only world: exit 19, nothing changed (or finished by the next
  command when the story had moved), no hand edit lost, ``narr check`` content afterwards.
- **exports**: ``narr export vault`` into a folder holding the last export and the user's own
  files, SIGKILLed at random moments: the folder must be as it was or the new export (never a
  mix), nothing beside it touched, the next export must read it right. Then hostile outputs:
  a shared vault's marker naming another repository's ``.git/HEAD`` (by ``..`` and absolute),
  ``-o`` into ``.git/``, ``world/``, over ``narr.toml``, a vault inside the world, paths through
  a symbolic link: each refused, nothing written anywhere ("writes outside the world").
- **png**: card bombs (a hundred compressed text chunks, a card chunk inflating past its
  bound, a hundred thousand chunks) and ``--png`` images (a 3 GB sparse file, ``/dev/zero``),
  each refused with its message in a forked child whose peak memory is measured.
- **mcp**: ``narr mcp`` over stdio given lines that are not JSON or not requests and text that
  is not valid Unicode (each must be answered: a line with no answer is a hang), then clients
  that hang up mid-``audit`` (the server must exit at once, with one line of log).
- **chains**: random sessions of events, hand edits, reset, replay, chains drop, edits drop
  and restore, switch and merge through the library: every event ever made must stay on a
  story line or an abandoned chain ("events lost" otherwise).

The report's last table counts what must stay 0: broken states (``narr check`` rejected),
lost events, lost hand edits, tracebacks, writes outside the world, hangs.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import errno
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "bad_inputs"
EXPLICIT = ["--diffuser", "explicit"]
OPS = ("event", "reset", "replay", "revert", "switch", "restore")
ACCEPTED_EXITS = {0, 14, 16}  # done, a conflict refused, nothing to do
MARKER = re.compile(rb"h[mn]\d+x")


@dataclass(frozen=True)
class Profile:
    kills: int  # killed runs in all, split over both layouts
    writers: int
    events_per_writer: int
    disk: bool = True
    export_kills: int = 50  # kills during narr export vault
    sessions: int = 10  # random sessions of time travel (chains), 12 commands each


PROFILES = {
    "smoke": Profile(kills=12, writers=2, events_per_writer=3, export_kills=3, sessions=2),
    "quick": Profile(kills=120, writers=4, events_per_writer=6, export_kills=20, sessions=6),
    "full": Profile(kills=1000, writers=4, events_per_writer=100, export_kills=50, sessions=40),
}


@dataclass
class Tally:
    tried: int = 0
    failures: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def fail(self, key: str, detail: str) -> None:
        self.count(key)
        self.failures.append(detail)


# --- a world, and what to look at ------------------------------------------------------------


def isolate_git(home: Path) -> None:
    """A fixed identity and no machine-wide git settings, as the tests have."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Stress\n\temail = stress@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    for key in list(os.environ):
        if key.startswith(("GIT_", "NARR_")) or key in ("EDITOR", "VISUAL"):
            del os.environ[key]
    os.environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
                       "NARR_AUTO_GC": "0", "NARR_LOCK_TIMEOUT": "5"})
    import pygit2

    levels = pygit2.enums.ConfigLevel
    pygit2.settings.search_path[levels.SYSTEM] = str(home / "nosystem")
    pygit2.settings.search_path[levels.XDG] = str(home / ".config")
    pygit2.settings.search_path[levels.GLOBAL] = str(home)


def new_world(root: Path, layout: str) -> Path:
    from narrative.engine.init import init_world

    init_world(root, sample=True, layout=layout)  # type: ignore[arg-type]
    return root


def narr(root: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """``narr ARGS`` in this process (click's runner): exit code, stdout, stderr."""
    from click.testing import CliRunner

    from narrative.cli import main

    result = CliRunner().invoke(main, ["-C", str(root), *args], input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        err = "".join(traceback.format_exception(result.exception))
        return 70, result.stdout, result.stderr + "Traceback (in process):\n" + err
    return result.exit_code, result.stdout, result.stderr


def narr_json(root: Path, *args: str) -> Any:
    code, out, err = narr(root, *args, "--json")
    if code != 0:
        raise RuntimeError(f"narr {' '.join(args)} exited {code}: {err}")
    return json.loads(out)


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def fsck_problems(root: Path) -> str:
    proc = git(root, "fsck", "--no-dangling", "--no-progress")
    return "" if proc.returncode == 0 and not proc.stdout.strip() else (proc.stdout + proc.stderr)


def snapshot(root: Path) -> dict[str, str]:
    """Refs, reflogs, index entries and every working-tree file (not objects or narr's caches)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_dir() or rel.startswith((".git/objects/", ".git/narr/")):
            continue
        if rel == ".git/index":
            out[rel] = subprocess.run(["git", "-C", str(root), "ls-files", "-s"],
                                      capture_output=True, text=True).stdout
            continue
        out[rel] = hashlib.sha1(path.read_bytes()).hexdigest()
    return out


def world_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted((root / "world").rglob("*.json")) if p.is_file()}


def node_file(root: Path, node_id: str, layer: str) -> Path:
    from narrative.ids import node_path
    from narrative.store.worldrepo import load_config

    return root / node_path(node_id, layer, load_config(root).layout)  # type: ignore[arg-type]


def hand_edit(root: Path, n: int) -> None:
    """Two hand edits carrying markers: a new field, the file reformatted on one line; a new node.

    Each run's field is its own, so a replay or a restore of older edits meets no collision
    the user did not ask for, and the command goes on to do its work.
    """
    lin = node_file(root, "lin-yuan", "character")
    node = json.loads(lin.read_text(encoding="utf-8"))
    node["state"][f"h{n}"] = f"hm{n}x"
    lin.write_text(json.dumps(node, ensure_ascii=False), encoding="utf-8")
    made = node_file(root, f"hand-{n}", "item")
    made.parent.mkdir(parents=True, exist_ok=True)
    made.write_text(json.dumps({
        "id": f"hand-{n}", "name": f"hn{n}x", "layer": "item", "kind": "", "aliases": [],
        "summary": "", "lifecycle": "permanent", "created_by_event": None, "traits": {},
        "state": {}, "relations": {}}, indent=2) + "\n", encoding="utf-8")


def markers_in(data: bytes) -> set[bytes]:
    return set(MARKER.findall(data))


def kept_markers(root: Path, extra_refs: list[str]) -> set[bytes]:
    """Every marker a user can still find: files, recent records, set-aside and new refs."""
    import pygit2

    found: set[bytes] = set()
    for data in world_bytes(root).values():
        found |= markers_in(data)
    repo = pygit2.Repository(str(root))
    try:
        tips = []
        with contextlib.suppress(pygit2.GitError, KeyError):
            tips.append(repo.head.peel(pygit2.Commit))
        names = [n for n in repo.references if n.startswith("refs/narr/edits/")]
        for name in sorted(names)[-3:] + extra_refs:
            with contextlib.suppress(pygit2.GitError, KeyError):
                tips.append(repo.references[name].peel(pygit2.Commit))
        for tip in tips:
            commit: Any = tip
            for _ in range(3):
                found |= markers_in(commit.message.encode())
                if not commit.parents:
                    break
                if tip.message.startswith("narr: hand edits set aside"):
                    diff = repo.diff(commit.parents[0], commit)
                    for patch in diff:
                        oid = patch.delta.new_file.id
                        if oid in repo:
                            found |= markers_in(repo[oid].read_raw())
                commit = commit.parents[0]
    finally:
        repo.free()
    return found


def committed_markers(root: Path) -> set[bytes]:
    """Markers in HEAD's own files: committed, so history keeps them (check and fsck watch it)."""
    import pygit2

    found: set[bytes] = set()
    repo = pygit2.Repository(str(root))
    try:
        stack = [repo.head.peel(pygit2.Commit).tree]
        while stack:
            for entry in stack.pop():
                obj = repo[entry.id]
                if isinstance(obj, pygit2.Tree):
                    stack.append(obj)
                else:
                    found |= markers_in(obj.read_raw())
    finally:
        repo.free()
    return found


def narr_refs(root: Path) -> set[str]:
    out = git(root, "for-each-ref", "--format=%(refname)", "refs/narr/").stdout
    return set(out.split())


def story_position(root: Path) -> tuple[str, str]:
    """Where HEAD points (a branch) and the commit it names: what the commit point moves."""
    head = (root / ".git" / "HEAD").read_text(encoding="utf-8").strip()
    return head, git(root, "rev-parse", "HEAD").stdout.strip()


def git_locks(root: Path) -> list[Path]:
    git_dir = root / ".git"
    return [p for p in git_dir.glob("**/*.lock") if "objects" not in p.relative_to(git_dir).parts]


# --- kills -------------------------------------------------------------------------------------


def fork_narr(root: Path, args: list[str], errfile: Path) -> int:
    """Start ``narr ARGS`` in a forked child (narr already imported); return its pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        out = os.open(os.devnull, os.O_WRONLY)
        err = os.open(errfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(err, 2)
        # the real streams, whatever the parent had put in their place (pytest's capture)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        from narrative.cli import main

        try:
            main(["-C", str(root), *args], prog_name="narr")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def wait_killed(pid: int, delay: float | None) -> tuple[int, float]:
    t0 = time.monotonic()
    if delay is not None:
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), time.monotonic() - t0


class KillWorld:
    """One world that a sequence of commands, each killed at a random moment, goes through."""

    def __init__(self, root: Path, rng: random.Random, tally: Tally,
                 took: dict[str, float]) -> None:
        self.root = root
        self.rng = rng
        self.tally = tally
        self.took = took  # how long each command's work takes, from a first run not killed
        self.n = 0
        ok, _, err = narr(root, "branch", "other")
        assert ok == 0, err

    def _ensure_event(self) -> None:
        """HEAD is an event with an event (or the genesis) before it."""
        log = narr_json(self.root, "log", "-n", "2")["items"]
        if len(log) < 2:
            self._setup("event", f"Setup {self.n}", *EXPLICIT,
                        "--set", f"ferry.state.visits=s{self.n}")

    def _setup(self, *args: str) -> None:
        code, _, err = narr(self.root, *args)
        if code not in ACCEPTED_EXITS:
            raise RuntimeError(f"setup narr {' '.join(args)} exited {code}: {err}")

    def _clean(self) -> None:
        if narr_json(self.root, "status")["edits"]:
            self._setup("event", f"Record {self.n}", *EXPLICIT)

    def prepare(self, op: str) -> tuple[list[str], set[bytes]]:
        """Bring the world to where ``op`` has work to do; the command and the markers at stake."""
        n = self.n
        if op == "event":
            hand_edit(self.root, n)
            args = ["event", f"Event {n}", *EXPLICIT, "--set", f"su-qing.state.mood=e{n}",
                    "--set", f'lin-yuan.state.location="p{n}"']
        elif op == "reset":
            self._ensure_event()
            hand_edit(self.root, n)
            args = ["reset", "HEAD~1"]
        elif op == "replay":
            chains = [c for c in narr_json(self.root, "chains")["items"] if c["length"] > 0]
            if not chains:
                self._ensure_event()
                self._setup("event", f"To replay {n}", *EXPLICIT, "--set", f"su-qing.state.mood=r{n}")
                self._setup("reset", "HEAD~1", "--hard")
                chains = [c for c in narr_json(self.root, "chains")["items"] if c["length"] > 0]
            hand_edit(self.root, n)
            args = ["replay", str(chains[0]["n"]), "--reuse"]
        elif op == "revert":
            self._ensure_event()
            hand_edit(self.root, n)
            args = ["revert", "HEAD"]
        elif op == "switch":
            hand_edit(self.root, n)
            branch = narr_json(self.root, "status")["branch"]
            args = ["switch", "other" if branch == "main" else "main", "--set-aside"]
        else:  # restore
            waiting = [e for e in narr_json(self.root, "edits")["items"] if not e["restored_at"]]
            if not waiting:
                self._ensure_event()
                hand_edit(self.root, n)
                self._setup("reset", "HEAD~1", "--hard")
                waiting = [e for e in narr_json(self.root, "edits")["items"] if not e["restored_at"]]
            self._clean()
            args = ["edits", "restore", str(waiting[0]["n"]), "--force"]
        before: set[bytes] = set()
        for data in world_bytes(self.root).values():
            before |= markers_in(data)
        before -= committed_markers(self.root)  # what is at stake: the uncommitted edits
        if op == "restore":
            before |= kept_markers(self.root, [])
        return args, before

    def run(self, op: str, errfile: Path) -> None:
        self.n += 1
        self.tally.tried += 1
        self.tally.count(f"runs: {op}")
        args, at_stake = self.prepare(op)
        refs_before = narr_refs(self.root)
        where_before = story_position(self.root)
        took = self.took.get(op)
        delay = None if took is None else self.rng.uniform(0, took * 1.2)
        pid = fork_narr(self.root, args, errfile)
        code, elapsed = wait_killed(pid, delay)
        if code == 0:  # the shortest whole run so far: the first one also imports narr's modules
            self.took[op] = min(elapsed, took or elapsed)
        errors = errfile.read_text(encoding="utf-8", errors="replace")
        where = f"{self.root.name} run {self.n} narr {' '.join(args)} (delay {delay})"
        if code == -signal.SIGKILL:
            moved = story_position(self.root) != where_before
            self.tally.count("killed after the story moved" if moved else "killed before it moved")
        elif "Traceback" in errors:
            self.tally.fail("tracebacks", f"{where}: {errors[-2000:]}")
        elif code not in ACCEPTED_EXITS:
            self.tally.fail("unexpected exits", f"{where}: exit {code}: {errors[-500:]}")
        else:
            self.tally.count("finished before the kill" if code == 0 else f"refused ({code}): {op}")
        self.verify(where, at_stake, refs_before)

    def verify(self, where: str, at_stake: set[bytes], refs_before: set[str]) -> None:
        from narrative.engine.check import check
        from narrative.store.worldrepo import WorldRepo

        locks = git_locks(self.root)
        if locks:  # a kill inside libgit2's own write, before narr's journal: git's rule applies
            self.tally.count("git lock files left (removed, as git asks)")
            for lock in locks:
                lock.unlink()
        wr = WorldRepo.open(self.root)
        try:
            report = check(wr)
        finally:
            wr.close()
        if not report.ok:
            self.tally.fail("states check rejected",
                            f"{where}: {[str(p) for p in report.problems] + report.worktree_problems}")
        if (self.root / ".git" / "narr" / "journal.json").exists():
            self.tally.fail("states check rejected", f"{where}: the journal is still there")
        new_refs = sorted(narr_refs(self.root) - refs_before)
        lost = at_stake - kept_markers(self.root, new_refs)
        if lost:
            self.tally.fail("hand edits lost", f"{where}: {sorted(m.decode() for m in lost)}")
        problems = fsck_problems(self.root)
        if problems:
            self.tally.fail("fsck errors", f"{where}: {problems[:500]}")


def run_kills(scratch: Path, count: int, seed: int, log: Callable[[str], None]) -> Tally:
    tally = Tally()
    rng = random.Random(seed)
    errfile = scratch / "kill-stderr.txt"
    took: dict[str, float] = {}
    per_layout = {"flat": (count + 1) // 2, "sharded": count // 2}
    for layout, runs in per_layout.items():
        if not runs:
            continue
        world = KillWorld(new_world(scratch / f"kills-{layout}", layout), rng, tally, took)
        for i in range(runs):
            world.run(OPS[i % len(OPS)], errfile)
            if (i + 1) % 50 == 0:
                log(f"  kills ({layout}): {i + 1}/{runs}")
    return tally


# --- concurrent writers ------------------------------------------------------------------------


def _writer(root: Path, who: int, events: int, out: Path) -> None:
    """One writer: ``events`` commands, every fourth a reset; what it was told, one line each."""
    import narrative as narr
    from narrative.errors import BusyError, ConflictError

    lines = []
    for i in range(events):
        for _attempt in range(400):
            world = narr.open_world(root)
            try:
                if i % 4 == 3:
                    res = narr.reset(world, "HEAD~1", hard=True)
                    lines.append({"kind": "reset", "abandoned": res.abandoned, "from": res.old})
                else:
                    op = narr.SetOp(target="lin-yuan", field=f"/state/w{who}", value=i)
                    ev = narr.event(world, f"Writer {who} event {i}", op)
                    lines.append({"kind": "event", "commit": ev.commit})
                break
            except (BusyError, ConflictError):
                time.sleep(0.02)
            finally:
                world.close()
        else:
            lines.append({"kind": "gave up", "i": i})
    out.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def run_writers(scratch: Path, writers: int, events: int) -> Tally:
    import pygit2

    tally = Tally()
    root = new_world(scratch / "writers", "flat")
    for i in range(2):  # something to reset from the start
        narr(root, "event", f"Start {i}", *EXPLICIT, "--set", f"ferry.state.visits={i}")
    pids = []
    outs = [scratch / f"writer-{w}.jsonl" for w in range(writers)]
    sys.stdout.flush()
    sys.stderr.flush()
    for w in range(writers):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _writer(root, w, events, outs[w])
            except BaseException:
                import traceback

                traceback.print_exc()
                code = 70
            finally:
                os._exit(code)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            tally.fail("writers that crashed", f"writer pid {pid} exited {status}")
    told: list[dict[str, Any]] = []
    for out in outs:
        if out.exists():
            told += [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line]
    tally.tried = len(told)
    repo = pygit2.Repository(str(root))
    try:
        tips = [repo.head.target] + [repo.references[n].target for n in repo.references
                                     if n.startswith("refs/narr/abandoned/")]
        for item in told:
            tally.count(f"{item['kind']}s")
            if item["kind"] == "gave up":
                tally.fail("commands that never got the lock", json.dumps(item))
            if item["kind"] != "event":
                continue
            oid = pygit2.Oid(hex=item["commit"])
            if not any(t == oid or repo.descendant_of(t, oid) for t in tips):
                tally.fail("events lost", f"event {item['commit']} is on no story line or chain")
    finally:
        repo.free()
    code, _, err = narr(root, "check")
    if code != 0:
        tally.fail("states check rejected", f"writers: {err}")
    problems = fsck_problems(root)
    if problems:
        tally.fail("fsck errors", f"writers: {problems[:500]}")
    return tally


# --- bad inputs --------------------------------------------------------------------------------


def load_corpus(directory: Path = CORPUS) -> list[dict[str, Any]]:
    cases = []
    for path in sorted(directory.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        case["name"] = path.stem
        cases.append(case)
    return cases


def run_case(template: Path, scratch: Path, case: dict[str, Any]) -> str | None:
    """Run one bad input on a fresh copy of the template world; what went wrong, or None."""
    root = scratch / "case"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(template, root, symlinks=True)
    files = scratch / "case-files"
    if files.exists():
        shutil.rmtree(files)
    files.mkdir()
    for rel, text in case.get("world_files", {}).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, dict):
            target.write_bytes(bytes.fromhex(text["hex"]))
        else:
            target.write_text(text, encoding="utf-8")
    for name, content in case.get("files", {}).items():
        data = content if isinstance(content, str) else json.dumps(content)
        (files / name).parent.mkdir(parents=True, exist_ok=True)
        (files / name).write_text(data, encoding="utf-8")
    _stranger_setup(root, files, case)
    args = [a.replace("{files}", str(files)).replace("{world}", str(root)) for a in case["args"]]
    before, outside = snapshot(root), _folder_bytes(files)
    code, out, err = narr(root, *args, stdin=case.get("stdin"))
    problems = []
    if "Traceback" in err:
        problems.append("a traceback")
    if code != case["exit"]:
        problems.append(f"exit {code}, expected {case['exit']}")
    if case["message"] not in err + (out if case.get("stdout") else ""):
        problems.append(f"the message lacks {case['message']!r}")
    if case["exit"] != 0 and out and not case.get("stdout"):
        problems.append("data on stdout")
    if case.get("stdout") and ("\x1b" in out or "\x07" in out):
        problems.append("a control character from the world on stdout")
    if snapshot(root) != before:
        problems.append("the world changed")
    if case.get("outside_unchanged") and _folder_bytes(files) != outside:
        problems.append("narr wrote outside the world")
    if problems:
        return f"{case['name']}: {'; '.join(problems)}: {err.strip()[:300]}"
    return None


def _stranger_setup(root: Path, files: Path, case: dict[str, Any]) -> None:
    """A world as a stranger could hand it over: ``links`` (a path of the world made a
    symbolic link to a place under the scratch folder, what was there moved to it), then
    ``commit`` (everything committed with plain git, with that message)."""
    for rel, target in case.get("links", {}).items():
        link, dest = root / rel, Path(target.replace("{files}", str(files)))
        if (link.exists() or link.is_symlink()) and not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(link), dest)
        elif link.is_dir():
            shutil.rmtree(link)
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(dest, link)
    if "commit" in case:
        git(root, "add", "-A")
        git(root, "-c", "user.name=Stranger", "-c", "user.email=stranger@example.org",
            "commit", "-q", "--no-verify", "-m", case["commit"])


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def run_bad_inputs(scratch: Path) -> Tally:
    tally = Tally()
    template = new_world(scratch / "bad-input-template", "flat")
    for case in load_corpus():
        tally.tried += 1
        tally.count(f"cases: {case['name'].split('-', 2)[1]}")
        problem = run_case(template, scratch, case)
        if problem:
            tally.fail("bad inputs passed", problem)
    return tally


# --- a full disk, a read-only world --------------------------------------------------------------


@contextlib.contextmanager
def refused_writes(root: Path, code: int, match: str = "") -> Iterator[None]:
    """Creating files under ``root/.git`` (whose path holds ``match``) fails with ``code``."""
    real_open = os.open
    git_dir = str(root / ".git")

    def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if (str(path).startswith(git_dir) and match in str(path)
                and flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR)):
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, *args, **kwargs)

    narr_dir = str(root / ".git" / "narr")
    real_access = os.access

    def fake_access(path: Any, mode: int, **kwargs: Any) -> bool:
        if code == errno.EROFS and str(path).startswith(narr_dir) and mode & os.W_OK:
            return False
        return real_access(path, mode, **kwargs)

    real_io_open = io.open

    def fake_io_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        # a read-only world: the node files cannot be written either
        if (code == errno.EROFS and isinstance(file, (str, os.PathLike))
                and str(file).startswith(str(root)) and set(mode) & set("wax+")):
            raise OSError(code, os.strerror(code), str(file))
        return real_io_open(file, mode, *args, **kwargs)

    with mock.patch.object(os, "open", fake_open), mock.patch.object(os, "access", fake_access), \
            mock.patch.object(io, "open", fake_io_open), \
            mock.patch.object(builtins, "open", fake_io_open):
        yield


@contextlib.contextmanager
def full_disk_for(prefix: str) -> Iterator[None]:
    """narr's own file writes of a name starting with ``prefix`` fail as on a full disk."""
    from narrative.store import journal

    real_open = open

    def fake_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "w" in mode and Path(file).name.startswith(prefix):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))
        return real_open(file, mode, *args, **kwargs)

    with mock.patch.object(journal, "open", fake_open, create=True):
        yield


WRITERS = [
    ("event", ["event", "storm", *EXPLICIT, "--set", "su-qing.state.mood=wild"]),
    ("reset", ["reset", "HEAD~1"]),
    ("revert", ["revert", "HEAD"]),
    ("switch", ["switch", "other"]),
    ("new", ["new", "item", "Copper Lantern"]),
]


def run_disk(scratch: Path) -> Tally:
    tally = Tally()
    base = new_world(scratch / "disk-template", "flat")
    narr(base, "event", "calm down", *EXPLICIT, "--set", "su-qing.state.mood=calm")
    narr(base, "branch", "other")
    n = 0

    def fresh() -> Path:
        nonlocal n
        n += 1
        root = scratch / f"disk-{n}"
        shutil.copytree(base, root, symlinks=True)
        hand_edit(root, 9000 + n)
        return root

    def after(root: Path, where: str, at_stake: set[bytes]) -> None:
        code, _, err = narr(root, "check")
        if code != 0:
            tally.fail("states check rejected", f"{where}: {err.strip()[:300]}")
        lost = at_stake - kept_markers(root, sorted(narr_refs(root)))
        if lost:
            tally.fail("hand edits lost", f"{where}: {sorted(m.decode() for m in lost)}")
        if fsck_problems(root):
            tally.fail("fsck errors", where)

    cases: list[tuple[str, str, Callable[[Path], contextlib.AbstractContextManager[None]], str]] = []
    for name, _ in WRITERS:
        cases.append((f"read-only world: {name}", name,
                      lambda r: refused_writes(r, errno.EROFS), "the world is read-only"))
        if name == "new":  # it writes one node file, no git data: the disk is full or it is not
            continue
        cases.append((f"full disk at the lock: {name}", name,
                      lambda r: refused_writes(r, errno.ENOSPC, "lock"), "the disk is full"))
        cases.append((f"full disk at the journal: {name}", name,
                      lambda r: full_disk_for("journal.json"), "the disk is full"))
    for label, name, patcher, message in cases:
        args = dict(WRITERS)[name]
        root = fresh()
        at_stake = set().union(*(markers_in(d) for d in world_bytes(root).values()))
        before = snapshot(root)
        tally.tried += 1
        tally.count(label.split(":")[0])
        with patcher(root):
            code, _, err = narr(root, *args)
        if "Traceback" in err or code != 19 or message not in err:
            tally.fail("refused wrongly", f"{label}: exit {code}: {err.strip()[:300]}")
        elif snapshot(root) != before:
            tally.fail("changed anyway", f"{label}: the world changed")
        for reader in (["status"], ["log"], ["get", "lin-yuan"]):
            with patcher(root):
                code, _, err = narr(root, *reader)
            if code != 0:
                tally.fail("readers refused", f"{label}: narr {reader[0]} exited {code}: {err[:200]}")
        after(root, label, at_stake)
    # the story moved, then a node file could not be written: the next command finishes it
    for name in ("event", "reset"):
        root = fresh()
        at_stake = set().union(*(markers_in(d) for d in world_bytes(root).values()))
        label = f"full disk after the story moved: {name}"
        tally.tried += 1
        tally.count("full disk after the story moved")
        with full_disk_for("lin-yuan.json"):
            code, _, err = narr(root, *dict(WRITERS)[name])
        if "Traceback" in err or code != 19 or "the story has moved" not in err:
            tally.fail("refused wrongly", f"{label}: exit {code}: {err.strip()[:300]}")
        code, _, err = narr(root, "status")
        if code != 0 or "finished an interrupted narr command" not in err:
            tally.fail("not finished later", f"{label}: {err.strip()[:300]}")
        after(root, label, at_stake)
    return tally


# --- exports: kills during a vault export, hostile output paths -----------------------------------


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``folder``; {} when it is not there."""
    if not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): (None if p.is_dir() else p.read_bytes())
            for p in sorted(folder.rglob("*"))}


def run_exports(scratch: Path, kills: int, seed: int) -> Tally:
    tally = Tally()
    rng = random.Random(seed)
    root = new_world(scratch / "exports-world", "flat")
    place = scratch / "exports-place"
    place.mkdir()
    victim = place / "other-repo" / ".git"
    victim.mkdir(parents=True)
    (victim / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    vault = place / "vault"
    narr(root, "export", "vault", str(vault))
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text('{"theme": "dark"}', encoding="utf-8")
    (vault / "Characters" / "My own note.md").write_text("Mine.\n", encoding="utf-8")
    narr(root, "event", "Lin Yuan tires", *EXPLICIT, "--set", "lin-yuan.state.mood=tired")
    narr(root, "event", "The ring is gone", *EXPLICIT, "--expire", "black-ring")
    old = _tree(vault)
    pristine = scratch / "exports-pristine"
    shutil.copytree(vault, pristine, symlinks=True)
    narr(root, "export", "vault", str(vault))
    new = _tree(vault)
    outside = {name: _tree(place / name) if (place / name).is_dir() else (place / name).read_bytes()
               for name in os.listdir(place) if name != "vault"}
    errfile = scratch / "export-stderr.txt"
    took: float | None = None
    for i in range(kills + 1):
        shutil.rmtree(vault)
        shutil.copytree(pristine, vault, symlinks=True)
        delay = None if took is None else rng.uniform(0, took * 1.2)
        pid = fork_narr(root, ["export", "vault", str(vault)], errfile)
        code, elapsed = wait_killed(pid, delay)
        where = f"export kill {i} (delay {delay})"
        if took is None:
            took = elapsed
            if code != 0:
                tally.fail("exports refused", f"{where}: exit {code}")
            continue
        tally.tried += 1
        errors = errfile.read_text(encoding="utf-8", errors="replace")
        if "Traceback" in errors:
            tally.fail("tracebacks", f"{where}: {errors[-1000:]}")
        now = _tree(vault)
        if now not in (old, new):
            tally.fail("exports half written", f"{where}: the vault is neither the old nor the new")
        else:
            tally.count(f"export killed: vault {'as it was' if now == old else 'new'}")
        beside = {name: _tree(place / name) if (place / name).is_dir() else (place / name).read_bytes()
                  for name in os.listdir(place) if name != "vault"
                  and not name.startswith(".vault.narr-export-")}
        if beside != outside:
            tally.fail("writes outside the world", f"{where}: something beside the vault changed")
        code, _, err = narr(root, "export", "vault", str(vault))
        if code != 0 or _tree(vault) != new:
            tally.fail("exports misread", f"{where}: the next export: exit {code}: {err[:300]}")
    _hostile_exports(root, place, victim, tally)
    return tally


def _hostile_exports(root: Path, place: Path, victim: Path, tally: Tally) -> None:
    """Exports told to write where they must not: each refused, nothing written anywhere."""
    head = (victim / "HEAD").read_bytes()
    digest = hashlib.sha256(head).hexdigest()
    shared = place / "shared-vault"
    narr(root, "export", "vault", str(shared))
    marker = shared / ".narr-export.json"
    (place / "elsewhere").mkdir()
    (place / "link").symlink_to(place / "elsewhere", target_is_directory=True)
    (place / "into-world").symlink_to(root / "world" / "character", target_is_directory=True)
    cases: list[tuple[str, list[str], Callable[[], None] | None]] = []
    for name in ("../other-repo/.git/HEAD", str(victim / "HEAD"), "..\\other-repo\\.git\\HEAD"):
        def forge(name: str = name) -> None:
            data = json.loads(marker.read_text(encoding="utf-8"))
            data["files"][name] = digest
            marker.write_text(json.dumps(data), encoding="utf-8")
        cases.append((f"a marker naming {name}", ["export", "vault", str(shared)], forge))
    for target in (".git/HEAD", ".git/refs/heads/main", "world/character/x.json", "narr.toml",
                   "rules/x.toml", str(place / "link" / "book.json"),
                   str(place / "into-world" / "x.json")):
        cases.append((f"-o {target}", ["export", "lorebook", "-o", target], None))
        cases.append((f"card -o {target}", ["export", "card", "lin-yuan", "-o", target], None))
    for target in ("world/vaultx", "world", ".git/vault", ".", str(place / "link" / "v")):
        cases.append((f"vault {target}", ["export", "vault", target], None))
    for label, args, setup in cases:
        if setup is not None:
            setup()
        before, beside = snapshot(root), _tree(place)
        tally.tried += 1
        tally.count("hostile exports")
        code, _, err = narr(root, *args)
        if "Traceback" in err:
            tally.fail("tracebacks", f"{label}: {err[-1000:]}")
        elif code not in (12, 14):
            tally.fail("exports not refused", f"{label}: exit {code}: {err[:300]}")
        if snapshot(root) != before or _tree(place) != beside or (victim / "HEAD").read_bytes() != head:
            tally.fail("writes outside the world", f"{label}: a file changed where it was not told")
        if narr(root, "check")[0] != 0:
            tally.fail("states check rejected", f"{label}: narr check")


# --- png: card bombs, images that never end -------------------------------------------------------


def _png(chunks: list[tuple[bytes, bytes]]) -> bytes:
    import struct
    import zlib

    out = [b"\x89PNG\r\n\x1a\n"]
    for kind, body in chunks:
        out.append(struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body)))
    return b"".join(out)


def _bombs(folder: Path) -> list[tuple[str, list[str], str]]:
    """(label, narr arguments, a piece of the refusal) for each hostile PNG input."""
    import struct
    import zlib

    ihdr = (b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
    iend = (b"IEND", b"")
    eight = zlib.compress(b"\x00" * (8 * 1024 * 1024), 9)
    made = {
        "comments.png": _png([ihdr, *((b"zTXt", f"c{i}".encode() + b"\x00\x00" + eight) for i in range(120)),
                              iend]),
        "card-bomb.png": _png([ihdr, (b"zTXt", b"chara\x00\x00" + zlib.compress(b"\x00" * (64 << 20), 9)),
                               iend]),
        "chunks.png": _png([ihdr, *([(b"teXt", b"")] * 100_001), iend]),
    }
    for name, data in made.items():
        (folder / name).write_bytes(data)
    with open(folder / "sparse.png", "wb") as fh:
        fh.truncate(3 << 30)
    out = folder / "out.png"
    return [
        ("120 compressed comments", ["import", str(folder / "comments.png")], "no character card"),
        ("a card chunk inflating to 64 MB", ["import", str(folder / "card-bomb.png")], "inflates to more"),
        ("100,001 chunks", ["import", str(folder / "chunks.png")], "more than 100,000 chunks"),
        ("--png a 3 GB sparse file", ["export", "card", "lin-yuan", "--png", str(folder / "sparse.png"),
                                      "-o", str(out)], "more than the 64.0 MB"),
        ("--png /dev/zero", ["export", "card", "lin-yuan", "--png", "/dev/zero", "-o", str(out)],
         "goes on past 64.0 MB"),
    ]


PNG_MEMORY = 600 * 1024 * 1024  # narr's own ~150 MB, a 64 MB image and what parsing it costs


def run_png(scratch: Path) -> Tally:
    tally = Tally()
    root = new_world(scratch / "png-world", "flat")
    folder = scratch / "png-files"
    folder.mkdir()
    errfile = scratch / "png-stderr.txt"
    for label, args, message in _bombs(folder):
        tally.tried += 1
        tally.count("png inputs")
        before = snapshot(root)
        t0 = time.monotonic()
        pid = fork_narr(root, args, errfile)
        deadline = time.monotonic() + 120
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                _, status, usage = os.wait4(pid, 0)
                tally.fail("hangs", f"{label}: still running after 120 s")
                break
            time.sleep(0.05)
        code = os.waitstatus_to_exitcode(status)
        errors = errfile.read_text(encoding="utf-8", errors="replace")
        peak = usage.ru_maxrss * 1024  # KB on Linux
        tally.count(f"png peak MB: {label}", peak >> 20)
        if "Traceback" in errors:
            tally.fail("tracebacks", f"{label}: {errors[-1000:]}")
        elif code != 12 or message not in errors:
            tally.fail("png not refused", f"{label}: exit {code} in {time.monotonic() - t0:.1f} s: "
                                          f"{errors[:300]}")
        if peak > PNG_MEMORY:
            tally.fail("png memory", f"{label}: {peak >> 20} MB resident")
        if snapshot(root) != before:
            tally.fail("writes outside the world", f"{label}: the world changed")
    return tally


# --- mcp: every line answered, clients that hang up --------------------------------------------------


def _mcp_start(root: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "NARR_NO_SERVER": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(root), "mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _mcp_send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "stress", "version": "1"}}})
    _mcp_answer(proc, 120)
    _mcp_send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc


def _mcp_send(proc: subprocess.Popen[bytes], message: Any) -> None:
    assert proc.stdin is not None
    proc.stdin.write((message if isinstance(message, bytes) else json.dumps(message).encode()) + b"\n")
    proc.stdin.flush()


def _mcp_answer(proc: subprocess.Popen[bytes], timeout: float = 30) -> Any:
    import select

    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        return None
    line = proc.stdout.readline()
    return json.loads(line) if line else None


MCP_LINES: list[tuple[bytes, int | None]] = [  # the line, and the error code it must get (None: a result)
    (b"not json", -32700), (b'{"jsonrpc": "2.0", "id": 1', -32700), (b"\xff\xfe{}", -32700),
    (b"[]", -32600), (b"[1, 2]", -32600), (b"42", -32600), (b"{}", -32600),
    (b'{"jsonrpc": "2.0", "id": 7}', -32600),
    (b'{"jsonrpc": "1.0", "id": 8, "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": 9, "method": 5}', -32600),
    (b'{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "search", '
     b'"arguments": {"q": "\\ud800"}}}', None),
    (b'{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "event", '
     b'"arguments": {"content": "A beat \\udfff"}}}', None),
    (b'{"jsonrpc": "2.0", "id": 12, "method": "resources/read", "params": {"uri": "narr://node/\\ud800"}}',
     -32602),
    (b'{"jsonrpc": "2.0", "id": 13, "method": "tools/list"}', None),
]


def run_mcp(scratch: Path) -> Tally:
    tally = Tally()
    try:
        import mcp  # noqa: F401
    except ImportError:
        tally.count("skipped: the mcp package is not installed")
        return tally
    root = new_world(scratch / "mcp-world", "flat")
    before = snapshot(root)
    proc = _mcp_start(root)
    for line, code in MCP_LINES:
        tally.tried += 1
        tally.count("mcp lines")
        _mcp_send(proc, line)
        answer = _mcp_answer(proc)
        if answer is None:
            tally.fail("hangs", f"mcp: no answer to {line[:80]!r}")
            break
        got = (answer.get("error") or {}).get("code")
        if got != code or (code is None and answer.get("result", {}).get("isError") is None
                           and "tools" not in answer.get("result", {})):
            tally.fail("mcp answered wrongly", f"{line[:80]!r}: {json.dumps(answer)[:300]}")
    assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
    proc.stdin.close()
    proc.wait(60)
    log = proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    if "Traceback" in log:
        tally.fail("tracebacks", f"mcp: {log[-1000:]}")
    if snapshot(root) != before:
        tally.fail("writes outside the world", "mcp: refused calls changed the world")
    chapter = ("Lin Yuan walks to the ferry with the black ring. Su Qing waits at the gate. " * 13_000)
    for how in ("kill", "input", "output"):
        tally.tried += 1
        tally.count("mcp hang-ups")
        proc = _mcp_start(root)
        _mcp_send(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "audit", "arguments": {"text": chapter[:999_000]}}})
        time.sleep(1.5)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        if how in ("kill", "input"):
            proc.stdin.close()
        if how in ("kill", "output"):
            proc.stdout.close()
        try:
            proc.wait(45)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            tally.fail("hangs", f"mcp: still running 45 s after its client hung up ({how})")
        log = proc.stderr.read().decode()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
        if "Traceback" in log or "ExceptionGroup" in log:
            tally.fail("tracebacks", f"mcp hang-up ({how}): {log[-1000:]}")
        elif log.count("\n") != 1:
            tally.fail("mcp log", f"hang-up ({how}): {log!r}")
    return tally


# --- chains: no event left to the reflog ---------------------------------------------------------


def run_chains(scratch: Path, sessions: int, seed: int) -> Tally:
    """Random sessions of time travel through the library; every event ever made must stay on a
    story line or an abandoned chain."""
    import narrative as narr_lib
    from narrative.engine.branches import create_branch, delete_branch, switch
    from narrative.engine.merge import merge
    from narrative.engine.replay import drop_chain, replay
    from narrative.engine.reset import reset
    from narrative.engine.setaside import drop_set_aside, restore
    from narrative.errors import NarrError
    from narrative.store.worldrepo import WorldRepo

    tally = Tally()
    rng = random.Random(seed)
    ops = ["event", "event", "edit", "reset", "replay", "chains-drop", "edits-drop", "restore",
           "switch", "merge", "branch-delete"]
    for s in range(sessions):
        root = new_world(scratch / f"chains-{s}", "flat")
        wr = WorldRepo.open(root)
        seen: set[str] = set()
        try:
            for n in range(12):
                op = rng.choice(ops)
                tally.tried += 1
                tally.count(f"chains: {op}")
                with contextlib.suppress(NarrError):
                    if op == "event":
                        narr_lib.event(wr, f"step {n}", narr_lib.SetOp(target="lin-yuan",
                                                                       field="/state/mood", value=f"m{n}"))
                    elif op == "edit":
                        path = node_file(root, "su-qing", "character")
                        node = json.loads(path.read_text(encoding="utf-8"))
                        node["state"]["note"] = f"hm{n}x"
                        path.write_text(json.dumps(node, indent=2), encoding="utf-8")
                    elif op == "reset":
                        reset(wr, f"HEAD~{rng.randint(1, 3)}", hard=rng.random() < 0.3)
                    elif op == "replay":
                        replay(wr, str(rng.randint(1, 2)), reuse=True)
                    elif op == "chains-drop":
                        drop_chain(wr, str(rng.randint(1, 2)))
                    elif op == "edits-drop":
                        drop_set_aside(wr, str(rng.randint(1, 2)))
                    elif op == "restore":
                        restore(wr, "1", force=rng.random() < 0.5)
                    elif op == "switch":
                        name = rng.choice(["main", "alt"])
                        if name not in wr.repo.branches.local:
                            create_branch(wr, name)
                        switch(wr, name, set_aside=True)
                    elif op == "merge":
                        merge(wr, rng.choice(["main", "alt"]))
                    else:
                        delete_branch(wr, rng.choice(["main", "alt"]))
                seen |= _events_reached(wr, every=True)
                missing = seen - _events_reached(wr, every=False)
                if missing:
                    tally.fail("events lost", f"session {s} step {n} ({op}): {len(missing)} event(s) "
                                              "held only by the reflog")
                    break
            code, _, err = narr(root, "check")
            if code != 0:
                tally.fail("states check rejected", f"session {s}: {err[:300]}")
        finally:
            wr.close()
    return tally


def _events_reached(wr: Any, *, every: bool) -> set[str]:
    """Events the story lines and abandoned chains hold; ``every``: any ref or reflog entry."""
    import pygit2

    from narrative.store import records

    repo = wr.repo
    tips: set[Any] = set()
    for name in [*repo.references, "HEAD"]:
        if not every and not name.startswith(("refs/heads/", "refs/narr/abandoned/")):
            continue
        with contextlib.suppress(KeyError, ValueError, pygit2.GitError):
            tips.add(repo.references[name].peel(pygit2.Commit).id if name != "HEAD"
                     else repo.head.peel(pygit2.Commit).id)
        if every:
            with contextlib.suppress(KeyError, pygit2.GitError):
                for entry in repo.references[name].log():
                    tips |= {o for o in (entry.oid_new, entry.oid_old)
                             if isinstance(repo.get(o), pygit2.Commit)}
    if not tips:
        return set()
    walker = repo.walk(None, pygit2.enums.SortMode.NONE)
    for tip in tips:
        walker.push(tip)
    return {str(c.id) for c in walker if (rec := records.decode_checked(c.message)) is not None
            and rec.get("kind", "event") == "event"}


# --- the report ----------------------------------------------------------------------------------


def report(parts: dict[str, Tally], profile: str, seed: int, took: float) -> str:
    lines = [f"narr stress, profile {profile}, seed {seed}, {took:.0f} s", "",
             "| what was tried | times | failures |", "| --- | ---: | ---: |"]
    names = {"kills": "SIGKILL at a random moment (event, reset, replay, revert, switch, "
                      "restore; both layouts)",
             "writers": "concurrent writers (commands told done)",
             "bad_inputs": "bad inputs from the corpus",
             "disk": "full disk and read-only world",
             "exports": "vault exports killed, hostile export paths and markers",
             "png": "PNG card bombs and --png images that never end",
             "mcp": "narr mcp: bad lines, clients that hang up",
             "chains": "time-travel sessions (every event kept)"}
    for key, tally in parts.items():
        lines.append(f"| {names[key]} | {tally.tried} | {len(tally.failures)} |")
    lines += ["", "| count | value |", "| --- | ---: |"]
    totals: dict[str, int] = {}
    for key in ("runs", "states check rejected", "hand edits lost", "events lost", "fsck errors",
                "bad inputs passed", "tracebacks", "writes outside the world", "hangs"):
        totals[key] = 0
    totals["runs"] = sum(t.tried for t in parts.values())
    for tally in parts.values():
        for key, value in tally.counts.items():
            if key in totals and key != "runs":
                totals[key] += value
    for key, value in totals.items():
        lines.append(f"| {key} | {value} |")
    for key, tally in parts.items():
        extra = {k: v for k, v in tally.counts.items() if k not in totals}
        if extra:
            lines.append(f"| {key}: " + ", ".join(f"{k} {v}" for k, v in sorted(extra.items()))
                         + " | |")
    failures = [f for t in parts.values() for f in t.failures]
    if failures:
        lines += ["", f"{len(failures)} failure(s):"] + [f"- {f}" for f in failures[:50]]
    return "\n".join(lines) + "\n"


ALL_PARTS = ("kills", "writers", "bad_inputs", "disk", "exports", "png", "mcp", "chains")


def run(profile: str, *, seed: int = 20261130, kills: int | None = None,
        scratch: Path | None = None, parts: tuple[str, ...] = ALL_PARTS,
        log: Callable[[str], None] = lambda s: None) -> dict[str, Tally]:
    """Run the campaign; the tallies by part."""
    prof = PROFILES[profile]
    own = scratch is None
    base = Path(tempfile.mkdtemp(prefix="narr-stress-")) if scratch is None else scratch
    out: dict[str, Tally] = {}
    try:
        if "kills" in parts:
            log("kills...")
            out["kills"] = run_kills(base, prof.kills if kills is None else kills, seed, log)
        if "writers" in parts:
            log("concurrent writers...")
            out["writers"] = run_writers(base, prof.writers, prof.events_per_writer)
        if "bad_inputs" in parts:
            log("bad inputs...")
            out["bad_inputs"] = run_bad_inputs(base)
        if "disk" in parts and prof.disk:
            log("full disk, read-only world...")
            out["disk"] = run_disk(base)
        if "exports" in parts:
            log("exports...")
            out["exports"] = run_exports(base, prof.export_kills, seed)
        if "png" in parts:
            log("png bombs...")
            out["png"] = run_png(base)
        if "mcp" in parts:
            log("narr mcp...")
            out["mcp"] = run_mcp(base)
        if "chains" in parts:
            log("time-travel sessions...")
            out["chains"] = run_chains(base, prof.sessions, seed)
    finally:
        if own:
            shutil.rmtree(base, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    for name in PROFILES:
        group.add_argument(f"--{name}", dest="profile", action="store_const", const=name,
                           help=f"the {name} profile")
    parser.add_argument("--kills", type=int, help="how many killed runs (default: the profile's)")
    parser.add_argument("--seed", type=int, default=20261130, help="the random seed")
    parser.add_argument("--json", action="store_true", help="print the tallies as JSON")
    parser.add_argument("--only", choices=ALL_PARTS, action="append",
                        help="run only this part (repeatable; default: all)")
    args = parser.parse_args(argv)
    profile = args.profile or "quick"
    home = Path(tempfile.mkdtemp(prefix="narr-stress-home-"))
    isolate_git(home)
    sys.path.insert(0, str(ROOT))
    t0 = time.monotonic()
    try:
        parts = run(profile, seed=args.seed, kills=args.kills, parts=tuple(args.only or ALL_PARTS),
                    log=lambda s: print(s, file=sys.stderr, flush=True))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.json:
        print(json.dumps({k: {"tried": t.tried, "counts": t.counts, "failures": t.failures}
                          for k, t in parts.items()}, indent=2))
    else:
        print(report(parts, profile, args.seed, time.monotonic() - t0), end="")
    return 1 if any(t.failures for t in parts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
