"""What the benchmarks ran on: CPU, cores, memory, Python, pygit2/libgit2, git, narr."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _out(argv: list[str], cwd: Path | None = None) -> str:
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def describe(repo_root: Path) -> dict[str, Any]:
    import pygit2

    import narrative

    source = Path(narrative.__file__).resolve().parent
    commit = _out(["git", "rev-parse", "--short=12", "HEAD"], repo_root)
    dirty = bool(_out(["git", "status", "--porcelain", "--untracked-files=no", "--", "narrative"], repo_root))
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _mem_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "python_impl": platform.python_implementation(),
        "pygit2": pygit2.__version__,
        "libgit2": pygit2.LIBGIT2_VERSION,
        "git": _out(["git", "--version"]).removeprefix("git version "),
        "narr": narrative.__version__,
        "narr_commit": commit + (" (with uncommitted changes under narrative/)" if dirty else ""),
        "narr_source": str(source),
        "narr_source_is_this_repo": source == (repo_root / "narrative").resolve(),
        "executable": sys.executable,
    }
