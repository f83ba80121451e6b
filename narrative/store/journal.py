"""Crash-safe moves of a branch together with the working tree and the index.

Moving the branch ref is the commit point. Before it, a journal names every
path to update with three blob ids: what the working tree holds now (``before``),
what it must hold afterwards (``after``) and what the index must hold (``index``).
After it, the working tree and the index are brought along and the journal is
removed. A process killed at any moment leaves either the old state (ref not
moved: the journal is dropped) or the new one (ref moved: :func:`recover` rolls
the working tree forward). A file whose content is neither ``before`` nor
``after`` was changed by the user meanwhile and is left alone: it simply becomes
a hand edit, so no edit is ever overwritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from narrative import safejson
from narrative.errors import BusyError, ConflictError, StorageError, storage_error
from narrative.ids import WORLD_DIR
from narrative.store import clean_entry, confine, watch
from narrative.store.libgit import pygit2
from narrative.store.worldrepo import WorldRepo

JOURNAL = "journal.json"
STAGED = ".staged"  # a working-tree file's new bytes, in .git/narr/tmp before they take its place


@dataclass(frozen=True)
class PathUpdate:
    path: str
    before: str | None
    after: str | None
    index: str | None


@dataclass(frozen=True)
class Transaction:
    ref: str | None  # None: no ref moves, only the working tree (restoring set-aside edits)
    old: str | None
    new: str
    message: str
    updates: tuple[PathUpdate, ...]


def _journal_path(wr: WorldRepo) -> Path:
    return wr.narr_dir / JOURNAL


def write_atomic(path: Path, data: bytes, tmp_dir: Path) -> None:
    """Replace ``path`` with ``data`` so a reader sees the old bytes or the new, never half.

    A full or read-only disk is a :class:`StorageError` naming the file, and leaves
    no half-written temporary file behind.
    """
    _written_then_renamed(path, data, tmp_dir / f"{path.name}.{os.getpid()}.tmp", False)


def _written_then_renamed(path: Path, data: bytes, tmp: Path, remove_first: bool) -> None:
    try:
        tmp.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
        if remove_first:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise storage_error(exc, str(path)) or exc from None


def run(wr: WorldRepo, txn: Transaction, trees: tuple[str, str] | None = None) -> list[str]:
    """Move ``txn.ref`` and bring the working tree and index along.

    ``trees`` (the commit trees the move goes from and to, when the updates take an index
    holding the first to the second) lets a server's watcher skip rebuilding the index's
    cached trees. Returns the paths left untouched because the user changed them meanwhile.
    """
    current = _ref_target(wr, txn.ref) if txn.ref is not None else txn.old
    if current != txn.old:
        raise ConflictError(
            f"{txn.ref} moved while narr was working (now at {str(current)[:12]})",
            hint="run the command again",
        )
    _refuse_git_locks(wr, txn.ref)
    # A layer or shard folder that is a link would take the files out of the world.
    confine.refuse_links(wr.root, (u.path for u in txn.updates))
    journal = _journal_path(wr)
    payload = asdict(txn)
    write_atomic(journal, json.dumps(payload).encode(), wr.narr_dir / "tmp")
    try:
        if txn.ref is not None:
            _set_ref(wr, txn.ref, txn.new, txn.message)
    except (pygit2.GitError, OSError) as exc:
        journal.unlink(missing_ok=True)  # nothing moved: nothing to recover
        full = storage_error(exc, txn.ref or "the working tree") if isinstance(exc, OSError) else None
        if full is not None:
            raise full from None
        raise BusyError(f"cannot move {txn.ref}: {exc}",
                        hint="another git process may be at work; nothing was changed") from None
    try:
        kept = _apply(wr, txn.updates, trees)
    except StorageError as exc:
        exc.recorded = True  # the journal stays: the next command finishes the job
        exc.hint = ("the story has moved; free some space and any narr command finishes "
                    "writing the files")
        raise
    journal.unlink(missing_ok=True)
    return kept


def _git_locks(wr: WorldRepo, ref: str | None) -> list[Path]:
    """Lock files git (or an interrupted narr) leaves while it writes the index or a ref."""
    names = ["index.lock"] + ([f"{ref}.lock"] if ref is not None else [])
    head = wr.head_ref()
    if ref == "HEAD" and head:
        names.append(f"{head}.lock")
    return [wr.git_dir / n for n in names]


def _clear_leftover_locks(wr: WorldRepo, ref: str | None, journal: Path) -> None:
    """Remove git lock files an interrupted narr left behind.

    The interrupted process may have died inside git's own index or ref write. A
    lock file younger than its journal is that process's leftover: narr's own
    write lock is held, so no other narr is writing.
    """
    try:
        since = journal.stat().st_mtime
    except FileNotFoundError:
        return
    for lock in _git_locks(wr, ref):
        try:
            if lock.stat().st_mtime >= since:
                lock.unlink()
        except FileNotFoundError:
            continue


def _refuse_git_locks(wr: WorldRepo, ref: str | None) -> None:
    """Refuse before anything moves when git is (or was, and died) writing the same files."""
    for lock in _git_locks(wr, ref):
        if lock.exists():
            raise BusyError(
                f"{lock.relative_to(wr.root)} exists: another git process is writing this "
                "repository, or one was killed",
                hint=f"if no git command is running, remove {lock.relative_to(wr.root)} "
                     "and run the command again; nothing was changed",
            )


def recover(wr: WorldRepo) -> str | None:
    """Finish or drop an interrupted transaction; say what was done (None if nothing)."""
    journal = _journal_path(wr)
    try:
        payload = safejson.loads(journal.read_bytes())
    except FileNotFoundError:
        return None
    except ValueError:
        payload = None
    txn = _parse_journal(wr, payload)
    if txn is None:
        kept = _set_journal_aside(journal)
        return (f"a journal narr did not write (or that is damaged) was found and not acted on; "
                f"it is kept as {kept.relative_to(wr.root)}; nothing was changed")
    # Without a ref there is no commit point: the files are brought forward, which
    # leaves alone any the user changed meanwhile.
    current = _ref_target(wr, txn.ref) if txn.ref is not None else txn.new
    if current == txn.new:
        _clear_leftover_locks(wr, txn.ref, journal)
        _unstage(wr, txn.updates)
        _apply(wr, txn.updates)
        note = f"finished an interrupted narr command ({txn.message})"
    elif current == txn.old:
        _clear_leftover_locks(wr, txn.ref, journal)
        note = f"rolled back an interrupted narr command ({txn.message})"
    else:
        note = f"dropped the journal of an interrupted narr command: {txn.ref} has moved since"
    _drop_staged(wr)
    journal.unlink(missing_ok=True)
    return note


SYMBOLIC = "ref: "
REJECTED = "journal.rejected.json"
_OID = re.compile(r"[0-9a-f]{40}")


def _parse_journal(wr: WorldRepo, payload: Any) -> Transaction | None:
    """The journal's transaction, or None when it is not one narr could have written.

    A journal tells narr which files to write: a crafted one naming ``../x`` or
    ``.git/config`` would write anywhere, so every path must be a plain relative
    path under ``world/``, every blob must exist and every ref be a branch or HEAD.
    """
    try:
        if not isinstance(payload, dict) or set(payload) != {"ref", "old", "new", "message",
                                                             "updates"}:
            return None
        updates = payload["updates"]
        if not isinstance(updates, list) or not all(
                isinstance(u, dict) and set(u) == {"path", "before", "after", "index"}
                for u in updates):
            return None
        txn = Transaction(ref=payload["ref"], old=payload["old"], new=payload["new"],
                          message=payload["message"],
                          updates=tuple(PathUpdate(**u) for u in updates))
    except TypeError:
        return None
    if not (txn.ref is None or txn.ref == "HEAD" or (
            isinstance(txn.ref, str) and txn.ref.startswith("refs/heads/")
            and pygit2.reference_is_valid_name(txn.ref))):
        return None
    if not isinstance(txn.message, str):
        return None
    if txn.old is not None and not _is_ref_target(txn.old):
        return None
    if not _is_ref_target(txn.new):
        return None
    for u in txn.updates:
        if not plain_world_path(u.path):
            return None
        if not (u.before is None or u.before == "not-a-file"
                or (isinstance(u.before, str) and _OID.fullmatch(u.before))):
            return None
        for oid in (u.after, u.index):
            if oid is not None and not (isinstance(oid, str) and _OID.fullmatch(oid)
                                        and oid in wr.repo):
                return None
    return txn


def _is_ref_target(target: object) -> bool:
    """A commit id, or ``ref: refs/heads/x`` (what :func:`_ref_target` returns)."""
    if not isinstance(target, str):
        return False
    if target.startswith(SYMBOLIC):
        name = target[len(SYMBOLIC):]
        return name.startswith("refs/heads/") and pygit2.reference_is_valid_name(name)
    return _OID.fullmatch(target) is not None


def plain_world_path(path: object) -> bool:
    """A relative POSIX path under ``world/`` with no ``.``, ``..``, empty or odd parts."""
    if not isinstance(path, str) or "\\" in path or "\0" in path:
        return False
    parts = path.split("/")
    return (len(parts) >= 3 and parts[0] == WORLD_DIR
            and all(p not in ("", ".", "..") and p.lower() != ".git" for p in parts))


def _set_journal_aside(journal: Path) -> Path:
    """Rename a journal narr will not execute, so it can be looked at (never deleted)."""
    kept = journal.with_name(REJECTED)
    os.replace(journal, kept)
    return kept


def _ref_target(wr: WorldRepo, ref: str) -> str | None:
    """A ref's commit id, or ``ref: refs/heads/x`` for a symbolic ref (HEAD on a branch)."""
    try:
        reference = wr.repo.references[ref]
    except KeyError:
        return None
    if reference.type == pygit2.enums.ReferenceType.SYMBOLIC:
        return SYMBOLIC + str(reference.target)
    return str(reference.target)


