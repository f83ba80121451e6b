"""Files an export writes outside the world: where it is told, whole or not at all, and never over
the user's work.

*Where.* :func:`target` checks a path before anything is written. No part of it as typed is a
symbolic link (a link planted in a shared folder would carry the write elsewhere), and it is not
the world's: not inside ``world/`` or the git directory, not a file or folder narr reads as the
world (``narr.toml``, ``rules/``, ``.gitattributes``), and a folder never holds the world. Places
are compared by name (real paths) and by the file system's identity (device and inode) of each
folder on the way, so a case-insensitive disk or a bind mount does not slip past.

*Whole.* :func:`write_file` writes one file through a temporary file beside it and a rename.
:func:`write_folder` writes a tree of files (a vault): it builds the whole new tree beside the
folder and swaps the two in one system call (Linux's ``renameat2(RENAME_EXCHANGE)``, macOS's
``renamex_np(RENAME_SWAP)``), so a kill at any moment leaves the folder as it was or as the new
export, never a mix that the next export would misread. The user's own files in the folder (an
``.obsidian/`` folder, a note of theirs) go into the new tree as hard links (copies where the
disk has none) before the swap, and whatever reached the old tree during the swap is moved
across after it. Where no swap exists, two renames do it, and the next export puts back a
folder a kill left between them.

*Only what it made.* The folder's :data:`MARKER` lists the files the last export wrote, with
their digests. It is trusted only when every name in it is one an export could have written
there: a plain relative path of the kind asked for (``.md`` notes), no ``..``, no absolute path,
no dotted part, no backslash. Anything else is a marker narr did not write: it is reported and
never acted on, so a shared vault cannot make an export delete a file outside it. A listed file
whose digest differs was changed by the user since: the export is refused, naming it, before
anything is written.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Final

from narrative import safejson
from narrative.errors import BusyError, ConflictError, InvalidInputError

if TYPE_CHECKING:
    from narrative.store.worldrepo import WorldRepo

MARKER: Final = ".narr-export.json"
MAX_MARKER: Final = 16 * 1024 * 1024  # a marker of 100k notes is about 12 MB
_DIGEST = re.compile(r"[0-9a-f]{64}")
_STAGE = ".narr-export-"  # .<folder>.narr-export-XXXX: a tree being built, or the old one going
_WAIT = 10.0  # seconds an export waits for another export beside it
_PLACES_HINT = "write it outside the world's world/, .git/, narr.toml and rules/ (beside them is fine)"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- where an export may write -----------------------------------------------------------------


@dataclass(frozen=True)
class Places:
    """The world's places no export writes into or over (real paths), and its root."""

    root: Path
    kept: tuple[tuple[str, Path], ...]  # (what to call it, real path)

    def identities(self) -> dict[tuple[int, int], str]:
        out = {}
        for name, path in self.kept:
            try:
                st = os.stat(path)
            except OSError:
                continue
            out[(st.st_dev, st.st_ino)] = name
        return out


def places(wr: WorldRepo) -> Places:
    """The places of ``wr`` an export keeps out of: its node files, git's files, its settings."""
    root = Path(os.path.realpath(wr.root))
    git_dirs = [Path(os.path.realpath(wr.git_dir))]
    common = wr.git_dir / "commondir"  # a linked worktree's shared git directory
    try:
        shared = common.read_text("utf-8").strip() if common.is_file() else ""
    except (OSError, UnicodeDecodeError):
        shared = ""
    if shared:
        git_dirs.append(Path(os.path.realpath(wr.git_dir / shared)))
    kept = [("world/", root / "world"), *((f"{g.name}/", g) for g in git_dirs), (".git", root / ".git"),
            ("narr.toml", root / "narr.toml"), ("rules/", root / "rules"),
            (".gitattributes", root / ".gitattributes")]
    return Places(root, tuple((name, Path(os.path.realpath(path))) for name, path in kept))


