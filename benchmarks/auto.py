"""The ``auto`` section: narr as installed (its server on, nothing set), cold narr and plain git.

On each world three copies: one for git, one for narr without a server
(``NARR_NO_SERVER=1``: every command starts Python), and one with no setting changed
from a fresh install, whose first command starts the server in the background
(timed on its own: what a user pays once, and how long until the server answers).
Then the three sides alternate, each command a fresh process: an event of three
``--set``, ``status`` clean and with five hand edits, ``reset HEAD~3`` (three fresh
events undone each round), ``log -n 20``, ``get``, ``show``. Then the first command
after an idle exit (the server stopped before each round, as when it exits idle;
``narr status``, which starts the next server itself) against the floor of the
declared stack, ``python -c "import click, pygit2, pydantic"``; events through the
library on the world kept open with ``watch=True``; and the server's resident
memory (``VmRSS``) after all that. Last, ``narr check`` after one new event on the
profile's longest history (the remembered verified tip makes it the cost of one
event).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from timing import Run, Variant, alternate, fmt_s, run_timed

AUTO_WORLDS = {"smoke": [("sharded", 100)],
               "quick": [("sharded", 1_000), ("flat", 10_000), ("sharded", 10_000)],
               "full": [("sharded", 1_000), ("flat", 10_000), ("sharded", 10_000),
                        ("sharded", 100_000)]}
LIBRARY_EVENTS = {"smoke": 5, "quick": 40, "full": 60}
FLOOR = [sys.executable, "-c", "import click, pygit2, pydantic"]


def served_env() -> dict[str, str]:
    """The environment of a fresh install: the harness's own, less its NARR_NO_SERVER."""
    env = dict(os.environ)
    env.pop("NARR_NO_SERVER", None)
    return env


def _server(root: Path) -> dict[str, Any] | None:
    from narrative import client

    return client.proven_server(root / ".git")