def _set_ref(wr: WorldRepo, ref: str, new: str, message: str) -> None:
    if new.startswith(SYMBOLIC):
        # Switching branches: libgit2 logs "checkout: moving from A to B" in HEAD's reflog.
        wr.repo.set_head(new[len(SYMBOLIC):])
        return
    wr.repo.create_reference_direct(ref, pygit2.Oid(hex=new), True, message=message)


def _apply(wr: WorldRepo, updates: tuple[PathUpdate, ...],
           trees: tuple[str, str] | None = None) -> list[str]:
    """Bring the working tree to ``after`` and the index to ``index`` for every update."""
    tmp_dir = wr.narr_dir / "tmp"
    kept: list[str] = []
    now_by_path: dict[str, str | None] = {}
    checked: set[str] = set()
    for n, u in enumerate(updates):
        full = wr.abs(u.path)
        if confine.link_on_the_way(wr.root, u.path, checked) is not None:
            kept.append(u.path)  # a link made since (run refused one before): never through it
            now_by_path[u.path] = "not-a-file"
            continue
        now = hash_file(wr, u.path)
        if now != u.after:
            if now == u.before:
                if u.after is None:
                    full.unlink(missing_ok=True)
                    _prune_dirs(full.parent, wr.root)
                else:
                    full.parent.mkdir(parents=True, exist_ok=True)
                    put_file(full, wr.checkout_bytes(u.path, wr.blob_bytes(u.after)),
                         _staged(tmp_dir, n, u.path))
                now = u.after
            else:
                kept.append(u.path)
        now_by_path[u.path] = now
    if wr.batch is not None:
        # One index write for the whole batch; if it never comes (a crash), the next
        # full scan finds those entries stale and repairs them.
        wr.batch.deferred_index.update({u.path: u.index for u in updates})
        return kept
    write_index(wr, {u.path: (now_by_path[u.path], u.index) for u in updates}, trees)
    return kept


