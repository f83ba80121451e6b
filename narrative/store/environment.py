"""What narr needs of the machine's git and SQLite, checked before a world is read or written.

pip keeps an installed package that satisfies a floor, and a Python may come with
an SQLite built without FTS5; either way the failure used to come late: pygit2
before 1.20.1 has no ``Repository.load_filter_list``, so the first event failed
*after* its branch had moved, and an SQLite without the trigram tokenizer made
``narr init`` end in a traceback with the repository half made. So
:mod:`narrative.store.worldrepo` calls :func:`require` before libgit2 opens or makes a
repository (opening a world, ``narr init``, a read that needs libgit2 after all),
which turns each unmet requirement into one :class:`~narrative.errors.RequirementError`
naming the version found, the one needed and the fix, before anything is touched.

The floors here are ``pyproject.toml``'s (a test holds them equal), and CI runs
narr with every dependency at its floor (``tools/floors.py``). The check costs
about 0.2 ms (an in-memory FTS5 table) once per process. ``narr doctor`` reads the
same facts, with the git program's version, which only the transport commands need.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from functools import lru_cache

from narrative.errors import RequirementError
from narrative.store.libgit import pygit2

PYGIT2_FLOOR = (1, 20, 1)  # load_filter_list (1.19.2), typed lookup errors (1.20.1)
LIBGIT2_FLOOR = (1, 9, 0)  # what pygit2 1.20 is built against
SQLITE_FLOOR = (3, 34, 0)  # the first SQLite with FTS5's trigram tokenizer
TRIGRAM_PROBE = "CREATE VIRTUAL TABLE probe USING fts5(text, tokenize='trigram')"


@dataclass(frozen=True)
class Fact:
    """One thing narr depends on: what was found, and when it falls short, why and the fix."""

    name: str
    found: str | None
    needed: str
    problem: str | None = None
    fix: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "found": self.found, "needed": self.needed, "ok": self.ok,
                "problem": self.problem, "fix": self.fix}


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def _parse(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
        if not piece.isdigit():  # 1.20.1rc1: the release it leads to
            break
    return tuple(parts)


def git_library() -> list[Fact]:
    """pygit2's and libgit2's versions against narr's floors."""
    found = str(getattr(pygit2, "__version__", "unknown"))
    wanted = f"{_dotted(PYGIT2_FLOOR)} or newer"
    facts = [Fact("pygit2", found, wanted) if _parse(found) >= PYGIT2_FLOOR else Fact(
        "pygit2", found, wanted,
        problem=f"pygit2 {found} is too old: narr needs pygit2 {wanted}",
        fix=f"pip install --upgrade 'pygit2>={_dotted(PYGIT2_FLOOR)}' (in the environment narr "
            "runs from; pip keeps an old pygit2 that an earlier floor allowed)")]
    libgit2 = tuple(getattr(pygit2, "LIBGIT2_VER", ()))
    lib_found = str(getattr(pygit2, "LIBGIT2_VERSION", _dotted(libgit2) or "unknown"))
    lib_wanted = f"{_dotted(LIBGIT2_FLOOR)} or newer"
    facts.append(Fact("libgit2", lib_found, lib_wanted) if libgit2 >= LIBGIT2_FLOOR else Fact(
        "libgit2", lib_found, lib_wanted,
        problem=f"pygit2 is built against libgit2 {lib_found}: narr needs libgit2 {lib_wanted}",
        fix="install pygit2's own wheel, which bundles a recent libgit2: pip install --force-reinstall "
            "--only-binary pygit2 pygit2"))
    return facts


def sqlite_library() -> list[Fact]:
    """The SQLite that Python's sqlite3 module is built with, and whether its FTS5 has trigram."""
    version = sqlite3.sqlite_version
    wanted = f"{_dotted(SQLITE_FLOOR)} or newer, with FTS5"
    fix = ("run narr with a Python whose sqlite3 module has SQLite 3.34 or newer with FTS5 (the "
           "python.org builds, pyenv, uv and conda all have it)")
    if sqlite3.sqlite_version_info < SQLITE_FLOOR:
        return [Fact("sqlite", version, wanted,
                     problem=f"Python's SQLite {version} is too old for narr's search index: it "
                             f"needs SQLite {wanted} (the trigram tokenizer)", fix=fix)]
    db = sqlite3.connect(":memory:")
    try:
        db.execute(TRIGRAM_PROBE)
    except sqlite3.Error as exc:
        return [Fact("sqlite", version, wanted,
                     problem=f"Python's SQLite {version} cannot make narr's search index ({exc}): "
                             "narr needs FTS5 with the trigram tokenizer", fix=fix)]
    finally:
        db.close()
    return [Fact("sqlite", f"{version} (FTS5 trigram)", wanted)]


def git_program() -> Fact:
    """The ``git`` program: only ``clone``, ``push``, ``pull`` and ``gc`` run it."""
    import shutil  # (these two only here: every command that opens a world loads this module)
    import subprocess

    path = shutil.which("git")
    if path is None:
        return Fact("git", None, "any", problem="no git program on PATH: narr clone, push, pull and "
                    "gc run it (everything else works without)",
                    fix="install git (apt install git, brew install git, ...)")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=5,
                             check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return Fact("git", None, "any", problem=f"{path} --version failed: {exc}",
                    fix="reinstall git")
    return Fact("git", out.removeprefix("git version ").strip(), "any")


def unmet(*, git: bool = True) -> list[Fact]:
    """Every requirement of reading and writing a world that this machine does not meet
    (``git``: pygit2's and libgit2's among them; without, SQLite's alone)."""
    return [f for f in (*(git_library() if git else ()), *sqlite_library()) if not f.ok]


@lru_cache(maxsize=2)
def require(*, git: bool = True) -> None:
    """Raise one :class:`RequirementError` naming every unmet requirement (checked once a
    process); ``git=False``: SQLite's alone, for a read that has not loaded pygit2."""
    missing = unmet(git=git)
    if not missing:
        return
    first, *rest = missing
    raise RequirementError(
        f"narr cannot run here: {first.problem}", details=[f.problem or "" for f in rest],
        hint="; ".join(f.fix or "" for f in missing) + "; narr doctor says more")
