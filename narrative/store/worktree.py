"""Finding hand edits: every change under ``world/`` that no event has recorded yet.

The git index is kept equal to HEAD's tree, so ``repo.status()`` (libgit2's
stat-cache walk, the same work as ``git status``) names the few files that
changed; only those are read and parsed.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative.errors import InvalidWorldError, Step
from narrative.ids import (
    LAYERS,
    WORLD_DIR,
    Layout,
    is_world_path,
    node_path,
    parse_node_path,
)
from narrative.nodefile import MAX_NODE_BYTES, NodeDict, dump, load_trusted, parse_node_file
from narrative.store import confine, watch
from narrative.store.libgit import pygit2
from narrative.store.objects import Tree, git_tree
from narrative.store.trees import blob_at
from narrative.store.worldrepo import WorldRepo

MB = 1024 * 1024


@dataclass
class HandEdit:
    """One node changed by hand. ``old``/``new`` are None when it did not/does not exist."""

    node_id: str
    old: NodeDict | None
    new: NodeDict | None
    old_path: str | None
    new_path: str | None
    raw_oid: str | None = None  # blob id of the bytes now in the working tree
    canonical: bytes | None = None  # what narr will commit for ``new``

    @property
    def rewrites_file(self) -> bool:
        """The working-tree file is valid but not in canonical form (narr will reformat it)."""
        return self.canonical is not None and self.raw_oid != str(
            pygit2.hash(self.canonical)
        )


@dataclass
class HandEdits:
    edits: dict[str, HandEdit] = field(default_factory=dict)
    # What a reader worked out from this scan (status's field changes...), kept with it: a
    # scan recalled unchanged (:func:`scan_for_reader` with ``recall``) needs none of it again.
    derived: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    problems: list[str] = field(default_factory=list)
    stale_index: list[str] = field(default_factory=list)  # index-only differences to repair
    outside: list[str] = field(default_factory=list)  # changes outside world/ (not story state)
    # Every changed path under world/, valid or not, with the blob id of what the
    # working tree holds (None: deleted). What a reset sets aside, byte for byte.
    raw: dict[str, str | None] = field(default_factory=dict)

    def raise_problems(self) -> None:
        if self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            raise InvalidWorldError(
                self.problems[0] + more,
                details=list(self.problems),
                hint="fix the file ({0} lists every problem); nothing was changed",
                steps=[Step("status")],
            )


def scan(wr: WorldRepo, tree: Tree | None) -> HandEdits:
    """Every uncommitted change under ``world/``, parsed and validated, keyed by node id."""
    head_tree = git_tree(tree)
    out = HandEdits()
    # A linked layer or rules folder, re-encoding attributes: a few lstat calls, so every
    # command that scans (and the event that would write through them) names them.
    out.problems.extend(confine.hazards(wr, shards=False))
    layout = wr.config.layout
    removed: dict[str, tuple[str, NodeDict]] = {}
    added: dict[str, tuple[str, NodeDict, str]] = {}
    modified: list[tuple[str, NodeDict, NodeDict, str]] = []
    # The files a hinted scan read to compare with the index: read and hashed once.
    read: dict[str, tuple[bytes, str]] = {}
    for path in sorted(changed_paths(wr, head_tree, read=read)):
        if not is_world_path(path):
            out.outside.append(path)
            continue
        head_blob = blob_at(head_tree, path)
        full = wr.abs(path)
        known = read.get(path)
        data, raw_oid, problem = ((*known, None) if known is not None
                                  else _read_regular(wr, full, path))
        if problem:
            if not any(h.startswith(f"{path}: ") for h in out.problems):  # named once
                out.problems.append(problem)
            out.raw[path] = "not-a-file"
            continue
        if (str(head_blob.id) if head_blob is not None else None) == raw_oid:
            # The working tree agrees with HEAD; only the index lags (a batch cut short,
            # or a git add): nothing for the story, an index entry to repair.
            out.stale_index.append(path)
            continue
        if raw_oid is not None or head_blob is not None:
            out.raw[path] = raw_oid
        old = _head_node(head_blob, path, layout)
        if data is None:
            if old is not None:
                removed[old["id"]] = (path, old)
            continue
        if parse_node_path(path, layout) is None:
            out.problems.append(_misplaced(path, layout))
            continue
        try:
            new = parse_node_file(data, path, layout)
        except InvalidWorldError as exc:
            out.problems.extend(exc.details or [exc.message])
            continue
        if old is not None:
            modified.append((path, old, new, raw_oid or ""))
        else:
            added[new["id"]] = (path, new, raw_oid or "")

    for path, old, new, raw_oid in modified:
        out.edits[new["id"]] = HandEdit(new["id"], old, new, path, path, raw_oid, dump(new))
    for node_id, (path, old) in removed.items():
        out.edits[node_id] = HandEdit(node_id, old, None, path, None)
    for node_id, (path, new, raw_oid) in added.items():
        before = out.edits.get(node_id)
        if before is not None and before.new is None:
            # The same id moved (e.g. to another layer): one edit, old and new node.
            out.edits[node_id] = HandEdit(node_id, before.old, new, before.old_path, path,
                                          raw_oid, dump(new))
            continue
        clash = _existing_path(head_tree, node_id, layout, exclude=path)
        if clash is not None and clash not in (e.old_path for e in out.edits.values()):
            out.problems.append(
                f"{path}: node id {node_id!r} is already used by {clash} (ids are unique across layers)"
            )
            continue
        out.edits[node_id] = HandEdit(node_id, None, new, None, path, raw_oid, dump(new))
    return out


def changed_paths(wr: WorldRepo, tree: Tree | pygit2.Tree | None, *,
                  read: dict[str, tuple[bytes, str]] | None = None) -> set[str]:
    """Paths where the working tree or the index differs from HEAD: ``git status``'s work.

    The index's stat cache makes this a ``stat`` per file, not a read. Where a
    file's stat data no longer matches (a copy, a clone, a ``touch``) libgit2 must
    hash it; under the write lock ``UPDATE_INDEX`` refreshes the entry when the
    content is the same and libgit2 writes the index, as ``git status`` does, so
    the cost is paid once, not at every event.

    Inside ``narr serve`` a file watcher (:mod:`narrative.store.watch`) may name
    the only paths that can differ; then only those are examined, and ``read`` (when
    given) gets the bytes and blob id of each regular file read to compare it.
    """
    head_tree = git_tree(tree)
    watcher = watch.for_git_dir(wr.git_dir)
    if watcher is None:
        return _changed(wr, head_tree, None)[0]
    ticket = watcher.begin_scan(wr.settings)
    candidates = ticket.candidates
    if candidates:
        candidates = watcher.unsettled(candidates, ticket.sig, wr.root)
    if (candidates == set() and head_tree is not None
            and watcher.index_tree(ticket.sig) == str(head_tree.id)):
        # Nothing touched since a scan or narr's own write left the tree clean, and the
        # index file is the very one known to hold HEAD's tree: nothing to load (13 ms at
        # 10k entries).
        watcher.end_scan(ticket, set())
        return set()
    try:
        out, differing, index_is_head = _changed(wr, head_tree, candidates, read)
    except _Unsure as exc:
        ticket.candidates, ticket.reason = None, str(exc)
        if read is not None:
            read.clear()
        out, differing, index_is_head = _changed(wr, head_tree, None)
    now = watch.index_sig(wr.git_dir)
    if now != ticket.sig and ticket.candidates is None and _may_refresh(wr):
        # A full scan under the write lock refreshed the index's stat data or its cached
        # trees and wrote it: narr's own write, not git's, or the next scan would be a
        # full one again for nothing.
        ticket.sig = now
    if index_is_head and head_tree is not None and now == ticket.sig:
        watcher.remember_index_tree(ticket.sig, str(head_tree.id))
    watcher.end_scan(ticket, differing)
    return out


def _may_refresh(wr: WorldRepo) -> bool:
    """Whether a full scan may write the index (see :func:`_changed`)."""
    return wr.lock.held and not (wr.git_dir / "index.lock").exists()


class _Unsure(Exception):
    """A hinted scan met something only a full scan can judge."""


def _changed(wr: WorldRepo, tree: Tree | pygit2.Tree | None, candidates: set[str] | None,
             read: dict[str, tuple[bytes, str]] | None = None) -> tuple[set[str], set[str], bool]:
    """(paths differing from HEAD, the subset where the working tree differs from the index,
    whether the index holds HEAD's tree)."""
    head_tree = git_tree(tree)
    index = wr.repo.index
    index.read(force=False)
    # Only a writer may refresh (libgit2 then writes the index): a reader racing an
    # event could otherwise write back an index the event has just replaced.
    # Nor while git's own index.lock exists (git at work, or a process killed inside
    # an index write): scan read-only; a writer then refuses before it moves anything.
    # A hinted scan never writes the index: the watcher knows the one it has.
    refresh = candidates is None and _may_refresh(wr)
    out: set[str] = set()
    if candidates is None:
        option = pygit2.enums.DiffOption
        flags = option.INCLUDE_UNTRACKED | option.RECURSE_UNTRACKED_DIRS
        if refresh:
            flags |= option.UPDATE_INDEX
        for delta in index.diff_to_workdir(flags=flags).deltas:
            out.add(delta.old_file.path)
            out.add(delta.new_file.path)
    else:
        out.update(_hinted(wr, index, candidates, read))
    differing = set(out)
    same = False
    if head_tree is not None:
        same = _index_is(index, head_tree, keep=refresh)
        if not same:
            for delta in index.diff_to_tree(head_tree).deltas:
                out.add(delta.old_file.path)
                out.add(delta.new_file.path)
    else:
        out.update(entry.path for entry in index)
    return out, differing, same


def _hinted(wr: WorldRepo, index: pygit2.Index, candidates: set[str],
            read: dict[str, tuple[bytes, str]] | None = None) -> set[str]:
    """Which of ``candidates`` (files or directories) differ between working tree and index.

    Each file is compared with its index entry here, by content: libgit2's
    ``status_file`` reads the file's whole directory to answer for one file (6 ms each
    in a flat layer of 2,500 files, against a few files in a sharded bucket). A merge
    in progress leaves conflict entries only libgit2 reads: then it answers.
    """
    out: set[str] = set()
    paths = sorted(_expand(wr, index, candidates))
    if index.conflicts is not None:
        return _hinted_by_libgit2(wr, paths)
    try:
        trust_mode = wr.repo.config.get_bool("core.fileMode")
    except (KeyError, pygit2.GitError, ValueError):
        trust_mode = True
    for path in paths:
        if _differs_from_index(wr, index, path, trust_mode, read):
            out.add(path)
    return out


_LINK, _EXECUTABLE, _GITLINK = 0o120000, 0o100755, 0o160000


def _differs_from_index(wr: WorldRepo, index: pygit2.Index, path: str, trust_mode: bool,
                        read: dict[str, tuple[bytes, str]] | None = None) -> bool:
    """Whether the file at ``path`` is not what the index holds there (as ``git status``
    would say: added unless ignored, gone, another type or mode, other content)."""
    try:
        entry: pygit2.IndexEntry | None = index[path]
    except KeyError:
        entry = None
    full = os.path.join(wr.root, path)
    try:
        st = os.lstat(full)
    except FileNotFoundError:
        return entry is not None
    except OSError as exc:
        raise _Unsure(f"a path the watcher named could not be examined ({exc})") from None
    if entry is None:
        # As git's own walk: an untracked file or link counts, never a FIFO, socket or device
        # (a whole scan does not see one either; narr check names a node file that is one).
        return ((stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode))
                and not wr.repo.path_is_ignored(path))
    if stat.S_ISLNK(st.st_mode):
        if entry.mode != _LINK:
            return True
        try:
            target = os.fsencode(os.readlink(full))
        except OSError as exc:
            raise _Unsure(f"a path the watcher named could not be examined ({exc})") from None
        return pygit2.hash(target) != entry.id
    if not stat.S_ISREG(st.st_mode) or entry.mode in (_LINK, _GITLINK):
        return True
    if trust_mode and bool(st.st_mode & 0o111) != (entry.mode == _EXECUTABLE):
        return True
    if st.st_size > MAX_NODE_BYTES:
        return True  # no node file: the scan names it without reading it whole
    try:
        with open(full, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise _Unsure(f"a path the watcher named could not be read ({exc})") from None
    oid = wr.worktree_oid(path, data)
    if read is not None:
        read[path] = (data, oid)
    return oid != str(entry.id)


def _hinted_by_libgit2(wr: WorldRepo, paths: list[str]) -> set[str]:
    fs = pygit2.enums.FileStatus
    changed = (fs.WT_NEW | fs.WT_MODIFIED | fs.WT_DELETED | fs.WT_TYPECHANGE | fs.WT_RENAMED
               | fs.WT_UNREADABLE | fs.CONFLICTED)
    out: set[str] = set()
    for path in paths:
        try:
            flags = wr.repo.status_file(path)
        except KeyError:
            continue  # in neither the index nor the working tree
        except (ValueError, pygit2.GitError) as exc:
            raise _Unsure(f"a path the watcher named could not be examined ({exc})") from None
        if flags & fs.IGNORED:
            continue
        if flags & changed:
            out.add(path)
    return out


def _expand(wr: WorldRepo, index: pygit2.Index, candidates: set[str]) -> set[str]:
    """File paths behind the watcher's paths: a directory stands for everything in or under it."""
    files: set[str] = set()
    gone_dirs: list[str] = []
    for rel in candidates:
        if rel == ".git" or rel.startswith(".git/") or "/.git/" in f"/{rel}/":
            continue
        full = wr.root / rel
        if full.is_dir() and not full.is_symlink():
            for dirpath, dirnames, filenames in os.walk(full):
                dirnames[:] = [d for d in dirnames if d != ".git"]
                base = os.path.relpath(dirpath, wr.root).replace(os.sep, "/")
                files.update(f"{base}/{name}" for name in filenames)
            gone_dirs.append(rel)  # files the index holds under it may be gone
        elif full.exists() or full.is_symlink() or rel in index:
            files.add(rel)
        else:
            gone_dirs.append(rel)
    if gone_dirs:
        prefixes = tuple(f"{d}/" for d in gone_dirs)
        files.update(entry.path for entry in index if entry.path.startswith(prefixes))
    return files


_REBUILT_TREES = 0.005  # seconds: longer than a lookup of intact cached trees ever takes


def _index_is(index: pygit2.Index, tree: pygit2.Tree, *, keep: bool = False) -> bool:
    """Whether the index holds exactly ``tree`` (narr keeps it so).

    With the index's cached trees intact (narr writes them with every index) this
    is a lookup, not a walk of a hundred thousand entries. An index written by git
    may lack them: then ``write_tree`` builds every tree (0.2 s at 100k entries),
    and under the write lock (``keep``) the index is written once so that the next
    scan is a lookup again.
    """
    start = time.perf_counter()
    try:
        same = index.write_tree() == tree.id
    except pygit2.GitError:  # e.g. a merge conflict staged by git
        return False
    if same and keep and time.perf_counter() - start > _REBUILT_TREES:
        with contextlib.suppress(pygit2.GitError, OSError):
            index.write()
    return same


def _read_regular(wr: WorldRepo, full: Any,
                  path: str) -> tuple[bytes | None, str | None, str | None]:
    """``(bytes, blob id, problem)`` of a working-tree file; bytes None when it is gone.

    The blob id is the one ``git add`` would store (line endings converted), so a
    file narr checked out with CRLF endings equals its blob.
    """
    try:
        if full.is_symlink():
            return None, None, f"{path}: is a symbolic link; node files must be regular files"
        if full.is_dir():
            return None, None, f"{path}: is a directory where a node file was expected"
        if full.exists() and not full.is_file():  # reading a FIFO would wait for ever
            return None, None, f"{path}: is not a regular file (a FIFO, socket or device); " \
                               "node files must be regular files"
        size = full.stat().st_size
        if size > MAX_NODE_BYTES:  # a gigabyte "node" would be read whole, then parsed
            return None, None, (f"{path}: is {size / MB:,.1f} MB, more than the "
                                f"{MAX_NODE_BYTES // MB} MB a node file may hold")
        data = full.read_bytes()
    except FileNotFoundError:
        return None, None, None
    except OSError as exc:
        return None, None, f"{path}: cannot be read ({exc.strerror})"
    return data, wr.worktree_oid(path, data), None


def _head_node(blob: pygit2.Blob | None, path: str, layout: Layout) -> NodeDict | None:
    if blob is None or parse_node_path(path, layout) is None:
        return None
    try:
        return load_trusted(blob.data)
    except ValueError:
        return None


def _existing_path(tree: pygit2.Tree | None, node_id: str, layout: Layout,
                   exclude: str) -> str | None:
    for layer in LAYERS:
        candidate = node_path(node_id, layer, layout)
        if candidate != exclude and blob_at(tree, candidate) is not None:
            return candidate
    return None


def _misplaced(path: str, layout: Layout) -> str:
    parts = path.split("/")
    name = parts[-1]
    if len(parts) >= 3 and parts[1] in LAYERS and name.endswith(".json"):
        node_id = name[:-5]
        from narrative.ids import id_problem

        problem = id_problem(node_id)
        if problem:
            return f"{path}: {problem}"
        if layout == "sharded":
            return (f"{path}: in a sharded world this node's file belongs at "
                    f"{node_path(node_id, parts[1], layout)}")
        return f"{path}: node files sit directly in world/{parts[1]}/ in a flat world"
    return (f"{path}: not a node file (node files are world/<layer>/<id>.json with layer one of "
            f"{', '.join(LAYERS)})")


def odd_json_entries(wr: WorldRepo) -> list[str]:
    """Entries under ``world/`` named like node files that are no regular file.

    git does not see an (empty) directory or a FIFO, so a ``lin-yuan.json`` that is
    one would silently not be a node: ``narr check`` names them, as it names
    symbolic links. A walk of the working tree, so only the full check pays it.
    """
    out: list[str] = []
    root = wr.abs(WORLD_DIR)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            if not name.endswith(".json"):
                continue
            full = Path(dirpath) / name
            rel = full.relative_to(wr.root).as_posix()
            if full.is_symlink() or full.is_file():
                continue
            if full.is_dir():
                out.append(f"{rel}: is a directory where a node file was expected")
            else:
                out.append(f"{rel}: is not a regular file (a FIFO, socket or device); "
                           "node files must be regular files")
    return sorted(out)


def scan_for_event(wr: WorldRepo, head_tree: Tree | None) -> HandEdits:
    """The hand edits the next event absorbs.

    Inside a batch (:mod:`narrative.store.batch`), once an event has recorded the
    hand edits found at its start, the following events skip the scan: its cost
    grows with the world, theirs must not. Edits made during the batch wait for
    the first event after it; the journal never overwrites them meanwhile.
    """
    if wr.batch is not None and wr.batch.clean:
        return HandEdits()
    kept, wr.kept_scan = wr.kept_scan, None
    if kept is not None and kept[0] == _scan_key(wr, head_tree):
        return kept[1]
    return scan(wr, head_tree)


def _scan_key(wr: WorldRepo, head_tree: Tree | None) -> tuple[object, ...] | None:
    """What a scan found holds while this key does: the same hold of the write lock (no other
    narr process wrote), the same HEAD tree and the very index file (nothing of this process
    rewrote it). None outside the lock: there nothing seen stays so."""
    if not wr.lock.held:
        return None
    return (wr.lock.holds, str(head_tree.id) if head_tree is not None else None,
            watch.index_sig(wr.git_dir))


def scan_for_reader(wr: WorldRepo, head_tree: Tree | None, *, recall: bool = False) -> HandEdits:
    """The scan for commands that only read (status, nodes, check).

    When no writer is at work they take the lock for the scan, so a stale stat
    cache is refreshed once (and ``narr status`` stays as fast as ``git status``);
    beside a running writer they scan without refreshing.

    ``recall``: the caller only reads what it gets (``narr status``, which a page or an agent
    asks again and again): under a file watcher that has seen nothing happen since the
    last such scan began, that scan's answer is the answer (:func:`_recalled`), and what
    was worked out from it (:attr:`HandEdits.derived`) comes with it.
    """
    wr.follow_settings()  # a world kept open: git's settings may have changed since
    watcher = watch.for_git_dir(wr.git_dir)
    if wr.lock.held:
        # An event under the same hold (its names resolved first) reuses this scan: a walk
        # of the world each, not two.
        found = scan(wr, head_tree)
        key = _scan_key(wr, head_tree)
        wr.kept_scan = (key, found) if key is not None else None
        return found
    if (watcher is not None and watcher.trusted()) or not wr.lock.try_acquire():
        # (a scan the watcher narrows never refreshes the index: no lock to take)
        if recall and watcher is not None:
            return _recalled(wr, head_tree, watcher)
        return scan(wr, head_tree)
    try:
        return scan(wr, head_tree)
    finally:
        wr.lock.release()


def _recalled(wr: WorldRepo, head_tree: Tree | None, watcher: watch.WorldWatcher) -> HandEdits:
    """The last recalled scan again when nothing it depends on can have changed since it
    began, else a new scan, remembered.

    What a scan finds is a function of the working tree's files, git's index, HEAD's tree,
    git's settings and ignore and attribute files, and ``narr.toml``'s layout. The watcher
    says that no file under the world was written, made, moved or removed since the last
    one began (its count of changes has not moved, every earlier change drained first, and
    it was trusted throughout); the index file is the same file (:func:`watch.index_sig`);
    the rest is the key. Anything else: scan.
    """
    from narrative.store.gitconfig import excludes_file, followed_sig

    git_dir = wr.git_dir
    key = (str(head_tree.id) if head_tree is not None else None, wr.settings, wr.config.layout,
           *(followed_sig(path) for path in (git_dir / "info" / "exclude",
                                             git_dir / "info" / "attributes",
                                             excludes_file(wr.repo))))
    recalled = watcher.recall(key)
    if isinstance(recalled, HandEdits):
        return recalled
    mark = watcher.mark()
    found = scan(wr, head_tree)
    watcher.keep(mark, key, found)
    return found
