"""The shortcuts that keep a flat layer's thousands of files cheap give the answers of the
slow paths: libgit2's tree diff for a large directory, and the server's own comparison of a
watched file with git's index instead of libgit2's ``status_file``."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest
from helpers import git

from narrative.store import trees, worktree
from narrative.store.worldrepo import WorldRepo


def _big_layer(root: Path, n: int) -> None:
    layer = root / "world" / "ambient"
    for i in range(n):
        (layer / f"crowd-{i}.json").write_text(f'{{"n": {i}}}\n', "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "many files")


def test_a_large_directory_diffs_as_a_small_one(flat_world: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _big_layer(flat_world, 600)
    layer = flat_world / "world" / "ambient"
    (layer / "crowd-1.json").write_text('{"n": "changed"}\n', "utf-8")
    (layer / "crowd-2.json").unlink()
    (layer / "crowd-new.json").write_text("{}\n", "utf-8")
    (layer / "crowd-3.json").unlink()
    os.symlink("crowd-4.json", layer / "crowd-3.json")  # same path, now a link
    (layer / "crowd-5.json").chmod(0o755)  # same content, another mode
    (layer / "crowd-6.json").unlink()
    (layer / "crowd-6.json").mkdir()  # a file became a directory
    (layer / "crowd-6.json" / "inner.json").write_text("{}\n", "utf-8")
    git(flat_world, "add", "-A")
    git(flat_world, "commit", "-qm", "changes")
    repo = pygit2.Repository(str(flat_world))
    old = repo.revparse_single("HEAD~1").peel(pygit2.Commit).tree
    new = repo.revparse_single("HEAD").peel(pygit2.Commit).tree
    native = list(trees.diff_blobs(repo, old, new))
    monkeypatch.setattr(trees, "NATIVE_DIFF_ENTRIES", 10**9)
    python = list(trees.diff_blobs(repo, old, new))
    assert native == python
    assert {p for p, _, _ in native} >= {
        "world/ambient/crowd-1.json", "world/ambient/crowd-2.json", "world/ambient/crowd-new.json",
        "world/ambient/crowd-3.json", "world/ambient/crowd-5.json", "world/ambient/crowd-6.json",
        "world/ambient/crowd-6.json/inner.json"}


def test_a_watched_file_is_judged_as_libgit2_judges_it(flat_world: Path) -> None:
    _big_layer(flat_world, 20)
    layer = flat_world / "world" / "ambient"
    (flat_world / ".gitignore").write_text("world/ambient/ignored-*\n", "utf-8")
    git(flat_world, "add", ".gitignore")
    git(flat_world, "commit", "-qm", "ignore some")
    (layer / "crowd-1.json").write_text('{"n": "changed"}\n', "utf-8")
    (layer / "crowd-2.json").unlink()
    (layer / "crowd-new.json").write_text("{}\n", "utf-8")
    (layer / "ignored-1.json").write_text("{}\n", "utf-8")
    (layer / "crowd-3.json").unlink()
    os.symlink("crowd-4.json", layer / "crowd-3.json")
    (layer / "crowd-5.json").chmod(0o755)
    (layer / "crowd-6.json").write_text('{"n": 6}\n', "utf-8")  # rewritten, the same bytes
    os.utime(layer / "crowd-7.json", (1, 1))  # touched only
    candidates = {f"world/ambient/{name}" for name in os.listdir(layer)} | {
        "world/ambient/crowd-2.json", "world/ambient/never-there.json"}
    with WorldRepo.open(flat_world) as wr:
        index = wr.repo.index
        ours = worktree._hinted(wr, index, candidates)
        theirs = worktree._hinted_by_libgit2(wr, sorted(worktree._expand(wr, index, candidates)))
    assert ours == theirs == {"world/ambient/crowd-1.json", "world/ambient/crowd-2.json",
                              "world/ambient/crowd-new.json", "world/ambient/crowd-3.json",
                              "world/ambient/crowd-5.json"}
