"""The kill campaigns' machinery: a narr command or a library call in a forked child of this
process, SIGKILLed at a random moment or when it runs a given line.

A forked child has narr's modules imported already (the parent imports them once), so a kill
costs the command's own work, not a Python start and narr's imports (about a second each on a
busy machine, fifty times a campaign).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Where = tuple[str, int]  # "file.py:LINE", and which run of that line


def preload(*modules: str) -> None:
    """Import ``modules`` here, once: each forked child then has them already, as a fresh process
    has them once it starts its work."""
    for name in ("narrative.cli", *modules):
        importlib.import_module(name)


def fork_cli(root: Path, args: list[str], errfile: Path) -> int:
    """``narr -C ROOT ARGS`` in a forked child, its stderr to ``errfile``; the child's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 70  # pragma: no cover - the child, from here
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


def run_killed(root: Path, args: list[str], delay: float | None, errfile: Path) -> tuple[int, float]:
    """``narr ARGS`` in a forked child, SIGKILLed ``delay`` seconds after it starts (never, with
    None): its exit code (-9 when killed), how long it ran. A traceback fails the test."""
    pid = fork_cli(root, args, errfile)
    t0 = time.monotonic()
    if delay is not None:
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    took = time.monotonic() - t0
    errors = errfile.read_text("utf-8", "replace")
    assert "Traceback" not in errors, errors
    return os.waitstatus_to_exitcode(status), took


def traced_lines(files: set[str], stop_at: Where | None, seen: list[str],
                 start: str | None = None) -> Callable[..., Any]:
    """A tracer noting each line run in ``files`` (as ``file.py:LINE``) from the moment a
    function named ``start`` is called (from the first line, with None), and SIGKILLing the
    process when line ``stop_at[0]`` runs for the ``stop_at[1]``-th time."""
    started = [start is None]
    hits = [0]

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line" and started[0]:
            where = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
            seen.append(where)
            if stop_at is not None and where == stop_at[0]:
                hits[0] += 1
                if hits[0] == stop_at[1]:
                    os.kill(os.getpid(), signal.SIGKILL)
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename not in files:
            return None
        if frame.f_code.co_name == start:
            started[0] = True
        return local

    return tracer


def kill_at_line(work: Callable[[], None], files: set[str], stop_at: Where | None,
                 start: str | None = None) -> tuple[int, list[str]]:
    """``work()`` in a forked child that SIGKILLs itself at ``stop_at`` (a line of ``files``,
    and which run of it). Returns the child's wait status and, when it was not killed, the
    lines it ran (from ``start`` on)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(r)
            seen: list[str] = []
            sys.settrace(traced_lines(files, stop_at, seen, start))
            work()
            sys.settrace(None)
            os.write(w, json.dumps(seen).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        ran = fh.read()
    _, status = os.waitpid(pid, 0)
    return status, json.loads(ran) if ran else []


def line_points(lines: Iterable[str]) -> list[Where]:
    """Where to kill: every line at its first run, and lines run three times or more (loops)
    halfway through their runs as well."""
    runs: dict[str, int] = {}
    for where in lines:
        runs[where] = runs.get(where, 0) + 1
    return [(where, 1) for where in runs] + [(w, n // 2 + 1) for w, n in runs.items() if n >= 3]


def crash_seed() -> int:
    return int(os.environ.get("NARR_CRASH_SEED", "20261129"))
