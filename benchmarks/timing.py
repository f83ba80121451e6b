"""Timing fresh processes, side by side: A/B rounds, medians, ratios, peak memory.

Every command runs as a new process (what a user pays), with its output thrown
away. Variants of one comparison alternate their order from round to round
(ABAB... becomes AB, BA, AB, ...) so drift in the machine's state (page cache,
CPU frequency, background work) does not favour one side.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class CommandFailed(RuntimeError):
    pass


@dataclass
class Run:
    seconds: float
    cpu_s: float = 0.0  # user + system time of the process: less sensitive to a busy machine


def _spawn(argv: Sequence[str], cwd: Path, env: dict[str, str] | None, stdin: bytes | None,
           err: Any) -> tuple[int, Any]:
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage


def run_timed(argv: Sequence[str], cwd: Path, *, env: dict[str, str] | None = None,
              stdin: bytes | None = None) -> Run:
    """Run ``argv`` once: wall time and CPU time of that one process."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        code, usage = _spawn(argv, cwd, env, stdin, err)
        elapsed = time.perf_counter() - start
        if code != 0:
            err.seek(0)
            raise CommandFailed(f"{' '.join(argv)} (in {cwd}) exited {code}:\n"
                                f"{err.read().decode('utf-8', 'replace')[-2000:]}")
    return Run(elapsed, usage.ru_utime + usage.ru_stime)


def run_sequence(commands: Sequence[Sequence[str]], cwd: Path) -> Run:
    """Several commands one after the other (``git add -A && git commit``): summed times."""
    total, cpu = 0.0, 0.0
    for argv in commands:
        r = run_timed(argv, cwd)
        total += r.seconds
        cpu += r.cpu_s
    return Run(total, cpu)


TIME = shutil.which("time", path="/usr/bin:/bin")


def run_with_rss(argv: Sequence[str], cwd: Path) -> tuple[Run, float | None]:
    """One run of ``argv``: its times and its peak resident memory in MiB (None without GNU time).

    The memory is measured by ``/usr/bin/time``, not by this process: on Linux a child
    forked from a large parent reports the parent's peak as its own ``ru_maxrss``.
    """
    if TIME is None:
        return run_timed(argv, cwd), None
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        code, usage = _spawn([TIME, "-f", "%M", "-o", out.name, *argv], cwd, None, None, err)
        elapsed = time.perf_counter() - start
        if code != 0:
            err.seek(0)
            raise CommandFailed(f"{' '.join(argv)} (in {cwd}) exited {code}:\n"
                                f"{err.read().decode('utf-8', 'replace')[-2000:]}")
        lines = [line for line in out.read().splitlines() if line.strip()]
    try:
        rss: float | None = round(int(lines[-1]) / 1024, 1)
    except (IndexError, ValueError):
        rss = None
    return Run(elapsed, usage.ru_utime + usage.ru_stime), rss


def peak_rss_mib(argv: Sequence[str], cwd: Path) -> float | None:
    """Peak resident memory of one run of ``argv`` in MiB, or None without GNU time."""
    return run_with_rss(argv, cwd)[1]


@dataclass
class Series:
    label: str
    runs: list[Run] = field(default_factory=list)

    @property
    def seconds(self) -> list[float]:
        return [r.seconds for r in self.runs]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def to_json(self) -> dict[str, Any]:
        s = self.seconds
        return {
            "label": self.label,
            "median_s": round(self.median, 5),
            "min_s": round(min(s), 5),
            "max_s": round(max(s), 5),
            "samples_s": [round(x, 5) for x in s],
            "median_cpu_s": round(statistics.median(r.cpu_s for r in self.runs), 5),
        }


Step = Callable[[int], Run]
"""One timed operation; gets the round number, returns the measured run."""


@dataclass
class Variant:
    label: str
    step: Step
    prepare: Callable[[int], None] | None = None  # untimed work before the step, each round


def alternate(variants: Sequence[Variant], rounds: int, *, warmup: int = 1) -> list[Series]:
    """Run every variant ``rounds`` times, rotating their order each round.

    ``warmup`` rounds run first and are not recorded (cold caches, first-use setup).
    """
    series = [Series(v.label) for v in variants]
    n = len(variants)
    for r in range(-warmup, rounds):
        shift = r % n if n else 0
        order = list(range(n))[shift:] + list(range(n))[:shift]
        for i in order:
            v = variants[i]
            if v.prepare is not None:
                v.prepare(r)
            run = v.step(r)
            if r >= 0:
                series[i].runs.append(run)
    return series


def ratio(a: Series, b: Series) -> float:
    return a.median / b.median if b.median > 0 else float("inf")


def fmt_s(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"