def target(typed: str | os.PathLike[str], where: Places | None, *, base: str | os.PathLike[str] | None = None,
           folder: bool = False) -> Path:
    """The absolute path ``typed`` names (relative to ``base``, by default the command's
    directory), refused when a part of it as typed is a symbolic link, or it lies in the world
    ``where`` describes (``folder``: or holds it)."""
    from narrative.invocation import cwd

    given = Path(typed)
    if given.is_absolute():
        path, parts = Path(given.anchor), given.parts[1:]
    else:
        path, parts = Path(os.path.realpath(base if base is not None else cwd())), given.parts
    there = True  # what is checked so far exists
    for part in parts:
        if part == ".":
            continue
        if part == "..":
            path = path.parent  # no link on the way so far: the parent by name is the real one
            continue
        path = path / part
        if not there:
            continue
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            there = False
            continue
        except NotADirectoryError:
            raise InvalidInputError(f"{typed}: {path.parent} is not a folder") from None
        if stat.S_ISLNK(mode):
            raise InvalidInputError(
                f"{typed}: {path} is a symbolic link; an export never writes through one",
                hint=f"give the real path ({os.path.realpath(path)})")
    if where is not None:
        _outside_the_world(typed, path, where, folder=folder)
    return path


def _outside_the_world(typed: str | os.PathLike[str], path: Path, where: Places, *, folder: bool) -> None:
    for name, kept in where.kept:
        if path == kept or kept in path.parents:
            raise InvalidInputError(f"{typed}: inside the world ({name}); narr reads it as the world, "
                                    "so an export never writes there", hint=_PLACES_HINT)
    ids = where.identities()
    for place in (path, *path.parents):
        try:
            st = os.stat(place)
        except OSError:
            continue
        found = ids.get((st.st_dev, st.st_ino))
        if found is not None:
            raise InvalidInputError(f"{typed}: inside the world ({found}); narr reads it as the world, "
                                    "so an export never writes there", hint=_PLACES_HINT)
    if folder:
        try:
            st = os.stat(path)
        except OSError:
            return
        for place in (where.root, *where.root.parents):
            try:
                there = os.stat(place)
            except OSError:
                continue
            if (there.st_dev, there.st_ino) == (st.st_dev, st.st_ino):
                raise InvalidInputError(f"{typed}: the folder holds the world ({where.root}); an export "
                                        "writes into a folder of its own", hint=_PLACES_HINT)


# --- one file --------------------------------------------------------------------------------


def _new_file(folder: Path, prefix: str) -> tuple[int, str]:
    """A new temporary file in ``folder``, open for writing, made as any file the user makes is
    (``0666`` less the umask: ``tempfile.mkstemp``'s ``0600`` would leave an export the user's
    alone, unreadable by the tools meant to read it)."""
    for _ in range(100):
        tmp = os.path.join(folder, f"{prefix}{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                           | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{folder}: no free name for a temporary file")


def _new_folder(parent: Path, prefix: str) -> Path:
    """A new folder in ``parent`` made as any folder the user makes is (``0777`` less the umask)."""
    for _ in range(100):
        stage = parent / f"{prefix}{os.urandom(6).hex()}"
        try:
            os.mkdir(stage, 0o777)
            return stage
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent}: no free name for a new folder")


