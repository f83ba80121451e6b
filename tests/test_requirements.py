"""A too-old pygit2 or libgit2, an SQLite without FTS5 trigram: one clear error before anything is written.

The versions are faked in a real ``narr`` process (a prelude sets them before the
command runs), so the check is exercised exactly where a user meets it: before
libgit2 opens or makes a repository, the first thing any command that writes a world does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import snapshot

from narrative.errors import RequirementError
from narrative.store import environment

ROOT = Path(__file__).resolve().parent.parent
OLD_PYGIT2 = "import pygit2; pygit2.__version__ = '1.19.1'"
OLD_LIBGIT2 = "import pygit2; pygit2.LIBGIT2_VER = (1, 8, 4); pygit2.LIBGIT2_VERSION = '1.8.4'"
NO_TRIGRAM = ("import narrative.store.environment as e; "
              "e.TRIGRAM_PROBE = e.TRIGRAM_PROBE.replace('trigram', 'nosuchtokenizer')")
OLD_SQLITE = "import sqlite3; sqlite3.sqlite_version_info = (3, 31, 1); sqlite3.sqlite_version = '3.31.1'"


def narr_with(prelude: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``narr ARGS`` in a process where ``prelude`` ran first (the faked library)."""
    code = f"{prelude}\nimport sys\nfrom narrative.cli import main\nmain(sys.argv[1:], prog_name='narr')"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "NARR_NO_SERVER": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_the_floors_in_the_code_are_pyprojects() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    floor = next(d for d in deps if d.startswith("pygit2")).split(">=")[1]
    assert tuple(int(p) for p in floor.split(".")) == environment.PYGIT2_FLOOR


def test_this_machine_meets_the_requirements() -> None:
    assert environment.unmet() == []
    environment.require()


@pytest.mark.parametrize(("prelude", "words"), [
    (OLD_PYGIT2, ["pygit2 1.19.1 is too old", "narr needs pygit2 1.20.1 or newer"]),
    (OLD_LIBGIT2, ["libgit2 1.8.4", "narr needs libgit2 1.9.0 or newer"]),
    (NO_TRIGRAM, ["cannot make narr's search index", "nosuchtokenizer", "FTS5 with the trigram"]),
    (OLD_SQLITE, ["SQLite 3.31.1 is too old", "3.34.0 or newer"]),
], ids=["pygit2", "libgit2", "no-trigram", "old-sqlite"])
def test_init_refuses_in_one_message_and_makes_nothing(tmp_path: Path, prelude: str,
                                                       words: list[str]) -> None:
    result = narr_with(prelude, "init", "tale", "--sample", cwd=tmp_path)
    assert result.returncode == RequirementError.exit_code == 21, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("narr: error: narr cannot run here: "), result.stderr
    assert all(w in result.stderr for w in words), result.stderr
    assert lines[-1].startswith("hint: ") and "narr doctor says more" in lines[-1]
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "tale").exists()


def test_an_event_with_a_too_old_pygit2_changes_nothing(world: Path) -> None:
    before = snapshot(world)
    result = narr_with(OLD_PYGIT2, "event", "Lin Yuan walks to the ferry", "--json", cwd=world)
    assert result.returncode == 21
    error = json.loads(result.stderr)
    assert error["type"] == "RequirementError" and error["exit_code"] == 21
    assert "pip install --upgrade 'pygit2>=1.20.1'" in error["hint"]
    assert snapshot(world) == before
    assert not list((world / ".git" / "narr").glob("journal*"))


def test_every_unmet_requirement_is_named_at_once(tmp_path: Path) -> None:
    result = narr_with(f"{OLD_PYGIT2}\n{NO_TRIGRAM}", "init", "tale", cwd=tmp_path)
    assert result.returncode == 21
    assert "pygit2 1.19.1 is too old" in result.stderr and "nosuchtokenizer" in result.stderr


def test_a_read_meets_the_check_first(world: Path) -> None:
    """A read opens the world as a write does (through libgit2, with the catalog at hand),
    so it meets the check first, in one message, not a traceback."""
    for args in (("log", "-n", "1"), ("get", "Lin Yuan")):
        result = narr_with(NO_TRIGRAM, *args, cwd=world)
        assert result.returncode == 21, (args, result.stderr)
        assert "nosuchtokenizer" in result.stderr and "Traceback" not in result.stderr