def _wait_for_server(root: Path, limit: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        info = _server(root)
        if info is not None:
            return info
        time.sleep(0.01)
    raise RuntimeError(f"no server started for {root} within {limit:.0f} s "
                       f"(see {root / '.git' / 'narr' / 'serve.log'})")


def _stop(bench: Any, root: Path) -> None:
    """Stop the world's server and wait until it is gone (as after an idle exit)."""
    from narrative import client

    info = _server(root)
    subprocess.run(bench.client_cmd("-C", str(root), "serve", "--stop"), capture_output=True,
                   env=served_env())
    while info is not None and client.pid_alive(info.get("pid")) \
            and client.process_state(int(info["pid"])) not in ("Z", "X", None):
        time.sleep(0.01)


def resident_mib(pid: int) -> float | None:
    from narrative.client import resident_mib as mib

    return mib(pid)


def section_auto(bench: Any, comparison: Any, human: Any, log: Any) -> None:
    for layout, nodes in AUTO_WORLDS[bench.profile.name]:
        _one_world(bench, layout, nodes, comparison, human, log)
    if bench.want("check") or bench.sections == {"auto"}:
        _check_after_one_event(bench, comparison, human, log)


def _one_world(bench: Any, layout: str, nodes: int, comparison: Any, human: Any, log: Any) -> None:
    from run import _edit_file, _git_commit_steps, _round_targets, _three_targets

    from narrative.ids import node_path

    src, info = bench.world(layout, nodes)
    world = f"{human(nodes)} nodes, {layout}"
    log(f"auto: {world}")
    cold = bench.copy(src, f"auto-{layout}-{nodes}-cold")
    plain = bench.copy(src, f"auto-{layout}-{nodes}-git")
    auto = bench.copy(src, f"auto-{layout}-{nodes}-auto")
    rounds = bench.profile.rounds
    reads = bench.profile.read_rounds
    rng = random.Random(nodes + 27)
    served = served_env()
    try:
        t0 = time.perf_counter()
        first = run_timed(bench.client_cmd("status"), auto, env=served)
        info_server = _wait_for_server(auto)
        ready = time.perf_counter() - t0
        bench.add("auto_start", {"world": world, "nodes": nodes, "layout": layout,
                                 "first_command_s": round(first.seconds, 4),
                                 "server_ready_s": round(ready, 3)})
        log(f"  first command {fmt_s(first.seconds)} (it starts the server); the server answers "
            f"after {fmt_s(ready)}")

        def env_of(side: Path) -> dict[str, str] | None:
            return served if side == auto else None  # the harness's own: NARR_NO_SERVER=1

        def three(side: Path, r: int, label: str) -> Run:
            sets = []
            for node_id, _layer in plan(r):
                sets += ["--set", f"{node_id}.state.mood={label} {r}"]
            return run_timed(bench.client_cmd("event", f"Round {r}: three things change", *sets,
                                              *bench.diffuser_flag), side, env=env_of(side))

        plan = _round_targets(info, rng)

        def git_event(r: int) -> Run:
            t = time.perf_counter()
            for node_id, layer in plan(r):
                _edit_file(plain, layout, node_id, layer, "mood", f"round {r}")
            run = _git_commit_steps(plain, f"Round {r}: three things change")
            return Run(time.perf_counter() - t, run.cpu_s)

        series = alternate([Variant("narr event (3 --set), auto-served", lambda r: three(auto, r, "a")),
                            Variant("write 3 files; git add -A && git commit", git_event),
                            Variant("narr event (3 --set), cold", lambda r: three(cold, r, "c"))],
                           rounds)
        comparison(bench, "auto: narr event (3 --set)", "write 3 files; git add -A && git commit",
                   world, series, nodes=nodes, layout=layout, auto=True)

        for label, edits in (("clean", 0), ("5 hand edits", 5)):
            saved: list[tuple[Path, bytes]] = []
            if edits:
                for node_id, layer in rng.sample(info["permanent"], edits):
                    for root in (auto, cold, plain):
                        path = root / node_path(node_id, layer, layout)  # type: ignore[arg-type]
                        saved.append((path, path.read_bytes()))
                        _edit_file(root, layout, node_id, layer, "note", "changed by hand")
            series = alternate(
                [Variant("narr status, auto-served",
                         lambda r: run_timed(bench.client_cmd("status"), auto, env=served)),
                 Variant("git status", lambda r: run_timed(["git", "status"], plain)),
                 Variant("narr status, cold", lambda r: run_timed(bench.client_cmd("status"), cold))],
                reads)
            comparison(bench, f"auto: narr status ({label})", "git status", world, series,
                       nodes=nodes, layout=layout, auto=True)
            for path, data in saved:
                path.write_bytes(data)

        if bench.reset_flags is not None:
            def prepare(side: Path) -> Any:
                def run(r: int) -> None:
                    for k in range(3):
                        sets = []
                        for t, _ in _three_targets(info, rng):
                            sets += ["--set", f"{t}.state.mood=reset round {r}.{k}"]
                        subprocess.run(bench.client_cmd("event", f"To be undone {r}.{k}", *sets,
                                                        *bench.diffuser_flag), cwd=side, check=True,
                                       capture_output=True, env=env_of(side))
                return run

            def git_prepare(r: int) -> None:
                for k in range(3):
                    for node_id, layer in _three_targets(info, rng):
                        _edit_file(plain, layout, node_id, layer, "mood", f"reset round {r}.{k}")
                    _git_commit_steps(plain, f"To be undone {r}.{k}")

            flags = bench.reset_flags or []
            series = alternate(
                [Variant("narr reset HEAD~3, auto-served",
                         lambda r: run_timed(bench.client_cmd("reset", "HEAD~3", *flags), auto,
                                             env=served), prepare=prepare(auto)),
                 Variant("git reset --hard HEAD~3",
                         lambda r: run_timed(["git", "reset", "-q", "--hard", "HEAD~3"], plain),
                         prepare=git_prepare),
                 Variant("narr reset HEAD~3, cold",
                         lambda r: run_timed(bench.client_cmd("reset", "HEAD~3", *flags), cold),
                         prepare=prepare(cold))], rounds)
            comparison(bench, "auto: narr reset HEAD~3", "git reset --hard HEAD~3", world, series,
                       nodes=nodes, layout=layout, auto=True)

        node_id, layer = info["permanent"][len(info["permanent"]) // 2]
        path = node_path(node_id, layer, layout)  # type: ignore[arg-type]
        for op, nargs, git_op, gargs in (
                ("log -n 20", ["log", "-n", "20"], "git log -n 20", ["log", "-n", "20"]),
                ("get ID", ["get", node_id], "git show HEAD:PATH", ["show", f"HEAD:{path}"]),
                ("show HEAD", ["show", "HEAD"], "git show HEAD", ["show", "HEAD"])):
            series = alternate(
                [Variant(f"narr {op}, auto-served",
                         lambda r, nargs=nargs: run_timed(bench.client_cmd(*nargs), auto, env=served)),
                 Variant(git_op, lambda r, gargs=gargs: run_timed(["git", *gargs], plain)),
                 Variant(f"narr {op}, cold",
                         lambda r, nargs=nargs: run_timed(bench.client_cmd(*nargs), cold))], reads)
            comparison(bench, f"auto: narr {op}", git_op, world, series, nodes=nodes,
                       layout=layout, auto=True, light_read=True)

        live = _server(auto) or info_server
        mib = resident_mib(int(live["pid"]))
        bench.add("server_memory", {"world": world, "nodes": nodes, "layout": layout,
                                    "resident_mib": mib, "requests": _requests(bench, auto)})
        log(f"  the server holds {mib} MiB resident")

        _after_idle_exit(bench, auto, plain, world, nodes, layout, comparison)
        if nodes >= 10_000 or bench.profile.name == "smoke":
            _library_kept_open(bench, cold, info, world, nodes, layout, log)
    finally:
        for root in (auto, cold, plain):
            _stop(bench, root)


def _after_idle_exit(bench: Any, auto: Path, plain: Path, world: str, nodes: int, layout: str,
                     comparison: Any) -> None:
    """The first command after the server exited idle (it starts the next one), against the
    floor of the declared stack; and ``git status`` on the same world in the same rounds, the
    work that command cannot skip (it compares every file with git's index)."""

    def gone(r: int) -> None:
        _wait_for_server(auto)  # the one the last round's command started
        _stop(bench, auto)

    series = alternate(
        [Variant("narr status, the first after an idle exit",
                 lambda r: run_timed(bench.client_cmd("status"), auto, env=served_env()),
                 prepare=gone),
         Variant("python -c 'import click, pygit2, pydantic'",
                 lambda r: run_timed(FLOOR, auto)),
         Variant("git status", lambda r: run_timed(["git", "status"], plain))],
        bench.profile.read_rounds)
    comparison(bench, "auto: narr status, the first after an idle exit",
               "python -c 'import click, pygit2, pydantic'", world, series, nodes=nodes,
               layout=layout, auto=True, floor=True)
    _wait_for_server(auto)


def _library_kept_open(bench: Any, root: Path, info: dict[str, Any], world: str, nodes: int,
                       layout: str, log: Any) -> None:
    """Events through the library on a world kept open with ``watch=True``, one at a time."""
    from run import _three_targets

    import narrative as narr

    n = LIBRARY_EVENTS[bench.profile.name]
    rng = random.Random(nodes * 11)
    times = []
    with narr.open_world(root, watch=True) as kept:
        for i in range(n + 3):
            ops = [narr.SetOp(target=t, field="/state/mood", value=f"kept open {i}")
                   for t, _ in _three_targets(info, rng)]
            t0 = time.perf_counter()
            narr.event(kept, f"Kept open {i}", *ops)
            times.append(time.perf_counter() - t0)
    times = times[3:]  # the first scans walk everything, as a server's first does
    item = {"world": world, "nodes": nodes, "layout": layout, "events": n,
            "median_ms": round(statistics.median(times) * 1000, 1),
            "p90_ms": round(sorted(times)[int(len(times) * 0.9)] * 1000, 1),
            "load_1m": round(os.getloadavg()[0], 2)}
    bench.add("library_kept_open", item)
    log(f"  library run_event, world kept open (watch=True): {item['median_ms']} ms median")


def _requests(bench: Any, root: Path) -> int | None:
    proc = subprocess.run(bench.client_cmd("-C", str(root), "serve", "--status", "--json"),
                          capture_output=True, text=True, env=served_env())
    try:
        return int(json.loads(proc.stdout).get("requests"))
    except (ValueError, TypeError):
        return None


def _check_after_one_event(bench: Any, comparison: Any, human: Any, log: Any) -> None:
    """``narr check`` after one new event on the longest history, both sides verified once."""
    layout, nodes = bench.profile.history_world
    events = max(bench.profile.histories)
    src, _ = bench.history(layout, nodes, events)
    world = f"{human(events)} events, {human(nodes)} nodes, {layout}"
    log(f"auto: narr check after one event, {world}")
    cold = bench.copy(src, "auto-check-cold")
    auto = bench.copy(src, "auto-check-auto")
    served = served_env()
    try:
        t0 = time.perf_counter()
        subprocess.run(bench.client_cmd("check", "--full"), cwd=cold, check=True,
                       capture_output=True)
        full_s = time.perf_counter() - t0
        subprocess.run(bench.client_cmd("check", "--full"), cwd=auto, check=True,
                       capture_output=True, env=served)
        _wait_for_server(auto)

        def one_event(side: Path) -> Any:
            def run(r: int) -> None:
                subprocess.run(bench.client_cmd("event", f"Check round {r}", "--set",
                                                f"{_any_node(bench, side)}.state.mood=r{r}",
                                                *bench.diffuser_flag),
                               cwd=side, check=True, capture_output=True,
                               env=served if side == auto else None)
            return run

        rounds = max(3, bench.profile.rounds)
        series = alternate(
            [Variant("narr check, auto-served",
                     lambda r: run_timed(bench.client_cmd("check"), auto, env=served),
                     prepare=one_event(auto)),
             Variant("git fsck --connectivity-only",
                     lambda r: run_timed(["git", "fsck", "--connectivity-only", "--no-progress"],
                                         cold)),
             Variant("narr check, cold", lambda r: run_timed(bench.client_cmd("check"), cold),
                     prepare=one_event(cold))], rounds)
        comparison(bench, "auto: narr check after one event", "git fsck --connectivity-only",
                   world, series, events=events, nodes=nodes, layout=layout, auto=True,
                   full_check_s=round(full_s, 2))
    finally:
        for root in (auto, cold):
            _stop(bench, root)


_NODE: dict[Path, str] = {}


def _any_node(bench: Any, root: Path) -> str:
    """A character of the world at ``root``."""
    if root not in _NODE:
        proc = subprocess.run(bench.client_cmd("-C", str(root), "nodes", "--json"),
                              capture_output=True, text=True, check=True)
        items = json.loads(proc.stdout)["items"]  # narr.list_nodes: {"schema", "items"}
        _NODE[root] = next(n["id"] for n in items if n.get("layer") == "character"
                           and n.get("lifecycle") == "permanent")
    return _NODE[root]