def write_file(path: Path, data: bytes) -> None:
    """``data`` as the file ``path``, atomically; never over a folder, a device or a link."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise InvalidInputError(f"{path}: is a folder, not a file to write")
    if mode is not None and not stat.S_ISREG(mode):
        raise InvalidInputError(f"{path}: not a regular file; an export writes (and replaces) only files")
    folder = path.parent
    if not folder.is_dir():
        raise InvalidInputError(f"{folder}: no such folder")
    fd, tmp = _new_file(folder, f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if mode is not None:  # a file written over keeps its permissions
                os.fchmod(fh.fileno(), stat.S_IMODE(mode))
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- a folder of files -------------------------------------------------------------------------


def _plain(rel: str, suffixes: tuple[str, ...] | None) -> bool:
    """A name an export writes: a relative POSIX path of plain parts (and one of ``suffixes``)."""
    if not rel or "\\" in rel or "\x00" in rel:
        return False
    p = PurePosixPath(rel)
    if p.is_absolute() or rel != p.as_posix():
        return False
    if any(part in ("", ".", "..") or part.startswith(".") for part in rel.split("/")):
        return False
    return suffixes is None or rel.lower().endswith(suffixes)


def _check_paths(files: dict[str, bytes], suffixes: tuple[str, ...] | None) -> None:
    seen: set[str] = set()
    for rel in files:
        if not _plain(rel, suffixes):
            raise InvalidInputError(f"{rel!r} cannot be written in an export folder")
        folded = rel.casefold()
        if folded in seen:  # one file on a case-insensitive disk
            raise InvalidInputError(f"two files would be {rel!r} on a disk that ignores case")
        seen.add(folded)


def _foreign(folder: Path, why: str) -> ConflictError:
    return ConflictError(f"{folder / MARKER}: not written by narr ({why}); nothing was changed",
                         hint="if the folder is yours, remove the marker and export into a new folder")


def _previous(folder: Path, suffixes: tuple[str, ...] | None) -> dict[str, str] | None:
    """The files (and digests) the last export wrote into ``folder``; None when it has no marker.
    A marker that names anything an export could not have written is refused, not trusted."""
    marker = folder / MARKER
    try:
        st = os.lstat(marker)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise _foreign(folder, "it is not a regular file")
    if st.st_size > MAX_MARKER:
        raise _foreign(folder, f"it is {st.st_size:,} bytes, more than the {MAX_MARKER:,} of a marker")
    try:
        value = safejson.loads(marker.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        raise _foreign(folder, "it is not JSON") from None
    files = value.get("files") if isinstance(value, dict) else None
    if not isinstance(files, dict):
        raise _foreign(folder, "it lists no files")
    for rel, digest in files.items():
        if not _plain(rel, suffixes):
            raise _foreign(folder, f"it names {rel!r}, which no export writes")
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise _foreign(folder, f"the digest of {rel!r} is not one narr writes")
    return dict(files)


@dataclass
class _Old:
    """What a folder holds besides its marker: the previous export's files and the user's."""

    dirs: list[str]  # the folders to make again (relative): the user's and those holding theirs
    carried: dict[str, int]  # the user's files and links -> st_mode
    changed: list[str]


def _walk(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``folder`` (relative POSIX path, lstat), parents first, links not followed."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(folder / rel_dir if rel_dir else folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                st = entry.stat(follow_symlinks=False)
                yield rel, st
                if stat.S_ISDIR(st.st_mode):
                    stack.append(rel)


def _survey(folder: Path, previous: dict[str, str], files: dict[str, bytes]) -> _Old:
    old = _Old([], {}, [])
    dirs: list[str] = []
    filled: set[str] = set()  # folders with something in them
    for rel, st in _walk(folder):
        if "/" in rel:
            filled.add(rel.rpartition("/")[0])
        if rel == MARKER:
            continue
        if stat.S_ISDIR(st.st_mode):
            dirs.append(rel)
            if rel in previous or rel in files:
                old.changed.append(rel)
            continue
        if rel in previous:
            if stat.S_ISLNK(st.st_mode):
                raise InvalidInputError(f"{folder / rel}: a symbolic link; an export never writes "
                                        "through one")
            if not stat.S_ISREG(st.st_mode) or _digest((folder / rel).read_bytes()) != previous[rel]:
                old.changed.append(rel)
            continue
        if rel in files:
            old.changed.append(rel)  # the user's file where this export writes one
        old.carried[rel] = st.st_mode
    for rel in files:  # a folder this export needs where the user has a file
        for parent in PurePosixPath(rel).parents:
            if str(parent) != "." and str(parent) in old.carried:
                old.changed.append(str(parent))
    # a folder only the last export's notes filled goes with them; the user's stay
    empty = [rel for rel in dirs if rel not in filled]
    keep = {str(p) for rel in [*old.carried, *empty] for p in PurePosixPath(rel).parents if str(p) != "."}
    old.dirs = [rel for rel in dirs if rel in keep or rel not in filled]
    return old


def write_folder(folder: Path, files: dict[str, bytes], about: dict[str, Any], *,
                 suffixes: tuple[str, ...] | None = None) -> list[str]:
    """Write ``files`` (POSIX paths inside ``folder`` -> bytes) as the folder's export; returns
    the paths removed because the previous export had them and this one does not.
    ``suffixes``: the only kinds of file this export writes (what a marker may name)."""
    _check_paths(files, suffixes)
    if folder.is_symlink():
        raise InvalidInputError(f"{folder}: a symbolic link; give the folder itself")
    marker = json.dumps({**about, "files": {rel: _digest(data) for rel, data in sorted(files.items())}},
                        indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if folder.exists() and not folder.is_dir():
        raise InvalidInputError(f"{folder}: not a folder")
    parent = folder.parent
    if not parent.is_dir():
        raise InvalidInputError(f"{parent}: no such folder")
    with _exporting(folder):
        _recover(folder)
        exists = folder.is_dir()
        previous: dict[str, str] = {}
        old = _Old([], {}, [])
        if exists and any(folder.iterdir()):
            found = _previous(folder, suffixes)
            if found is None:
                raise ConflictError(f"{folder}: the folder is not empty and no narr export wrote it",
                                    hint="export into a new or empty folder")
            previous = found
            old = _survey(folder, previous, files)
            if old.changed:
                raise ConflictError(
                    f"{folder}: {len(old.changed)} file(s) changed or added since the last export, "
                    f"which it would overwrite: {', '.join(sorted(set(old.changed))[:5])}",
                    hint="import the vault first (narr import DIR), or export into a new folder")
        stage = _new_folder(parent, f".{folder.name}{_STAGE}")
        try:
            _build(stage, folder if exists else None, old, files, marker.encode("utf-8"))
            if exists:
                _swap(stage, folder)  # the commit point: stage now holds the old tree
                _move_late_arrivals(stage, folder, old, previous)
            else:
                os.rename(stage, folder)
        except FileExistsError:
            raise ConflictError(f"{folder}: made by someone else while the export ran; nothing "
                                "was changed", hint="export again") from None
        except OSError as exc:
            if exc.errno == errno.ENOTEMPTY:
                raise ConflictError(f"{folder}: made by someone else while the export ran; nothing "
                                    "was changed", hint="export again") from None
            raise
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    return sorted(rel for rel in previous if rel not in files)


def _build(stage: Path, folder: Path | None, old: _Old, files: dict[str, bytes], marker: bytes) -> None:
    """The new tree in ``stage``: the user's folders and files from ``folder``, then ``files``."""
    if folder is not None:
        os.chmod(stage, stat.S_IMODE(os.stat(folder).st_mode))
        for rel in old.dirs:
            os.mkdir(stage / rel)
            os.chmod(stage / rel, stat.S_IMODE(os.stat(folder / rel).st_mode))
        for rel, mode in old.carried.items():
            _carry(folder / rel, stage / rel, mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(stage, 0o777 & ~umask)
    for rel, data in files.items():
        path = stage.joinpath(*PurePosixPath(rel).parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "xb") as fh:
            fh.write(data)
    with open(stage / MARKER, "xb") as fh:
        fh.write(marker)


def _carry(src: Path, dst: Path, mode: int) -> None:
    """The user's file ``src`` at ``dst`` too: the same file (a hard link), a copy where the disk
    cannot link, a link made again for a symbolic link."""
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(src), dst)
        return
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        if not stat.S_ISREG(mode):
            raise InvalidInputError(f"{src}: neither a file, a folder nor a link; an export "
                                    "cannot carry it into the new tree") from None
        shutil.copy2(src, dst, follow_symlinks=False)


