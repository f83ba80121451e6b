"""Keeping the repository small: packing the loose objects events leave behind.

libgit2 writes every blob, tree and commit as a loose object and never packs:
ten thousand events leave some 90k loose files (440 MB where ``git gc`` makes
13 MB). Like ``git commit``, narr runs ``git gc --auto`` in the background when
loose objects pile up past git's own threshold, and ``narr gc`` packs on request.
Packing keeps every object reachable from a ref, and every narr ref (abandoned
chains, set-aside edits) is a ref: nothing narr keeps is ever pruned.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from narrative.errors import NarrError
from narrative.invocation import getenv
from narrative.store.worldrepo import WorldRepo

AUTO_LOOSE = 6700  # git's gc.auto default: about this many loose objects start a pack
SAMPLE_DIR = "17"  # git estimates from one of the 256 fan-out directories, and so do we


def loose_estimate(wr: WorldRepo) -> int:
    """About how many loose objects the repository holds (one directory read, not 256)."""
    try:
        return len(os.listdir(wr.git_dir / "objects" / SAMPLE_DIR)) * 256
    except FileNotFoundError:
        return 0


def _disk_usage(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue
    return total


@dataclass
class GcResult:
    before: int
    after: int
    loose_before: int
    loose_after: int

    def to_json(self) -> dict[str, int]:
        return {"bytes_before": self.before, "bytes_after": self.after,
                "loose_before": self.loose_before, "loose_after": self.loose_after}


def gc(wr: WorldRepo) -> GcResult:
    """Pack the repository with ``git gc`` (git delta-compresses far better than libgit2)."""
    git = shutil.which("git")
    if git is None:
        raise NarrError("narr gc needs the git command, which is not installed here",
                        hint="install git, or leave the loose objects: they cost disk, not data")
    objects = wr.git_dir / "objects"
    before, loose_before = _disk_usage(objects), _count_loose(objects)
    with wr.lock:
        proc = subprocess.run([git, "gc", "--quiet"], cwd=wr.root, capture_output=True, text=True,
                              check=False)
    if proc.returncode != 0:
        raise NarrError(f"git gc failed: {proc.stderr.strip() or proc.returncode}")
    return GcResult(before, _disk_usage(objects), loose_before, _count_loose(objects))


def _count_loose(objects: Path) -> int:
    total = 0
    for name in os.listdir(objects):
        if len(name) == 2 and all(c in "0123456789abcdef" for c in name):
            total += len(os.listdir(objects / name))
    return total


def auto_gc(wr: WorldRepo) -> bool:
    """Run ``git gc --auto`` (which packs in the background) when loose objects pile up.

    Off with ``NARR_AUTO_GC=0``; a no-op without the git command. Returns whether
    one was started.
    """
    if getenv("NARR_AUTO_GC", "1") == "0" or loose_estimate(wr) < AUTO_LOOSE:
        return False
    git = shutil.which("git")
    if git is None:
        return False
    # git gc --auto checks its own threshold, then packs in a process it detaches
    # (gc.autoDetach), so this returns in milliseconds.
    try:
        subprocess.run([git, "gc", "--auto", "--quiet"], cwd=wr.root, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return True
