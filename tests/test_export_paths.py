"""Exports write only where they are told, and only what they made.

An export's output is refused inside the world's ``world/``, its git directory and the files narr
reads as the world (``narr.toml``, ``rules/``), and through a symbolic link anywhere on the path as
typed. A vault's marker (``.narr-export.json``) is trusted only for plain relative names inside
the folder: a marker that names ``..``, an absolute path or a dotted path is foreign and reported,
never acted on, so a shared or synced vault cannot make an export delete another repository's
``HEAD``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, snapshot
from kills import Where, crash_seed, kill_at_line, line_points, preload, run_killed

import narrative as narr_lib
from narrative.errors import InvalidInputError
from narrative.store.outfiles import MARKER

INVALID, CONFLICT = 12, 14


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() or p.is_symlink()}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _forge_marker(vault: Path, listed: dict[str, bytes]) -> None:
    """A marker that lists ``listed`` (name -> the content whose digest it claims)."""
    marker = json.loads((vault / MARKER).read_text("utf-8"))
    marker["files"].update({rel: _digest(data) for rel, data in listed.items()})
    (vault / MARKER).write_text(json.dumps(marker), encoding="utf-8")


@pytest.mark.parametrize("how", ["dotdot", "absolute", "dotted", "backslash"])
def test_a_marker_naming_files_outside_the_vault_is_never_acted_on(
        flat_world: Path, tmp_path: Path, how: str) -> None:
    narr = CLI(flat_world)
    victim = tmp_path / "other-repo" / ".git"
    victim.mkdir(parents=True)
    head = b"ref: refs/heads/main\n"
    (victim / "HEAD").write_bytes(head)
    vault = tmp_path / "shared" / "vault"
    vault.parent.mkdir()
    narr("export", "vault", str(vault))
    name = {"dotdot": "../../other-repo/.git/HEAD", "absolute": str(victim / "HEAD"),
            "dotted": ".git/HEAD", "backslash": "..\\..\\other-repo\\.git\\HEAD"}[how]
    if how == "dotted":  # a dotted file inside the folder: narr never writes one
        (vault / ".git").mkdir()
        (vault / ".git" / "HEAD").write_bytes(head)
    _forge_marker(vault, {name: head})
    before = _files(vault)
    result = narr("export", "vault", str(vault), expect=CONFLICT)
    assert (victim / "HEAD").read_bytes() == head
    assert _files(vault) == before
    assert MARKER in result.stderr and repr(name) in result.stderr
    assert "not written by narr" in result.stderr


def test_a_marker_that_is_not_narrs_is_reported(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    vault = tmp_path / "vault"
    narr("export", "vault", str(vault))
    (vault / MARKER).write_text('{"files": ["Characters/Lin Yuan.md"]}', encoding="utf-8")
    before = _files(vault)
    result = narr("export", "vault", str(vault), expect=CONFLICT)
    assert MARKER in result.stderr and _files(vault) == before


@pytest.mark.parametrize("target", ["world/vaultx", "world", "world/character", ".git/vault", ".git",
                                    "rules", "."])
def test_a_vault_is_never_written_into_the_world(flat_world: Path, target: str) -> None:
    narr = CLI(flat_world)
    before = snapshot(flat_world)
    result = narr("export", "vault", target, expect=INVALID)
    assert result.stderr.startswith("narr: error: ")
    assert ("holds the world" if target == "." else "inside the world") in result.stderr
    assert snapshot(flat_world) == before
    narr("check")
    narr("status")


def test_a_vault_beside_the_world_inside_its_folder_is_allowed(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("export", "vault", "vault")
    assert (flat_world / "vault" / "Characters" / "Lin Yuan.md").is_file()
    narr("check")


def test_a_vault_folder_holding_the_world_is_refused(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    outer = flat_world.parent
    (outer / MARKER).write_text(json.dumps({"files": {}}), encoding="utf-8")
    before = snapshot(flat_world)
    result = narr("export", "vault", str(outer), expect=INVALID)
    assert "holds the world" in result.stderr
    assert snapshot(flat_world) == before


@pytest.mark.parametrize("target", [".git/HEAD", ".git/refs/heads/main", "world/character/x.json",
                                    "world/character/lin-yuan.json", "narr.toml", "rules/x.toml",
                                    "world/new.json"])
@pytest.mark.parametrize("what", ["lorebook", "card"])
def test_an_export_file_is_never_written_into_the_world(flat_world: Path, target: str, what: str) -> None:
    narr = CLI(flat_world)
    before = snapshot(flat_world)
    args = ["export", "lorebook"] if what == "lorebook" else ["export", "card", "lin-yuan"]
    result = narr(*args, "-o", target, expect=INVALID)
    assert "inside the world" in result.stderr or "narr reads" in result.stderr
    assert snapshot(flat_world) == before
    narr("check")


def test_an_export_file_beside_the_world_is_written(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("export", "lorebook", "-o", "book.json")
    assert json.loads((flat_world / "book.json").read_text("utf-8"))["entries"]
    narr("check")


def test_an_export_never_writes_through_a_symbolic_link(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "into-world").symlink_to(flat_world / "world" / "character", target_is_directory=True)
    (tmp_path / "out").symlink_to(elsewhere, target_is_directory=True)
    (tmp_path / "book.json").symlink_to(elsewhere / "book.json")
    (tmp_path / "vault-link").symlink_to(elsewhere, target_is_directory=True)
    before = snapshot(flat_world)
    for args in (["export", "lorebook", "-o", str(tmp_path / "into-world" / "x.json")],
                 ["export", "lorebook", "-o", str(tmp_path / "out" / "book.json")],
                 ["export", "lorebook", "-o", str(tmp_path / "book.json")],
                 ["export", "card", "lin-yuan", "-o", str(tmp_path / "out" / "card.json")],
                 ["export", "vault", str(tmp_path / "vault-link")],
                 ["export", "vault", str(tmp_path / "out" / "vault")]):
        result = narr(*args, expect=INVALID)
        assert "symbolic link" in result.stderr, args
    assert list(elsewhere.iterdir()) == []
    assert (tmp_path / "book.json").is_symlink()
    assert snapshot(flat_world) == before


def test_an_export_file_is_never_written_over_a_pipe_or_folder(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # as a device would be: replacing it by a file breaks whatever reads it
    result = narr("export", "lorebook", "-o", str(pipe), expect=INVALID)
    assert str(pipe) in result.stderr and "not a regular file" in result.stderr
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)
    (tmp_path / "dir").mkdir()
    result = narr("export", "lorebook", "-o", str(tmp_path / "dir"), expect=INVALID)
    assert "is a folder" in result.stderr


def test_the_library_guards_its_own_writes(flat_world: Path) -> None:
    wr = narr_lib.open_world(flat_world)
    try:
        before = snapshot(flat_world)
        with pytest.raises(InvalidInputError, match="inside the world"):
            narr_lib.export_vault(wr, flat_world / "world" / "vault")
        assert snapshot(flat_world) == before
    finally:
        wr.close()


# --- kills during an export into a folder holding the last one ----------------------------------

def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``folder``."""
    return {p.relative_to(folder).as_posix(): (None if p.is_dir() else p.read_bytes())
            for p in sorted(folder.rglob("*"))}


