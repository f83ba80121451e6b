"""git's config files a repository handle reads its settings from, and their stamp.

libgit2 re-reads a changed config file, but each setting it has already looked up
(``core.autocrlf``, ``core.eol``, ``core.filemode``...) stays cached in the handle for
its lifetime: a server kept hashing CRLF files raw after ``git config core.autocrlf
true``, took every file git had checked out again for a hand edit, and left an event's
change out of the working tree. A handle kept between commands (a server's pool, a world a
program keeps open) is used only while :func:`settings_stamp` is what it was when the
handle was opened: a few ``stat`` calls. Attribute files need none of it: libgit2 checks
those itself.
"""

from __future__ import annotations

import os

from narrative.store.libgit import pygit2

Sig = tuple[int, int, int, int] | None


def settings_stamp(found: str) -> tuple[object, ...]:
    """What a repository handle opened on ``found`` (a git directory, as discovered) reads
    its settings from: each config file's identity and times (None: absent)."""
    try:
        with open(os.path.join(found, "commondir"), encoding="utf-8") as fh:
            common = os.path.join(found, fh.read().strip())
    except OSError:
        common = found
    files = (os.path.join(common, "config"), os.path.join(found, "config.worktree"),
             *user_config_files())
    return tuple(_sig(path) for path in files)


def user_config_files() -> list[str]:
    """The system, XDG and global config files libgit2 reads, where it looks for them."""
    levels = pygit2.enums.ConfigLevel
    files: list[str] = []
    for level, name in ((levels.SYSTEM, "gitconfig"), (levels.XDG, "config"),
                        (levels.GLOBAL, ".gitconfig"), (levels.PROGRAMDATA, "config")):
        try:
            where = pygit2.settings.search_path[level]
        except (ValueError, pygit2.GitError):
            continue
        files.extend(os.path.join(d, name) for d in (where or "").split(os.pathsep) if d)
    return files


def _sig(path: str) -> Sig:
    """The file's identity and times, through a symbolic link (a ``~/.gitconfig`` kept
    in a dotfiles folder is edited there, and libgit2 reads it there), None when absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