def _move_late_arrivals(gone: Path, folder: Path, old: _Old, previous: dict[str, str]) -> None:
    """Whatever the user saved into the old tree while the new one was built goes across too:
    nothing of theirs is removed with the old tree."""
    for rel, st in list(_walk(gone)):
        if rel == MARKER or stat.S_ISDIR(st.st_mode):
            continue
        if rel in previous and rel not in old.carried and stat.S_ISREG(st.st_mode) \
                and _digest((gone / rel).read_bytes()) == previous[rel]:
            continue  # the last export's note, as it wrote it
        try:
            now = os.lstat(folder / rel)
        except (FileNotFoundError, NotADirectoryError):
            now = None
        if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            continue  # carried as a hard link: the same file
        if now is not None and rel in old.carried and stat.S_ISREG(st.st_mode) \
                and stat.S_ISREG(now.st_mode) and (gone / rel).read_bytes() == (folder / rel).read_bytes():
            continue  # carried as a copy
        dest = _free_name(folder, rel)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(gone / rel, dest)


def _free_name(folder: Path, rel: str) -> Path:
    path = folder / rel
    n = 1
    while os.path.lexists(path):
        stem, dot, ext = PurePosixPath(rel).name.rpartition(".")
        name = f"{stem} (kept {n}).{ext}" if dot and stem else f"{PurePosixPath(rel).name} (kept {n})"
        path = (folder / rel).parent / name
        n += 1
    return path


