"""The ``auto`` section: narr with ``narr.autoServe`` on, cold narr and plain git, side by side.

On each world three copies: one for git, one for narr without a server
(``NARR_NO_SERVER=1``: every command starts Python), one with ``git config
narr.autoServe true``, whose first command starts the server (timed on its own:
what the user who turns it on pays once, and how long until the server answers).
Then the three sides alternate, each command a fresh process: an event of three
``--set``, ``status`` clean and with five hand edits, ``reset HEAD~3`` (three
fresh events undone each round), ``log -n 20``, ``get``, ``show``, and ``narr
check`` after one new event on the profile's longest history (the remembered
verified tip makes it the cost of one event). Last, the auto-started server's
resident memory (``VmRSS``) on each world.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path
from typing import Any

from timing import Run, Variant, alternate, fmt_s, run_timed

AUTO_WORLDS = {"smoke": [("sharded", 300)],
               "quick": [("flat", 10_000), ("sharded", 10_000)],
               "full": [("flat", 10_000), ("sharded", 10_000), ("sharded", 100_000)]}
COLD = {"NARR_NO_SERVER": "1"}


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, **(extra or {})}


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


def resident_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text("ascii").splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


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
    subprocess.run(["git", "-C", str(auto), "config", "narr.autoServe", "true"], check=True)
    rounds = bench.profile.rounds
    reads = bench.profile.read_rounds
    rng = random.Random(nodes + 27)
    try:
        t0 = time.perf_counter()
        first = run_timed(bench.client_cmd("status"), auto)
        info_server = _wait_for_server(auto)
        ready = time.perf_counter() - t0
        bench.add("auto_start", {"world": world, "nodes": nodes, "layout": layout,
                                 "first_command_s": round(first.seconds, 4),
                                 "server_ready_s": round(ready, 3)})
        log(f"  first command {fmt_s(first.seconds)} (it starts the server); the server answers "
            f"after {fmt_s(ready)}")

        def three(side: Path, r: int, label: str) -> Run:
            sets = []
            for node_id, _layer in plan(r):
                sets += ["--set", f"{node_id}.state.mood={label} {r}"]
            env = _env(COLD) if side == cold else None
            return run_timed(bench.client_cmd("event", f"Round {r}: three things change", *sets,
                                              *bench.diffuser_flag), side, env=env)

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
                [Variant("narr status, auto-served", lambda r: run_timed(bench.client_cmd("status"), auto)),
                 Variant("git status", lambda r: run_timed(["git", "status"], plain)),
                 Variant("narr status, cold", lambda r: run_timed(bench.client_cmd("status"), cold,
                                                                  env=_env(COLD)))], reads)
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
                                       capture_output=True, env=_env(COLD) if side == cold else None)
                return run

            def git_prepare(r: int) -> None:
                for k in range(3):
                    for node_id, layer in _three_targets(info, rng):
                        _edit_file(plain, layout, node_id, layer, "mood", f"reset round {r}.{k}")
                    _git_commit_steps(plain, f"To be undone {r}.{k}")

            flags = bench.reset_flags or []
            series = alternate(
                [Variant("narr reset HEAD~3, auto-served",
                         lambda r: run_timed(bench.client_cmd("reset", "HEAD~3", *flags), auto),
                         prepare=prepare(auto)),
                 Variant("git reset --hard HEAD~3",
                         lambda r: run_timed(["git", "reset", "-q", "--hard", "HEAD~3"], plain),
                         prepare=git_prepare),
                 Variant("narr reset HEAD~3, cold",
                         lambda r: run_timed(bench.client_cmd("reset", "HEAD~3", *flags), cold,
                                             env=_env(COLD)), prepare=prepare(cold))], rounds)
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
                         lambda r, nargs=nargs: run_timed(bench.client_cmd(*nargs), auto)),
                 Variant(git_op, lambda r, gargs=gargs: run_timed(["git", *gargs], plain)),
                 Variant(f"narr {op}, cold",
                         lambda r, nargs=nargs: run_timed(bench.client_cmd(*nargs), cold,
                                                          env=_env(COLD)))], reads)
            comparison(bench, f"auto: narr {op}", git_op, world, series, nodes=nodes,
                       layout=layout, auto=True, light_read=True)

        live = _server(auto) or info_server
        mib = resident_mib(int(live["pid"]))
        bench.add("server_memory", {"world": world, "nodes": nodes, "layout": layout,
                                    "resident_mib": mib, "requests": _requests(bench, auto)})
        log(f"  the auto-started server holds {mib} MiB resident")
    finally:
        for root in (auto, cold, plain):
            subprocess.run(bench.client_cmd("-C", str(root), "serve", "--stop"),
                           capture_output=True)


def _requests(bench: Any, root: Path) -> int | None:
    proc = subprocess.run(bench.client_cmd("-C", str(root), "serve", "--status", "--json"),
                          capture_output=True, text=True)
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
    subprocess.run(["git", "-C", str(auto), "config", "narr.autoServe", "true"], check=True)
    try:
        t0 = time.perf_counter()
        subprocess.run(bench.client_cmd("check", "--full"), cwd=cold, env=_env(COLD), check=True,
                       capture_output=True)
        full_s = time.perf_counter() - t0
        subprocess.run(bench.client_cmd("check", "--full"), cwd=auto, check=True,
                       capture_output=True)
        _wait_for_server(auto)

        def one_event(side: Path) -> Any:
            def run(r: int) -> None:
                subprocess.run(bench.client_cmd("event", f"Check round {r}", "--set",
                                                f"{_any_node(bench, side)}.state.mood=r{r}",
                                                *bench.diffuser_flag),
                               cwd=side, check=True, capture_output=True,
                               env=_env(COLD) if side == cold else None)
            return run

        rounds = max(3, bench.profile.rounds)
        series = alternate(
            [Variant("narr check, auto-served", lambda r: run_timed(bench.client_cmd("check"), auto),
                     prepare=one_event(auto)),
             Variant("git fsck --connectivity-only",
                     lambda r: run_timed(["git", "fsck", "--connectivity-only", "--no-progress"],
                                         cold)),
             Variant("narr check, cold", lambda r: run_timed(bench.client_cmd("check"), cold,
                                                             env=_env(COLD)),
                     prepare=one_event(cold))], rounds)
        comparison(bench, "auto: narr check after one event", "git fsck --connectivity-only",
                   world, series, events=events, nodes=nodes, layout=layout, auto=True,
                   full_check_s=round(full_s, 2))
    finally:
        for root in (auto, cold):
            subprocess.run(bench.client_cmd("-C", str(root), "serve", "--stop"),
                           capture_output=True)


_NODE: dict[Path, str] = {}


def _any_node(bench: Any, root: Path) -> str:
    """A character of the world at ``root``."""
    if root not in _NODE:
        proc = subprocess.run(bench.client_cmd("-C", str(root), "nodes", "--json"),
                              capture_output=True, text=True, env=_env(COLD), check=True)
        items = json.loads(proc.stdout)["items"]  # narr.list_nodes: {"schema", "items"}
        _NODE[root] = next(n["id"] for n in items if n.get("layer") == "character"
                           and n.get("lifecycle") == "permanent")
    return _NODE[root]