def _beside(folder: Path) -> set[str]:
    return {p.name for p in folder.parent.iterdir()}


@pytest.fixture
def two_exports(flat_world: Path, tmp_path: Path) -> tuple[Path, Path, dict[str, bytes | None],
                                                          dict[str, bytes | None]]:
    """A vault holding an export, the user's own files beside its notes, and the world moved on
    since: the folder as it is (old) and as the next export makes it (new)."""
    narr = CLI(flat_world)
    place = tmp_path / "place"
    place.mkdir()
    (place / "neighbour.txt").write_text("Not the vault's.\n", encoding="utf-8")
    vault = place / "vault"
    narr("export", "vault", str(vault))
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text('{"theme": "dark"}', encoding="utf-8")
    (vault / "Characters" / "My own note.md").write_text("Mine.\n", encoding="utf-8")
    narr("event", "Lin Yuan grows tired", "--set", "lin-yuan.state.mood=tired")
    narr("event", "The ring is gone", "--expire", "black-ring")
    old = _tree(vault)
    pristine = tmp_path / "pristine"
    shutil.copytree(vault, pristine, symlinks=True)
    narr("export", "vault", str(vault))
    new = _tree(vault)
    assert new != old and "Items/Black Ring.md" in old and "Items/Black Ring.md" not in new
    assert new[".obsidian/app.json"] == old[".obsidian/app.json"]
    assert new["Characters/My own note.md"] == b"Mine.\n"
    _restore(pristine, vault)
    return flat_world, vault, old, new