def _staged(tmp_dir: Path, n: int, path: str) -> Path:
    """Where a transaction's ``n``-th update (of ``path``) is written whole before it takes
    its place."""
    return tmp_dir / f"{path.rsplit('/', 1)[-1]}.{n}{STAGED}"


def put_file(full: Path, data: bytes, staged: Path) -> None:
    """Put ``data`` at ``full``: written whole at ``staged`` first, then renamed into place.

    The old file is removed before the rename, as ``git checkout`` does: renaming over an
    existing file makes ext4 (``auto_da_alloc``) push the new file's data to the disk at
    once, 1-3 ms a file, most of what a small move costs. A crash between the two steps
    leaves the file absent and its new bytes staged; :func:`_unstage` puts them in place.
    """
    _written_then_renamed(full, data, staged, True)


def _unstage(wr: WorldRepo, updates: tuple[PathUpdate, ...]) -> None:
    """Finish the renames a crash cut short (see :func:`put_file`).

    A staged file is only put in place where the file is absent and the staged bytes
    are exactly the update's ``after``: anything else is the user's, and stays.
    """
    tmp_dir = wr.narr_dir / "tmp"
    for n, u in enumerate(updates):
        staged = _staged(tmp_dir, n, u.path)
        full = wr.abs(u.path)
        try:
            if u.after is None or full.exists() or full.is_symlink() \
                    or wr.worktree_oid(u.path, staged.read_bytes()) != u.after:
                continue
            if confine.link_on_the_way(wr.root, u.path, set()) is None:
                os.rename(staged, full)
        except FileNotFoundError:
            continue


