"""git's config files a repository handle reads its settings from, and their stamp.

libgit2 re-reads a changed config file, but each setting it has already looked up
(``core.autocrlf``, ``core.eol``, ``core.filemode``...) stays cached in the handle for
its lifetime: a server kept hashing CRLF files raw after ``git config core.autocrlf
true``, took every file git had checked out again for a hand edit, and left an event's
change out of the working tree. A handle kept between commands (a server's pool, a world a
program keeps open) is used only while :func:`settings_stamp` is what it was when the
handle was opened: a few ``stat`` calls. Attribute files need none of it: libgit2 checks
those itself.

A setting may sit in a file another one includes (``[include] path = ...``,
``[includeIf "..."] path = ...``), so those are stamped too, found as libgit2 finds them:
relative to the including file, ``~/`` in libgit2's home directory, at most
:data:`MAX_DEPTH` deep. Every included file is stamped whatever its condition says: a
condition is a question about the repository (its path, its branch) that a ``stat`` cannot
answer, and a file stamped for nothing costs one ``stat``. One condition changes its answer
with no config file changed: ``onbranch:``, when the branch is switched; where one is written,
``HEAD`` is stamped too. A file is read for its include lines only when it is new or has
changed since it was last read.
"""

from __future__ import annotations

import os
import stat

from narrative.store.libgit import pygit2

MAX_DEPTH = 10
"""Includes followed inside includes, as deep as git and libgit2 follow them."""

Sig = tuple[int, int, int, int] | None

# Each config file read for its include lines: path -> (the signature it had then, its
# include lines: (condition, None for a plain include; the path, as written)).
_READ: dict[str, tuple[Sig, tuple[tuple[str | None, str], ...]]] = {}
_READ_LIMIT = 256  # files remembered; past it the memory starts again
_MAX_BYTES = 1 << 20  # a config file larger than this is stamped, not read for includes


def settings_stamp(found: str) -> tuple[object, ...]:
    """What a repository handle opened on ``found`` (a git directory, as discovered) reads
    its settings from: each config file's identity and times, the files they include with
    theirs (None: absent), and ``HEAD``'s when an include depends on the branch."""
    try:
        with open(os.path.join(found, "commondir"), encoding="utf-8") as fh:
            common = os.path.join(found, fh.read().strip())
    except OSError:
        common = found
    files = (os.path.join(common, "config"), os.path.join(found, "config.worktree"),
             *user_config_files())
    sigs = [followed_sig(path) for path in files]
    included: list[tuple[str, Sig]] = []
    seen: set[str] = set()
    on_branch = False
    for path, sig in zip(files, sigs, strict=True):
        if sig is not None:
            on_branch |= _stamp_includes(path, sig, 1, seen, included)
    if on_branch:
        head = os.path.join(found, "HEAD")
        included.append((head, followed_sig(head)))
    return (*sigs, *included)


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


def followed_sig(path: str | os.PathLike[str]) -> Sig:
    """The file's identity and times, through a symbolic link (a ``~/.gitconfig`` kept
    in a dotfiles folder is edited there, and libgit2 reads it there), None when absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stamp_includes(path: str, sig: Sig, depth: int, seen: set[str],
                    out: list[tuple[str, Sig]]) -> bool:
    """Stamp what the config file ``path`` (of signature ``sig``) includes, depth first;
    whether an include on the way depends on the branch."""
    on_branch = False
    if depth > MAX_DEPTH:
        return on_branch
    for condition, target in _included(path, sig):
        on_branch |= condition is not None and condition.startswith("onbranch:")
        if target in seen:
            continue  # stamped once, however often (or circularly) it is included
        seen.add(target)
        target_sig = followed_sig(target)
        out.append((target, target_sig))
        if target_sig is not None:
            on_branch |= _stamp_includes(target, target_sig, depth + 1, seen, out)
    return on_branch


def _included(path: str, sig: Sig) -> list[tuple[str | None, str]]:
    """The files the config file ``path`` includes, resolved as libgit2 resolves them, each
    with its condition (None: none)."""
    known = _READ.get(path)
    if known is not None and known[0] == sig:
        written = known[1]
    else:
        data = _regular_file(path)
        written = tuple(include_lines(os.fsdecode(data))) if data is not None else ()
        if len(_READ) >= _READ_LIMIT:
            _READ.clear()
        _READ[path] = (sig, written)
    return [(condition, _resolve(value, path)) for condition, value in written if value]


def _regular_file(path: str) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most :data:`_MAX_BYTES`, else
    None: a FIFO put in a config file's place is not waited on for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_BYTES:
            return None
        try:
            return fh.read(_MAX_BYTES)
        except OSError:
            return None


def _resolve(value: str, including: str) -> str:
    """``value`` of an include line of the file ``including``: in libgit2's home directory
    when it starts ``~/``, else relative to the including file's folder."""
    if value.startswith("~/"):
        return os.path.join(_home(), value[2:])
    return os.path.join(os.path.dirname(including), value)