# --- the swap, the lock beside the folder, and what a kill leaves ---------------------------------

_RENAME_EXCHANGE: Final = 2  # linux/fs.h
_RENAME_SWAP: Final = 2  # macOS sys/stdio.h
_AT_FDCWD: Final = -100
_swap_call: list[Any] = []


def _exchange() -> Any:
    """The C function that swaps two paths in one step (None where there is none)."""
    if not _swap_call:
        fn = None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if sys.platform.startswith("linux"):
                fn = libc.renameat2
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            elif sys.platform == "darwin":
                fn = libc.renamex_np
                fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
        except (OSError, AttributeError):
            fn = None
        _swap_call.append(fn)
    return _swap_call[0]


def _swap(a: Path, b: Path) -> None:
    """Exchange the folders ``a`` and ``b`` at once; where the system cannot, ``b`` moves to a
    name :func:`_recover` knows, then ``a`` to ``b``."""
    fn = _exchange()
    if fn is not None:
        if sys.platform.startswith("linux"):
            done = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
        else:
            done = fn(os.fsencode(a), os.fsencode(b), _RENAME_SWAP)
        if done == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(b))
    aside = b.parent / f".{b.name}{_STAGE}old"
    os.rename(b, aside)  # a kill from here to the next line: _recover puts it back
    os.rename(a, b)
    os.rename(aside, a)


def _recover(folder: Path) -> None:
    """Put back a folder a kill left moved aside, and remove the trees kills left beside it."""
    aside = folder.parent / f".{folder.name}{_STAGE}old"
    if aside.is_dir() and not os.path.lexists(folder):
        os.rename(aside, folder)
    prefix = f".{folder.name}{_STAGE}"
    with os.scandir(folder.parent) as entries:
        stale = [Path(e.path) for e in entries
                 if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)]
    for tree in stale:
        shutil.rmtree(tree, ignore_errors=True)


@contextmanager
def _exporting(folder: Path) -> Iterator[None]:
    """One export at a time beside ``folder``: ``flock`` on its parent folder (released by the
    system when a process dies), so the trees one export builds are never another's to clean."""
    import fcntl

    fd = os.open(folder.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + _WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BusyError(f"{folder}: another export beside it has run for {_WAIT:.0f} s; "
                                    "nothing was changed", hint="export again when it is done") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