def _restore(pristine: Path, vault: Path) -> None:
    shutil.rmtree(vault)
    shutil.copytree(pristine, vault, symlinks=True)


def _judge(world: Path, vault: Path, old: dict[str, bytes | None], new: dict[str, bytes | None],
           beside: set[str]) -> str:
    """``old`` or ``new``: what the folder holds after a kill; nothing else beside it but the
    trees narr names as its own; the next export reads it right and removes them."""
    now = _tree(vault)
    assert now in (old, new), sorted(set(now.items()) ^ set(old.items()))[:6]
    left = _beside(vault) - beside
    assert all(name.startswith(f".{vault.name}.narr-export-") for name in left), left
    side = "old" if now == old else "new"
    CLI(world)("export", "vault", str(vault))
    assert _tree(vault) == new and _beside(vault) == beside
    return side


def _export_in_child(world: Path, vault: Path, stop_at: Where | None) -> tuple[int, list[str]]:
    """``export_vault`` in a forked child that SIGKILLs itself when it runs line ``stop_at[0]`` of
    outfiles for the ``stop_at[1]``-th time; the lines it ran when not killed."""
    from narrative.store import outfiles

    def export() -> None:
        narr_lib.export_vault(narr_lib.open_world(world), vault)

    return kill_at_line(export, {outfiles.__file__}, stop_at)


def _lines_of(function: str) -> set[str]:
    import inspect

    from narrative.store import outfiles

    code, first = inspect.getsourcelines(getattr(outfiles, function))
    return {f"outfiles.py:{first + i}" for i in range(len(code))}


@pytest.mark.slow
def test_kills_at_the_lines_of_the_export_leave_the_old_vault_or_the_new(two_exports: Any,
                                                                         tmp_path: Path) -> None:
    world, vault, old, new = two_exports
    pristine = tmp_path / "pristine"
    beside = _beside(vault)
    status, lines = _export_in_child(world, vault, None)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and len(lines) > 30
    assert _tree(vault) == new
    runs = set(lines)
    points = line_points(lines)
    # every line from the survey of the old tree on (the swap and what follows it), a sample of the rest
    swap = lines.index(min((w for w in runs if w in _lines_of("_swap")), key=lines.index))
    late = set(lines[swap - 40:])
    rng = random.Random(crash_seed())
    near = [p for p in points if p[0] in late]
    rest = [p for p in points if p[0] not in late]
    points = near + rng.sample(rest, max(0, min(len(rest), 50 - len(near))))
    outcomes = {"old": 0, "new": 0}
    for stop_at in points:
        _restore(pristine, vault)
        status, _ = _export_in_child(world, vault, stop_at)
        assert os.WIFSIGNALED(status), stop_at
        outcomes[_judge(world, vault, old, new, beside)] += 1
    assert len(points) >= 50 and outcomes["old"] and outcomes["new"], (len(points), outcomes)


@pytest.mark.slow
def test_sigkills_at_random_moments_of_narr_export_vault(two_exports: Any, tmp_path: Path) -> None:
    """``narr export vault`` SIGKILLed at a random moment of its work, fifty times."""
    preload("narrative.engine.vault", "narrative.store.outfiles", "narrative.engine.lorebook")
    world, vault, old, new = two_exports
    pristine = tmp_path / "pristine"
    beside = _beside(vault)
    rng = random.Random(crash_seed())
    errfile = tmp_path / "stderr.txt"
    args = ["export", "vault", str(vault)]
    _, took = run_killed(world, args, None, errfile)
    outcomes = {"old": 0, "new": 0}
    for _ in range(50):
        _restore(pristine, vault)
        run_killed(world, args, rng.uniform(0, took * 1.2), errfile)
        outcomes[_judge(world, vault, old, new, beside)] += 1
    assert outcomes["old"] and outcomes["new"], outcomes