def excludes_file(repo: pygit2.Repository) -> str:
    """The ignore file git's settings name for every repository: ``core.excludesFile``, else
    ``$XDG_CONFIG_HOME/git/ignore`` (``~/.config/git/ignore``)."""
    try:
        named = repo.config["core.excludesFile"]
    except (KeyError, pygit2.GitError, ValueError):
        named = None
    if named:
        named = str(named)
        return os.path.join(_home(), named[2:]) if named.startswith("~/") else named
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(_home(), ".config")
    return os.path.join(xdg, "git", "ignore")


def _home() -> str:
    """Where libgit2 expands ``~``: the ``HOME`` it found when it started, unless a program
    set another since (``pygit2.settings.homedir``)."""
    try:
        home = pygit2.settings.homedir
    except (AttributeError, ValueError, pygit2.GitError):
        home = None
    return home or os.path.expanduser("~")


def include_lines(text: str) -> list[tuple[str | None, str]]:
    """The include lines of a git config file's ``text``: ``path`` in an ``[include]``
    section (condition None) or an ``[includeIf "CONDITION"]`` one, unquoted and unescaped
    as git reads them.

    Only what finding those needs of the format is read here: sections (``[name]``,
    ``[name "sub"]``, the older ``[name.sub]``), comments (``#``, ``;``), quotes, escapes and
    lines continued with a backslash. Text git would refuse yields what it yields; the
    worst a misreading can do is stamp a file for nothing, or leave one out as before.
    """
    text = text.replace("\r\n", "\n")  # as git reads a line's end
    out: list[tuple[str | None, str]] = []
    section: tuple[str, str | None] = ("", None)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\f\v":
            i += 1
        elif c in "#;":
            i = _line_end(text, i)
        elif c == "[":
            section, i = _header(text, i + 1)
        elif c.isalnum():
            start = i
            while i < n and (text[i].isalnum() or text[i] == "-"):
                i += 1
            key = text[start:i].lower()
            while i < n and text[i] in " \t":
                i += 1
            if i < n and text[i] == "=":
                value, i = _value(text, i + 1)
                kind, condition = section
                if key == "path" and (kind, condition is None) in (("include", True),
                                                                   ("includeif", False)):
                    out.append((condition, value))
        else:
            i = _line_end(text, i)  # not a line git reads: on to the next
    return out


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end + 1


def _header(text: str, i: int) -> tuple[tuple[str, str | None], int]:
    """The section of the header starting at ``i`` (after its ``[``), its name lower-cased,
    with its subsection (None: none), and where the header ends."""
    n = len(text)
    start = i
    while i < n and text[i] not in ' \t"]\n':
        i += 1
    name, dot, legacy = text[start:i].partition(".")
    sub: str | None = legacy.lower() if dot else None
    chars: list[str] = []
    quoted = False
    while i < n and text[i] != "\n":
        c = text[i]
        if c == "\\" and quoted and i + 1 < n:
            chars.append(text[i + 1])
            i += 2
            continue
        if c == '"':
            quoted = not quoted
            if not quoted:
                sub = "".join(chars)
        elif c == "]" and not quoted:
            return (name.lower(), sub), i + 1
        elif quoted:
            chars.append(c)
        i += 1
    return ("", None), i  # no closing bracket: not a section git reads


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _value(text: str, i: int) -> tuple[str, int]:
    """A value starting at ``i`` (after its ``=``), and where it ends, read as git reads it:
    blanks outside quotes dropped before and after it and each one a space within it, quotes
    removed, escapes read, lines continued with a backslash joined."""
    n = len(text)
    chars: list[str] = []
    blanks = 0  # blanks outside quotes not yet known to be inside the value
    quoted = False
    while i < n:
        c = text[i]
        if c == "\n" or (c in "#;" and not quoted):
            break
        i += 1
        if c in _BLANKS and not quoted:
            blanks += 1 if chars else 0
            continue
        chars.extend(" " * blanks)
        blanks = 0
        if c == "\\":
            nxt = text[i] if i < n else ""
            i += 1
            if nxt == "\n":
                continue
            if nxt not in _ESCAPES:
                break  # git refuses the line
            chars.append(_ESCAPES[nxt])
        elif c == '"':
            quoted = not quoted
        else:
            chars.append(c)
    return "".join(chars), i


_BLANKS = " \t\r\f\v"
