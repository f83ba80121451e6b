"""The index entries narr writes after an event or a reset: what ``git add`` would write.

narr makes them from the file's stat and the blob it already knows (no blob write per
path); git, the referee, must find its stat cache as true as after its own ``git add``.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers import CLI, git

from narrative.store import clean_entry, journal
from narrative.store.libgit import pygit2
from narrative.store.worldrepo import WorldRepo

pytestmark = pytest.mark.both_layouts


def entry_text(root: Path, path: str) -> str:
    """Everything git's index holds for ``path``: times, device, inode, owner, size, flags."""
    return git(root, "ls-files", "--debug", "--", path)


def without_device(text: str) -> str:
    return re.sub(r"dev: \d+", "dev:", text)


def stat_clean(root: Path) -> bool:
    """Whether git's stat cache vouches for every file (``diff-files`` never rehashes)."""
    return subprocess.run(["git", "diff-files", "--quiet"], cwd=root).returncode == 0


def test_an_entry_is_the_one_an_add_by_path_makes(world: Path) -> None:
    """libgit2's add by path, which it replaces, field for field (git's own add differs only
    in the device field, which neither compares)."""
    git(world, "update-index", "-q", "--refresh")
    path = next(p for p in git(world, "ls-files").split() if p.endswith(".json"))
    full = world / path
    full.write_bytes(full.read_bytes() + b"\n")
    index = pygit2.Repository(str(world)).index
    index.add(path)
    index.write()
    by_path = entry_text(world, path)
    oid = git(world, "rev-parse", f":{path}").strip()
    git(world, "add", "--", path)
    by_git = entry_text(world, path)

    index = pygit2.Repository(str(world)).index
    index.remove(path)
    assert clean_entry.add_clean(index, path, oid, os.lstat(full))
    index.write()
    assert entry_text(world, path) == by_path
    assert without_device(by_path) == without_device(by_git)
    assert stat_clean(world)


def test_events_and_resets_leave_the_stat_cache_true(world: Path, narr: CLI) -> None:
    git(world, "update-index", "-q", "--refresh")
    narr("event", "E1", "--set", "black-ring.state.colour=red",
         "--set", "lin-yuan.state.mood=tired")
    assert stat_clean(world) and git(world, "status", "--porcelain") == ""
    narr("event", "E2", "--set", "black-ring.state.colour=blue")
    narr("reset", "HEAD~2")
    assert stat_clean(world) and git(world, "status", "--porcelain") == ""


def test_a_file_that_is_not_the_blob_is_added_as_it_is(world: Path) -> None:
    """Changed after narr hashed it, or made executable: libgit2's own add decides."""
    git(world, "update-index", "-q", "--refresh")
    wr = WorldRepo.open(world)
    paths = [p for p in git(world, "ls-files").split() if p.endswith(".json")][:2]
    edited, executable = paths
    oids = {p: git(world, "rev-parse", f":{p}").strip() for p in paths}
    (world / edited).write_bytes(b'{"changed": "by hand"}\n')
    os.chmod(world / executable, 0o755)
    journal.write_index(wr, {p: (oids[p], oids[p]) for p in paths})
    assert git(world, "rev-parse", f":{edited}").strip() == git(
        world, "hash-object", "--", edited).strip()  # the file's content, as git add stages it
    assert git(world, "ls-files", "-s", "--", executable).startswith("100644 ")
    assert git(world, "status", "--porcelain", "--", edited) == "M  " + edited + "\n"


def test_without_the_c_layer_entries_are_added_by_path(world: Path, narr: CLI,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clean_entry, "c_layer", lambda: None)
    git(world, "update-index", "-q", "--refresh")
    narr("event", "E1", "--set", "black-ring.state.colour=red")
    narr("reset", "HEAD~1")
    assert stat_clean(world) and git(world, "status", "--porcelain") == ""