def _drop_staged(wr: WorldRepo) -> None:
    """Remove what an interrupted move staged and never put in place."""
    with contextlib.suppress(OSError):
        for leftover in (wr.narr_dir / "tmp").glob(f"*{STAGED}"):
            leftover.unlink(missing_ok=True)


def flush_index(wr: WorldRepo, deferred: dict[str, str | None]) -> None:
    """Write the index entries a batch deferred."""
    entries = {path: (hash_file(wr, path), oid) for path, oid in deferred.items()}
    if entries:
        write_index(wr, entries)


def write_index(wr: WorldRepo, entries: dict[str, tuple[str | None, str | None]],
                trees: tuple[str, str] | None = None) -> None:
    """Set index entries (path -> (blob now in the working tree, blob the index must hold)).

    With ``trees`` (from, to): when a server's watcher knows that the index held ``from``,
    these entries make it hold ``to``, and its cached trees are left for later (rebuilding
    them reads every tree of the world: tens of milliseconds at 10k nodes). A process
    without a server finds them missing once and writes them back (``_index_is``).
    """
    index = wr.repo.index
    before = watch.index_sig(wr.git_dir)
    index.read(force=False)  # re-read only if it changed on disk since libgit2 loaded it
    read = watch.index_sig(wr.git_dir)
    steady: dict[str, watch.FileSig] = {}  # paths the index now holds as the working tree has them
    differing = {path for path, (now, oid) in entries.items() if now != oid}  # left as they were
    for path, (now, oid) in entries.items():
        if oid is None:
            if path in index:
                index.remove(path)
            if now is None:
                steady[path] = None
        elif now == oid:
            st = _unchanged_stat(wr, path, oid)
            if st is not None and clean_entry.add_clean(index, path, oid, st):
                steady[path] = watch.stat_sig(st)
                continue
            seen = watch.file_sig(wr.abs(path))
            index.add(path)  # fresh stat data: the index stays a valid stat cache
            if seen is not None and watch.file_sig(wr.abs(path)) == seen:
                steady[path] = seen  # nobody wrote it while libgit2 read it
            if index[path].mode != pygit2.enums.FileMode.BLOB:
                # a chmod +x is no story change: node files are committed 100644, and the
                # index must say so too, or git sees a staged mode change narr never made
                index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=oid), pygit2.enums.FileMode.BLOB))
        else:
            index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=oid), pygit2.enums.FileMode.BLOB))
    # Recompute the cached trees the changed entries invalidated (the trees exist
    # already), so the next scan can tell "index == HEAD" without a walk.
    tree: str | None = None
    watcher = watch.for_git_dir(wr.git_dir)
    if (trees is not None and watcher is not None and before == read
            and watcher.index_tree(read) == trees[0]):
        tree = trees[1]
    else:
        with contextlib.suppress(pygit2.GitError):
            tree = str(index.write_tree())
    try:
        index.write()
    except (pygit2.GitError, OSError) as exc:
        raise BusyError(
            f"the story moved, but git's index could not be written ({exc})",
            hint="the next narr command finishes the job (remove .git/index.lock if no git "
                 "command is running)") from None
    watch.index_written(wr.git_dir, before, read, watch.index_sig(wr.git_dir), tree, steady,
                        differing)


def _unchanged_stat(wr: WorldRepo, relpath: str, oid: str) -> os.stat_result | None:
    """The file's ``stat`` when it holds blob ``oid`` and did not change while it was read
    (the index entry made from it then says the truth), else None."""
    path = wr.abs(relpath)
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or hash_file(wr, relpath) != oid:
            return None
        if watch.stat_sig(os.lstat(path)) != watch.stat_sig(st):
            return None
    except OSError:
        return None
    return st


def hash_file(wr: WorldRepo, relpath: str) -> str | None:
    """The blob id git would store for the working-tree file (its clean filters applied)."""
    path = wr.abs(relpath)
    try:
        if path.is_symlink() or not path.is_file():
            return None if not path.exists() and not path.is_symlink() else "not-a-file"
        return wr.worktree_oid(relpath, path.read_bytes())
    except FileNotFoundError:
        return None


def _prune_dirs(directory: Path, root: Path) -> None:
    """Drop directories a deletion left empty, up to (not including) ``world/<layer>``."""
    world = root / "world"
    while directory != root and directory.parent != world and directory != world:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent
