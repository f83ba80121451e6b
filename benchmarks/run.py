#!/usr/bin/env python
"""narr benchmarks: narr side by side with plain git, and the engine in-process.

    python benchmarks/run.py --quick     # 1k and 10k nodes, a 1k-event history: a few minutes
    python benchmarks/run.py --full      # adds 100k nodes and a 10k-event history
    python benchmarks/run.py --smoke     # tiny sizes, seconds: checks the harness itself

Generated worlds and histories are cached under a scratch directory outside the
repository (``--scratch``, default ``$NARR_BENCH_DIR`` or ``<tmp>/narr-bench``),
so reruns skip generation. Results go to ``benchmarks/results/latest.{md,json}``
(``--out`` to change). Every timed command runs as a fresh process.

narr's server is on by default; the ``auto`` section measures narr so, with nothing
set. Every other row labelled ``narr`` runs it cold (``NARR_NO_SERVER=1`` in this
harness's environment, as on a CI machine), and a row "with a server" through a
server started for it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

HISTORY_VERSION = 1


# --- profiles ---------------------------------------------------------------------------


@dataclass
class Profile:
    name: str
    sessions: list[tuple[str, int]]  # (layout, nodes): A/B comparisons and in-process events
    engine_only: list[tuple[str, int]]  # (layout, nodes): in-process events only
    history_world: tuple[str, int]  # the world histories are made on
    histories: list[int]  # history lengths; reads and check use the longest
    rounds: int
    read_rounds: int
    startup_rounds: int
    engine_events: int
    engine_events_large: int  # at 100k nodes and more

    def engine_n(self, nodes: int) -> int:
        return self.engine_events_large if nodes >= 100_000 else self.engine_events


PROFILES = {
    "smoke": Profile("smoke", sessions=[("sharded", 100)], engine_only=[("flat", 100)],
                     history_world=("sharded", 100), histories=[15], rounds=1, read_rounds=1,
                     startup_rounds=1, engine_events=5, engine_events_large=5),
    "quick": Profile("quick", sessions=[("sharded", 1_000), ("sharded", 10_000), ("flat", 10_000)],
                     engine_only=[("flat", 1_000)], history_world=("sharded", 10_000),
                     histories=[1_000], rounds=5, read_rounds=9, startup_rounds=18, engine_events=60,
                     engine_events_large=40),
    "full": Profile("full", sessions=[("sharded", 1_000), ("sharded", 10_000), ("flat", 10_000),
                                      ("sharded", 100_000)],
                    engine_only=[("flat", 1_000), ("flat", 3_000), ("sharded", 3_000)],
                    history_world=("sharded", 10_000),
                    histories=[1_000, 10_000], rounds=9, read_rounds=15, startup_rounds=30,
                    engine_events=200, engine_events_large=100),
}


def human(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- environment ------------------------------------------------------------------------


def isolate_env(scratch: Path) -> None:
    """A fixed git identity and no system or user git configuration, for narr and git alike.

    Must run before pygit2 is imported: libgit2 reads HOME once.
    """
    home = scratch / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench Author\n\temail = bench@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
        # Both sides would otherwise start a background `git gc --auto` now and then (git
        # after a commit, narr after an event) that competes for the cores with the rounds
        # being timed; packing is measured on its own (repository growth).
        "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n", encoding="utf-8")
    for key in list(os.environ):
        if key.startswith(("GIT_", "NARR_")) or key in ("PYTHONDONTWRITEBYTECODE", "CI"):
            del os.environ[key]
    # An installed narr has its bytecode compiled; keep it out of the source tree.
    os.environ["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    # Cold unless a row says otherwise (auto.served_env: the environment of a fresh install).
    os.environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                       "XDG_CACHE_HOME": str(home / ".cache"), "NARR_AUTO_GC": "0",
                       "NARR_NO_SERVER": "1",
                       "GIT_CONFIG_NOSYSTEM": "1", "GIT_PAGER": "cat", "PAGER": "cat",
                       "LC_ALL": "C.UTF-8", "TZ": "UTC"})


def compile_narr() -> None:
    """Compile narr's modules into the bytecode cache first, as an installed narr has them.

    The first fresh process would otherwise compile them inside a timed round, and
    where ``PYTHONDONTWRITEBYTECODE`` was set none would keep its bytecode at all.
    """
    import importlib.util

    spec = importlib.util.find_spec("narrative")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        return
    for where in spec.submodule_search_locations:
        subprocess.run([sys.executable, "-m", "compileall", "-q", where], check=False,
                       capture_output=True)


# --- the harness ------------------------------------------------------------------------


@dataclass
class Bench:
    profile: Profile
    scratch: Path
    out: Path
    regen: bool
    narr: str
    sections: set[str]
    results: dict[str, Any] = field(default_factory=dict)
    diffuser_flag: list[str] = field(default_factory=list)
    reset_flags: list[str] | None = None
    reset_note: str = ""
    has_server: bool = False

    @property
    def cache(self) -> Path:
        return self.scratch / "cache"

    @property
    def work(self) -> Path:
        return self.scratch / "work"

    def want(self, section: str) -> bool:
        return not self.sections or section in self.sections

    def add(self, key: str, item: Any) -> None:
        self.results.setdefault(key, []).append(item)

    # --- worlds ---------------------------------------------------------------------------

    def world(self, layout: str, nodes: int) -> tuple[Path, dict[str, Any]]:
        """A cached genesis world (made once, then reused)."""
        from worldgen import WorldSpec, build_world

        spec = WorldSpec(nodes, layout)
        path = self.cache / spec.key
        meta = self.cache / f"{spec.key}.json"
        if self.regen and meta.exists() and spec.key not in self.results.get("_regenerated", []):
            meta.unlink()
        if not meta.exists():
            shutil.rmtree(path, ignore_errors=True)
            log(f"generating a {human(nodes)}-node {layout} world")
            t0 = time.perf_counter()
            info = build_world(path, spec)
            info["generation_s"] = round(time.perf_counter() - t0, 2)
            meta.write_text(json.dumps(info), encoding="utf-8")
            self.results.setdefault("_regenerated", []).append(spec.key)
            log(f"  done in {info['generation_s']} s")
        return path, json.loads(meta.read_text(encoding="utf-8"))

    def history(self, layout: str, nodes: int, events: int) -> tuple[Path, dict[str, Any]]:
        """A cached world with ``events`` events made through the library on top of its genesis."""
        from history import extend_history
        from worldgen import WorldSpec

        import narrative

        base_key = f"hist-{WorldSpec(nodes, layout).key}-h{HISTORY_VERSION}-narr{narrative.__version__}"
        key = f"{base_key}-e{events}"
        path = self.cache / key
        meta = self.cache / f"{key}.json"
        if self.regen and meta.exists() and key not in self.results.get("_regenerated", []):
            meta.unlink()
        if meta.exists():
            return path, json.loads(meta.read_text(encoding="utf-8"))
        shutil.rmtree(path, ignore_errors=True)
        # Extend the longest shorter history already made, else start from the genesis world.
        start, src = 0, self.world(layout, nodes)[0]
        made = []
        for m in self.cache.glob(f"{base_key}-e*.json"):
            n = int(m.stem.rsplit("-e", 1)[1])
            if n < events:
                made.append((n, m))
        if made:
            start, m = max(made)
            src = self.cache / m.stem
            made_info = json.loads(m.read_text(encoding="utf-8"))
        copy_tree(src, path)
        refresh_index(path)
        log(f"making a {human(events)}-event history on the {human(nodes)}-node {layout} world "
            f"(from event {start})")

        def progress(done: int, total: int, elapsed: float) -> None:
            if done % 1000 == 0 or done == total:
                log(f"  {done}/{total} events, {done / elapsed:.1f} events/s")

        facts = extend_history(path, events - start, start=start, progress=progress)
        runs = [*(made_info["runs"] if made else []), {"from": start, **facts}]
        info = {"events": events, "nodes": nodes, "layout": layout, "runs": runs}
        meta.write_text(json.dumps(info), encoding="utf-8")
        self.results.setdefault("_regenerated", []).append(key)
        return path, info

    def copy(self, src: Path, name: str) -> Path:
        dst = self.work / name
        shutil.rmtree(dst, ignore_errors=True)
        copy_tree(src, dst)
        refresh_index(dst)
        return dst

    # --- commands ---------------------------------------------------------------------------

    def narr_cmd(self, *args: str) -> list[str]:
        return [self.narr, *args]

    def client_cmd(self, *args: str) -> list[str]:
        """The ``narr`` command as installed: a thin client, which hands commands to a running
        server (``python -m narrative`` would add runpy's start-up to every command)."""
        return [self.narr, *args]


@contextmanager
def served(bench: Bench, root: Path | None) -> Iterator[Path | None]:
    """``narr serve --detach`` on ``root`` for the block (nothing when this narr has no server)."""
    if root is None:
        yield None
        return
    subprocess.run(bench.client_cmd("-C", str(root), "serve", "--detach"), check=True,
                   capture_output=True, env=served_env())
    try:
        yield root
    finally:
        subprocess.run(bench.client_cmd("-C", str(root), "serve", "--stop"), capture_output=True,
                       env=served_env())


def copy_tree(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


def refresh_index(root: Path) -> None:
    """A copy has new inodes and ctimes: refresh the index's stat data once, as a clone would have it.

    (narr itself never refreshes it: with a stale index every narr command hashes every node file.)
    """
    subprocess.run(["git", "-C", str(root), "update-index", "-q", "--refresh"], check=False)


def detect_cli(bench: Bench) -> None:
    """Which optional flags and commands this narr has (they are being added as we go)."""
    help_event = subprocess.run(bench.narr_cmd("event", "--help"), capture_output=True, text=True)
    if "--diffuser" in help_event.stdout:
        bench.diffuser_flag = ["--diffuser", "explicit"]
    serve = subprocess.run(bench.client_cmd("serve", "--help"), capture_output=True, text=True)
    bench.has_server = serve.returncode == 0
    reset = subprocess.run(bench.narr_cmd("reset", "--help"), capture_output=True, text=True)
    if reset.returncode == 0:
        flags = []
        for flag in ("--yes", "--force"):  # a confirmation flag, if reset asks for one
            if flag in reset.stdout and "confirm" in reset.stdout.lower():
                flags.append(flag)
                break
        bench.reset_flags = flags
    else:
        bench.reset_note = "`narr reset` does not exist in this build: the reset comparison was skipped"


# --- sections ---------------------------------------------------------------------------

from auto import served_env  # noqa: E402
from timing import (  # noqa: E402
    Run,
    Series,
    Variant,
    alternate,
    fmt_s,
    peak_rss_mib,
    ratio,
    run_sequence,
    run_timed,
    run_with_rss,
)


def comparison(bench: Bench, op: str, git_op: str, world: str, series: list[Series],
               **extra: Any) -> dict[str, Any]:
    narr, git = series[0], series[1]
    item = {"op": op, "git_op": git_op, "world": world, "narr": narr.to_json(), "git": git.to_json(),
            "ratio": round(ratio(narr, git), 3), "load_1m": round(os.getloadavg()[0], 2), **extra}
    if len(series) > 2:
        item["others"] = [s.to_json() for s in series[2:]]
    bench.add("comparisons", item)
    log(f"  {op:<28} {world:<34} narr {fmt_s(narr.median):>8}  git {fmt_s(git.median):>8}  "
        f"x{item['ratio']:.2f}")
    return item


def section_startup(bench: Bench) -> None:
    log("CLI start-up")
    cwd = bench.scratch
    variants = [
        Variant("narr --version", lambda r: run_timed(bench.narr_cmd("--version"), cwd)),
        Variant("git --version", lambda r: run_timed(["git", "--version"], cwd)),
        Variant("python -c pass", lambda r: run_timed([sys.executable, "-c", "pass"], cwd)),
        Variant("python -c 'import pygit2'",
                lambda r: run_timed([sys.executable, "-c", "import pygit2"], cwd)),
        Variant("python -c 'import narrative.cli'",
                lambda r: run_timed([sys.executable, "-c", "import narrative.cli"], cwd)),
        # What a cold command pays before any work, by dependency: click for every command,
        # pygit2 for what writes or compares the working tree, pydantic and narr's models
        # for an event.
        Variant("python -c 'import click'",
                lambda r: run_timed([sys.executable, "-c", "import click"], cwd)),
        Variant("python -c 'import narrative.model'",
                lambda r: run_timed([sys.executable, "-c", "import narrative.model"], cwd)),
    ]
    series = alternate(variants, bench.profile.startup_rounds, warmup=min(2, bench.profile.startup_rounds))
    comparison(bench, "narr --version", "git --version", "no world", series,
               python_pass_median_s=round(series[2].median, 5))


def _three_targets(info: dict[str, Any], rng: random.Random) -> list[tuple[str, str]]:
    return [tuple(x) for x in rng.sample(info["permanent"], 3)]  # type: ignore[misc]


def _round_targets(info: dict[str, Any], rng: random.Random) -> Callable[[int], list[tuple[str, str]]]:
    """Three nodes for each round, drawn once: every side of an A/B round changes the same ones."""
    plan: dict[int, list[tuple[str, str]]] = {}

    def targets(r: int) -> list[tuple[str, str]]:
        if r not in plan:
            plan[r] = _three_targets(info, rng)
        return plan[r]

    return targets


def _edit_file(root: Path, layout: str, node_id: str, layer: str, key: str, value: str) -> None:
    from narrative.ids import node_path
    from narrative.nodefile import dump

    path = root / node_path(node_id, layer, layout)  # type: ignore[arg-type]
    node = json.loads(path.read_bytes())
    node["state"][key] = value
    path.write_bytes(dump(node))


def _git_commit_steps(root: Path, message: str) -> Run:
    return run_sequence([["git", "add", "-A"], ["git", "commit", "-q", "-m", message]], root)


def section_session(bench: Bench, layout: str, nodes: int) -> None:
    """Event, reset and status side by side with git, then events in-process, on one world size."""
    src, info = bench.world(layout, nodes)
    world = f"{human(nodes)} nodes, {layout}"
    a = bench.copy(src, f"{layout}-{nodes}-narr")
    b = bench.copy(src, f"{layout}-{nodes}-git")
    # A third copy for the same commands through the thin client and a running server.
    c = bench.copy(src, f"{layout}-{nodes}-served") if bench.has_server else None
    rounds = bench.profile.rounds
    rng = random.Random(nodes)
    log(f"session: {world}")
    with served(bench, c):
        _session(bench, a, b, c, info, layout, nodes, world, rounds, rng)
    for root in (a, b, c):
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


def _session(bench: Bench, a: Path, b: Path, c: Path | None, info: dict[str, Any], layout: str,
             nodes: int, world: str, rounds: int, rng: random.Random) -> None:

    if bench.want("event"):
        targets = _round_targets(info, rng)

        def narr_event(r: int) -> Run:
            sets = []
            for node_id, _layer in targets(r):
                sets += ["--set", f"{node_id}.state.mood=mood of round {r}"]
            return run_timed(bench.narr_cmd("event", f"Round {r}: three things change", *sets,
                                            *bench.diffuser_flag), a)

        def git_event(r: int) -> Run:
            t0 = time.perf_counter()
            for node_id, layer in targets(r):
                _edit_file(b, layout, node_id, layer, "mood", f"mood of round {r}")
            run = _git_commit_steps(b, f"Round {r}: three things change")
            return Run(time.perf_counter() - t0, run.cpu_s)

        def served_event(r: int) -> Run:
            assert c is not None
            sets = []
            for node_id, _layer in targets(r):
                sets += ["--set", f"{node_id}.state.mood=mood of round {r}"]
            return run_timed(bench.client_cmd("event", f"Round {r}: three things change", *sets,
                                              *bench.diffuser_flag), c, env=served_env())

        variants = [Variant("narr event (3 --set)", narr_event),
                    Variant("write 3 files; git add -A && git commit", git_event)]
        if c is not None:
            variants.append(Variant("narr event (3 --set), with a server", served_event))
        series = alternate(variants, rounds)
        comparison(bench, "narr event (3 --set)", "write 3 files; git add -A && git commit", world,
                   series, nodes=nodes, layout=layout)
        # Peak memory of one more event on each side, measured outside this (large) process.
        sets = []
        for node_id, layer in _three_targets(info, rng):
            sets += ["--set", f"{node_id}.state.mood=measured"]
            _edit_file(b, layout, node_id, layer, "mood", "measured")
        narr_mib = peak_rss_mib(bench.narr_cmd("event", "Memory is measured", *sets, *bench.diffuser_flag), a)
        add_mib = peak_rss_mib(["git", "add", "-A"], b)
        commit_mib = peak_rss_mib(["git", "commit", "-q", "-m", "Memory is measured"], b)
        if narr_mib is not None:
            bench.add("memory", {"world": world, "nodes": nodes, "layout": layout,
                                 "narr_event_mib": narr_mib, "git_add_mib": add_mib,
                                 "git_commit_mib": commit_mib})
            log(f"  peak RSS: narr event {narr_mib} MiB, git add -A {add_mib} MiB, "
                f"git commit {commit_mib} MiB")

    if bench.want("reset"):
        section_reset(bench, a, b, info, layout, nodes, world, c)

    if bench.want("status"):
        for label, edits in (("clean", 0), ("5 hand edits", 5)):
            saved: list[tuple[Path, bytes]] = []
            if edits:
                from narrative.ids import node_path

                for node_id, layer in rng.sample(info["permanent"], edits):
                    for root in (a, c):
                        if root is None:
                            continue
                        path = root / node_path(node_id, layer, layout)  # type: ignore[arg-type]
                        saved.append((path, path.read_bytes()))
                        _edit_file(root, layout, node_id, layer, "note", "changed by hand")
            variants = [Variant("narr status", lambda r: run_timed(bench.narr_cmd("status"), a)),
                        Variant("git status", lambda r: run_timed(["git", "status"], a))]
            if c is not None:
                variants.append(Variant("narr status, with a server",
                                        lambda r: run_timed(bench.client_cmd("status"), c,
                                                            env=served_env())))
            series = alternate(variants, bench.profile.read_rounds)
            comparison(bench, f"narr status ({label})", "git status", world, series,
                       nodes=nodes, layout=layout)
            for path, data in saved:
                path.write_bytes(data)

    if bench.want("engine"):
        engine_events(bench, a, info, layout, nodes)

    if bench.want("event"):
        t0 = time.perf_counter()
        proc = subprocess.run(bench.narr_cmd("check", "--history-only"), cwd=a, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            bench.add("notes", f"narr check --history-only failed on the {world} benchmark world: "
                               f"{proc.stdout[-500:]}{proc.stderr[-500:]}")
            log(f"  CHECK FAILED: {proc.stdout[-300:]} {proc.stderr[-300:]}")
        else:
            log(f"  narr check --history-only ok ({time.perf_counter() - t0:.1f} s)")


def section_reset(bench: Bench, a: Path, b: Path, info: dict[str, Any], layout: str, nodes: int,
                  world: str, c: Path | None = None) -> None:
    """``narr reset HEAD~3`` vs ``git reset --hard HEAD~3``, three fresh events undone each round."""
    if bench.reset_flags is None:
        return
    rng = random.Random(nodes + 3)

    def narr_prepare(r: int) -> None:
        from narrative.delta.request import EventRequest
        from narrative.engine.event import run_event
        from narrative.model import Delta, SetOp
        from narrative.store.worldrepo import WorldRepo

        wr = WorldRepo.open(a)
        try:
            for k in range(3):
                ops = [SetOp(target=t, field="/state/mood", value=f"reset round {r}.{k}")
                       for t, _ in _three_targets(info, rng)]
                run_event(wr, EventRequest(content=f"To be undone {r}.{k}", delta=Delta(ops=ops)))
        finally:
            wr.close()

    def git_prepare(r: int) -> None:
        for k in range(3):
            for node_id, layer in _three_targets(info, rng):
                _edit_file(b, layout, node_id, layer, "mood", f"reset round {r}.{k}")
            _git_commit_steps(b, f"To be undone {r}.{k}")

    def served_prepare(r: int) -> None:
        # Through the server too, so that its file watcher knows the index these events leave.
        assert c is not None
        for k in range(3):
            sets = []
            for t, _ in _three_targets(info, rng):
                sets += ["--set", f"{t}.state.mood=reset round {r}.{k}"]
            subprocess.run(bench.client_cmd("event", f"To be undone {r}.{k}", *sets,
                                            *bench.diffuser_flag), cwd=c, check=True,
                           capture_output=True, env=served_env())

    variants = [
        Variant("narr reset HEAD~3",
                lambda r: run_timed(bench.narr_cmd("reset", "HEAD~3", *(bench.reset_flags or [])), a),
                prepare=narr_prepare),
        Variant("git reset --hard HEAD~3",
                lambda r: run_timed(["git", "reset", "-q", "--hard", "HEAD~3"], b), prepare=git_prepare),
    ]
    if c is not None:
        variants.append(Variant(
            "narr reset HEAD~3, with a server",
            lambda r: run_timed(bench.client_cmd("reset", "HEAD~3", *(bench.reset_flags or [])), c,
                                env=served_env()),
            prepare=served_prepare))
    series = alternate(variants, bench.profile.rounds)
    comparison(bench, "narr reset HEAD~3", "git reset --hard HEAD~3", world, series,
               nodes=nodes, layout=layout)


def engine_events(bench: Bench, root: Path, info: dict[str, Any], layout: str, nodes: int) -> None:
    """Events per second through the library, three diffusions each."""
    from narrative.delta.request import EventRequest
    from narrative.engine.event import run_event
    from narrative.model import Delta, SetOp
    from narrative.store.worldrepo import WorldRepo

    try:
        from narrative.store.batch import batch
    except ImportError:  # a narr without batch mode
        batch = None
    n = bench.profile.engine_n(nodes)
    rng = random.Random(nodes * 7)
    wr = WorldRepo.open(root)

    def one(i: int) -> None:
        ops = [SetOp(target=t, field="/state/mood", value=f"in-process {i}")
               for t, _ in _three_targets(info, rng)]
        run_event(wr, EventRequest(content=f"In-process event {i}", delta=Delta(ops=ops)))

    try:
        for i in range(3):
            one(-1 - i)
        loose_before = _loose_kib(root)
        times = []
        t_all = time.perf_counter()
        for i in range(n):
            t0 = time.perf_counter()
            one(i)
            times.append(time.perf_counter() - t0)
        total = time.perf_counter() - t_all
        loose_per_event = (_loose_kib(root) - loose_before) / n
        batch_total = None
        if batch is not None:  # many events under one lock, one scan and one index write
            t_all = time.perf_counter()
            with batch(wr):
                for i in range(n):
                    one(n + i)
            batch_total = time.perf_counter() - t_all
    finally:
        wr.close()
    times.sort()
    item = {"nodes": nodes, "layout": layout, "events": n, "events_per_s": round(n / total, 2),
            "median_ms": round(times[len(times) // 2] * 1000, 2),
            "p90_ms": round(times[int(len(times) * 0.9)] * 1000, 2),
            "loose_kib_per_event": round(loose_per_event, 1)}
    if batch_total is not None:
        item["batch_events_per_s"] = round(n / batch_total, 2)
    bench.add("engine", item)
    in_batch = f"; {item['batch_events_per_s']} events/s in batch()" if batch_total is not None else ""
    log(f"  in-process: {item['events_per_s']} events/s ({item['median_ms']} ms median){in_batch} "
        f"at {human(nodes)} nodes, {layout}")


def section_engine_only(bench: Bench, layout: str, nodes: int) -> None:
    src, info = bench.world(layout, nodes)
    log(f"in-process events: {human(nodes)} nodes, {layout}")
    a = bench.copy(src, f"{layout}-{nodes}-engine")
    engine_events(bench, a, info, layout, nodes)
    shutil.rmtree(a, ignore_errors=True)


def section_histories(bench: Bench) -> None:
    """Histories through the library; light reads, check and repository growth on the longest."""
    layout, nodes = bench.profile.history_world
    for events in bench.profile.histories:
        _, info = bench.history(layout, nodes, events)
        for run in info["runs"]:
            if any(h["from_event"] == run["from"] for h in bench.results.get("history_generation", [])):
                continue
            bench.add("history_generation", {"nodes": nodes, "layout": layout, "from_event": run["from"],
                                             "events": run["events"],
                                             "events_per_s": round(run["events_per_s"], 2)})
    events = max(bench.profile.histories)
    src, _ = bench.history(layout, nodes, events)
    world = f"{human(events)}-event history, {human(nodes)} nodes, {layout}"
    a = bench.copy(src, "history")
    if bench.want("reads"):
        section_reads(bench, a, world, layout, nodes, events)
    if bench.want("bulk"):
        section_bulk(bench, src, world, layout, nodes)
    if bench.want("check"):
        section_check(bench, a, events, world)
    if bench.want("growth"):
        section_growth(bench, a, layout, nodes, events)
    shutil.rmtree(a, ignore_errors=True)


def section_reads(bench: Bench, a: Path, world: str, layout: str, nodes: int, events: int) -> None:
    log(f"light reads: {world}")
    from narrative.ids import node_path

    _, info = bench.world(layout, nodes)
    node_id, layer = info["permanent"][len(info["permanent"]) // 2]
    path = node_path(node_id, layer, layout)  # type: ignore[arg-type]
    rounds = bench.profile.read_rounds
    pairs = [
        ("narr log -n 20", ["log", "-n", "20"], "git log -n 20", ["log", "-n", "20"]),
        ("narr show HEAD", ["show", "HEAD"], "git show HEAD", ["show", "HEAD"]),
        ("narr get ID", ["get", node_id], "git show HEAD:PATH", ["show", f"HEAD:{path}"]),
        ("narr status (clean)", ["status"], "git status", ["status"]),
    ]
    # The query commands read the event graph and the text index in the derived catalog; the
    # first one after the catalog is deleted indexes the whole history, timed once here.
    for cache in (a / ".git" / "narr").glob("catalog.sqlite*"):
        cache.unlink()
    cold = run_timed(bench.narr_cmd("why", node_id, "name"), a)
    bench.add("query_index_build", {"world": world, "events": events, "nodes": nodes,
                                    "seconds": round(cold.seconds, 3)})
    log(f"  event graph and text index built from {events} events in {fmt_s(cold.seconds)}")
    pairs += [
        ("narr why ID FIELD", ["why", node_id, "name"], "git log -n 1 -- PATH",
         ["log", "-n", "1", "--", path]),
        ("narr history ID", ["history", node_id], "git log --oneline -- PATH",
         ["log", "--oneline", "--", path]),
        ("narr search WORD", ["search", node_id], "git grep WORD", ["grep", "-c", node_id]),
        ("narr brief", ["brief"], "git log -n 5", ["log", "-n", "5"]),
        ("narr brief GOAL", ["brief", f"{node_id} walks to the gate"], "git log -n 5",
         ["log", "-n", "5"]),
    ]
    for op, nargs, git_op, gargs in pairs:
        series = alternate([Variant(op, lambda r, nargs=nargs: run_timed(bench.narr_cmd(*nargs), a)),
                            Variant(git_op, lambda r, gargs=gargs: run_timed(["git", *gargs], a))], rounds)
        comparison(bench, op, git_op, world, series, nodes=nodes, layout=layout, events=events,
                   light_read=op in ("narr log -n 20", "narr show HEAD", "narr get ID"),
                   query=op in QUERIES)
    section_audit(bench, 20 if bench.profile.name == "smoke" else 200)


QUERIES = ("narr why ID FIELD", "narr history ID", "narr search WORD", "narr brief", "narr brief GOAL")

CHAPTER = [  # a chapter on the sample world that keeps to it: deeds, talk, description, two languages
    "Lin Yuan walks to the ferry.", "The rain keeps falling on the river.",
    "Old Zhou lifts the paper lantern and squints at the water.",
    '"The last boat leaves at dusk," Old Zhou says.', "Lin Yuan does not answer.",
    "Su Qing walks to the ferry.", "Su Qing watches Lin Yuan for a long time.",
    "Lin Yuan gives Su Qing the black ring.", "Su Qing turns the ring over in her fingers.",
    "The black ring grows warm.", "苏晴怀疑林远。", "渡口的人越来越多。",
    "Elder Mo walks to the library pavilion.", "Elder Mo tells Su Qing the ring's secret.",
    "Nobody on the ferry speaks of the missing sister.", "Su Qing gives the black ring to Lin Yuan.",
    "林远来到青云山门。", "Lin Yuan leaves the gate.", "If the bell rings, Lin Yuan will run.",
    "Lin Yuan walks to the ferry.",
]


def audit_chapter(sentences: int) -> str:
    """A chapter of ``sentences`` sentences from :data:`CHAPTER`, a paragraph of five each."""
    picked = [CHAPTER[i % len(CHAPTER)] for i in range(sentences)]
    return "\n\n".join(" ".join(picked[i:i + 5]) for i in range(0, len(picked), 5)) + "\n"


def section_audit(bench: Bench, sentences: int = 200) -> None:
    """``narr audit`` of a chapter on the sample world, its catalog warm, as a fresh process."""
    root = bench.work / "audit-sample"
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(bench.narr_cmd("init", str(root), "--sample"), check=True, capture_output=True)
    chapter = root.parent / "audit-chapter.md"
    chapter.write_text(audit_chapter(sentences), encoding="utf-8")
    log(f"narr audit: a {sentences}-sentence chapter on the sample world")

    series = alternate([Variant("narr audit", lambda r: run_timed(
        bench.narr_cmd("audit", str(chapter)), root))], bench.profile.read_rounds)[0]
    item = {"world": "sample world (22 nodes)", "sentences": sentences, **series.to_json()}
    bench.add("audit", item)
    log(f"  {fmt_s(series.median)} median over {len(series.runs)} runs")


def section_bulk(bench: Bench, src: Path, world: str, layout: str, nodes: int) -> None:
    """``narr log -n 20`` with a bulk event among the last 20: one event that absorbed as many
    new nodes, made by hand, as the world holds (a record of megabytes). The log shows its
    number of changes, which should cost a row of the catalog, not a parse of the record."""
    from narrative.ids import node_path
    from narrative.nodefile import dump

    a = bench.copy(src, "history-bulk")
    try:
        log(f"bulk event among the last 20: {world}, {human(nodes)} nodes absorbed at once")
        for i in range(nodes):
            node_id = f"bulk-crate-{i}"
            path = a / node_path(node_id, "item", layout)  # type: ignore[arg-type]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(dump({  # type: ignore[arg-type]
                "id": node_id, "layer": "item", "name": f"Bulk crate {i}", "kind": "crate",
                "lifecycle": "permanent", "aliases": [], "summary": "A crate from the caravan.",
                "traits": {"weight": i % 50}, "state": {"sealed": True}, "relations": {}}))
        bulk = run_timed(bench.narr_cmd("event", "The caravan unloads", *bench.diffuser_flag), a)
        record_mib = len(subprocess.run(["git", "-C", str(a), "cat-file", "commit", "HEAD"],
                                        capture_output=True, check=True).stdout) / 2**20
        for k in range(3):
            subprocess.run(bench.narr_cmd("event", f"After the caravan {k}", *bench.diffuser_flag),
                           cwd=a, capture_output=True, check=True)
        log(f"  the bulk event took {fmt_s(bulk.seconds)}; its record is {record_mib:.1f} MiB")
        where = f"{world}, a bulk event of {human(nodes)} nodes among the last 20"
        series = alternate([
            Variant("narr log -n 20", lambda r: run_timed(bench.narr_cmd("log", "-n", "20"), a)),
            Variant("git log -n 20", lambda r: run_timed(["git", "log", "-n", "20"], a))],
            bench.profile.read_rounds)
        comparison(bench, "narr log -n 20 (bulk event)", "git log -n 20", where, series,
                   nodes=nodes, layout=layout, bulk_record_mib=round(record_mib, 1), light_read=True)
    finally:
        shutil.rmtree(a, ignore_errors=True)


def section_check(bench: Bench, a: Path, events: int, world: str) -> None:
    log(f"narr check: {world}")
    from narrative.engine.check import check
    from narrative.store.worldrepo import WorldRepo

    wr = WorldRepo.open(a)
    try:
        t0 = time.perf_counter()
        report = check(wr, world=False, worktree_too=False)
        history_s = time.perf_counter() - t0
    finally:
        wr.close()
    cli, cli_mib = run_with_rss(bench.narr_cmd("check"), a)
    item = {"world": world, "events": report.events, "ok": report.ok,
            "history_s": round(history_s, 3), "events_per_s": round(report.events / history_s, 1),
            "cli_check_s": round(cli.seconds, 3), "cli_check_peak_rss_mib": cli_mib}
    if not item["ok"]:
        bench.add("notes", f"narr check found problems in the history world: "
                           f"{[str(p) for p in report.problems[:3]]}")
    bench.results["check"] = item
    log(f"  {item['events_per_s']} events/s (history only, in-process); narr check (history and "
        f"every node) {item['cli_check_s']} s, {cli_mib} MiB; ok={item['ok']}")


def _pack_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / ".git" / "objects" / "pack").glob("*.pack"))


def _count_objects(root: Path, key: str) -> int:
    out = subprocess.run(["git", "-C", str(root), "count-objects", "-v"], capture_output=True,
                         text=True, check=True).stdout
    return int(next(line.split()[1] for line in out.splitlines() if line.startswith(f"{key}:")))


def _loose_objects(root: Path) -> int:
    return _count_objects(root, "count")


def _loose_kib(root: Path) -> int:
    """Disk space of the loose objects (what a repository grows by until ``git gc``)."""
    return _count_objects(root, "size")


def section_growth(bench: Bench, a: Path, layout: str, nodes: int, events: int) -> None:
    """Repository bytes per event after ``git gc``, against the compressed size of changed node files."""
    import zlib

    import pygit2

    log("repository growth per event")
    genesis, _ = bench.world(layout, nodes)
    loose = _loose_objects(a)
    subprocess.run(["git", "-C", str(a), "gc", "-q", "--prune=now"], check=True)
    grown = _pack_bytes(a) - _pack_bytes(genesis)
    repo = pygit2.Repository(str(a))
    changed_z = changed_raw = record_z = 0
    n = 0
    commit = repo.head.peel(pygit2.Commit)
    while commit.parents:
        parent = commit.parents[0]
        n += 1
        record_z += len(zlib.compress(commit.message.encode("utf-8")))
        for d in parent.tree.diff_to_tree(commit.tree).deltas:
            if d.status != pygit2.enums.DeltaStatus.DELETED:
                data = repo[d.new_file.id].data
                changed_raw += len(data)
                changed_z += len(zlib.compress(data))
        commit = parent
    repo.free()
    item = {"events": n, "nodes": nodes, "layout": layout,
            "loose_objects_before_gc": loose,
            "pack_growth_bytes": grown, "bytes_per_event": round(grown / n, 1),
            "changed_node_files_compressed_per_event": round(changed_z / n, 1),
            "changed_node_files_raw_per_event": round(changed_raw / n, 1),
            "record_compressed_per_event": round(record_z / n, 1),
            "ratio": round(grown / changed_z, 3) if changed_z else None}
    bench.results["growth"] = item
    log(f"  {item['bytes_per_event']} bytes/event after gc; changed node files "
        f"{item['changed_node_files_compressed_per_event']} bytes compressed (x{item['ratio']}); "
        f"{loose} loose objects before gc")


def wait_idle(limit: float) -> None:
    """Wait (at most ``limit`` seconds) until the 1-minute load average is below half the cores."""
    cores = os.cpu_count() or 1
    deadline = time.monotonic() + limit
    if os.getloadavg()[0] >= cores / 2:
        log(f"waiting for the machine to be idle (load {os.getloadavg()[0]:.1f})")
    while os.getloadavg()[0] >= cores / 2 and time.monotonic() < deadline:
        time.sleep(5)


# --- main -------------------------------------------------------------------------------


SECTIONS = ("startup", "event", "reset", "status", "engine", "reads", "bulk", "check", "growth",
            "import", "studio", "agents", "auto")
AGENT_CALLS = {"smoke": 20, "quick": 200, "full": 200}
IMPORT_NOTES = {"smoke": 30, "quick": 2_000, "full": 2_000}


def section_import(bench: Bench) -> None:
    """``narr import`` of a vault of Markdown notes, in process, twice; of a lorebook, and its
    export (benchmarks/importing.py)."""
    import importing

    notes = IMPORT_NOTES[bench.profile.name]
    log(f"import: a vault of {human(notes)} notes")
    scratch = bench.work / "import"
    scratch.mkdir(parents=True, exist_ok=True)
    item = {**importing.measure(scratch, notes), "load_1m": round(os.getloadavg()[0], 2)}
    bench.add("imports", item)
    log(f"  first {fmt_s(item['first_s'])} (arbiter {fmt_s(item['first_arbiter_s'])}), "
        f"again {fmt_s(item['again_s'])} (arbiter {fmt_s(item['again_arbiter_s'])})")
    log(f"import: a lorebook of {human(notes)} entries, then narr export lorebook")
    book = {**importing.measure_lorebook(scratch / "lorebook", notes),
            "load_1m": round(os.getloadavg()[0], 2)}
    bench.add("lorebooks", book)
    log(f"  import {fmt_s(book['first_s'])}, again {fmt_s(book['again_s'])}, export "
        f"{fmt_s(book['export_s'])}, the export into an empty world {fmt_s(book['reimport_s'])}")


def section_studio(bench: Bench) -> None:
    """The studio in headless chromium: opening the sharded worlds of the profile (benchmarks/studio.py)."""
    import studio

    why = studio.unavailable()
    if why:
        bench.add("notes", f"the studio was not measured: {why}")
        return
    for layout, nodes in bench.profile.sessions:
        if layout != "sharded":
            continue
        log(f"studio: {human(nodes)} nodes")
        src, _ = bench.world(layout, nodes)
        root = bench.copy(src, f"studio-{nodes}")
        rounds = 3 if bench.profile.name == "smoke" else 5
        bench.add("studio", {"world": f"{human(nodes)} {layout}", "nodes": nodes,
                             **studio.measure(root, rounds)})


def section_agents(bench: Bench) -> None:
    """An agent's calls through ``narr mcp`` over stdio on the largest worlds of the profile
    (benchmarks/agents.py): reads and events in a row, per call."""
    import agents

    why = agents.unavailable()
    if why:
        bench.add("notes", f"the agents section was not measured: {why}")
        return
    biggest = max(nodes for _, nodes in bench.profile.sessions)
    for layout, nodes in bench.profile.sessions:
        if nodes != biggest:
            continue
        calls = AGENT_CALLS[bench.profile.name]
        log(f"agents: {calls} MCP reads and {calls} events, {human(nodes)} {layout}")
        src, _ = bench.world(layout, nodes)
        root = bench.copy(src, f"agents-{layout}-{nodes}")
        item = {"world": f"{human(nodes)} {layout}", "nodes": nodes, **agents.measure(root, calls)}
        bench.add("agents", item)
        log(f"  read {fmt_s(item['read_median_s'])} median, event {fmt_s(item['event_median_s'])} median")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_const", dest="profile", const="quick",
                      help="1k and 10k nodes, a 1k-event history (the default)")
    size.add_argument("--full", action="store_const", dest="profile", const="full",
                      help="adds 100k nodes and a 10k-event history")
    size.add_argument("--smoke", action="store_const", dest="profile", const="smoke",
                      help="tiny sizes, one round: checks the harness")
    parser.add_argument("--scratch", type=Path,
                        default=Path(os.environ.get("NARR_BENCH_DIR")
                                     or Path(tempfile.gettempdir()) / "narr-bench"),
                        help="where generated worlds are cached (outside the repository)")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="where latest.md and latest.json are written")
    parser.add_argument("--rounds", type=int, help="A/B rounds per comparison (default: by profile)")
    parser.add_argument("--sizes", default="", metavar="LAYOUT:NODES,...",
                        help="replace the profile's A/B worlds, e.g. sharded:100000,flat:10000")
    parser.add_argument("--histories", default="", metavar="EVENTS,...",
                        help="replace the profile's history lengths, e.g. 1000 (a 10k-event history "
                             "takes an hour or more to make on a loaded machine)")
    parser.add_argument("--only", default="", help=f"comma-separated sections: {', '.join(SECTIONS)}")
    parser.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                        help="before each section, wait up to SECONDS for the machine to be idle")
    parser.add_argument("--regen", action="store_true", help="regenerate cached worlds and histories")
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile or "quick"]
    if args.rounds:
        profile.rounds = args.rounds
        profile.read_rounds = max(args.rounds, 3)
        profile.startup_rounds = max(args.rounds, 3)
    scratch = args.scratch.resolve()
    if scratch == REPO or REPO in scratch.parents:
        parser.error("--scratch must be outside the repository")
    if args.sizes:
        try:
            profile.sessions = [(lay, int(n)) for lay, n in
                                (item.strip().split(":") for item in args.sizes.split(",") if item.strip())]
        except ValueError:
            parser.error("--sizes takes LAYOUT:NODES pairs, e.g. sharded:100000")
        if any(lay not in ("flat", "sharded") for lay, _ in profile.sessions):
            parser.error("--sizes: the layout is flat or sharded")
        profile.engine_only = []
    if args.histories:
        try:
            profile.histories = sorted(int(n) for n in args.histories.split(",") if n.strip())
        except ValueError:
            parser.error("--histories takes event counts, e.g. 1000,10000")
        if not profile.histories or min(profile.histories) < 1:
            parser.error("--histories takes event counts of 1 and more")
    sections = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = sections - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")

    isolate_env(scratch)
    compile_narr()
    import machine
    import report

    narr = shutil.which("narr", path=str(Path(sys.executable).parent)) or shutil.which("narr")
    if narr is None:
        parser.error("the narr command is not installed in this Python environment")
    bench = Bench(profile, scratch, args.out.resolve(), args.regen, narr, sections)
    detect_cli(bench)
    started = datetime.now(UTC)
    t_start = time.perf_counter()
    cmd = ["python", "benchmarks/run.py", f"--{profile.name}"]
    for flag, value in (("rounds", args.rounds), ("only", args.only), ("sizes", args.sizes),
                        ("histories", args.histories)):
        if value:
            cmd.append(f"--{flag}={value}")
    bench.results.update({
        "profile": profile.name,
        "command": shlex.join(cmd),
        "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine.describe(REPO),
        "rounds": profile.rounds,
        "read_rounds": profile.read_rounds,
        "startup_rounds": profile.startup_rounds,
        "diffuser_flag": " ".join(bench.diffuser_flag) or None,
    })
    if bench.reset_note:
        bench.add("notes", bench.reset_note)
    log(f"narr benchmarks, {profile.name} profile; scratch {scratch}")

    steps: list[Callable[[], None]] = []
    if bench.want("startup"):
        steps.append(lambda: section_startup(bench))
    if sections & {"event", "reset", "status", "engine"} or not sections:
        for layout, nodes in profile.sessions:
            steps.append(lambda layout=layout, nodes=nodes: section_session(bench, layout, nodes))
    if bench.want("engine"):
        for layout, nodes in profile.engine_only:
            steps.append(lambda layout=layout, nodes=nodes: section_engine_only(bench, layout, nodes))
    if sections & {"reads", "bulk", "check", "growth"} or not sections:
        steps.append(lambda: section_histories(bench))
    if bench.want("import"):
        steps.append(lambda: section_import(bench))
    # Opt in under --smoke (it starts servers on three worlds); part of --quick and --full.
    if ("auto" in sections or (not sections and profile.name != "smoke")) and bench.has_server:
        from auto import section_auto  # narr as installed: the server the first command starts

        steps.append(lambda: section_auto(bench, comparison, human, log))
    # Opt in under --smoke (it starts a browser); part of --quick and --full.
    if "studio" in sections or (not sections and profile.name != "smoke"):
        steps.append(lambda: section_studio(bench))
    if bench.want("agents"):
        steps.append(lambda: section_agents(bench))
    for step in steps:
        if args.wait_idle:
            wait_idle(args.wait_idle)
        step()

    bench.results["duration_s"] = round(time.perf_counter() - t_start, 1)
    end = machine.describe(REPO)
    if end["narr_commit"] != bench.results["machine"]["narr_commit"]:
        bench.add("notes", f"the narr code changed during the run: {bench.results['machine']['narr_commit']} "
                           f"at the start, {end['narr_commit']} at the end; rerun for consistent figures")
    bench.results.pop("_regenerated", None)
    bench.results["targets"] = report.targets(bench.results)
    report.write(bench.results, bench.out)
    log(f"done in {bench.results['duration_s']} s: {bench.out / 'latest.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
