"""The one way to move the story: HEAD (or a branch) and the working tree together.

Every command that changes what the working tree shows (an event, reset,
switch, a fast-forward replay, restoring set-aside edits) does the same steps:
take the write lock, finish a write a crash interrupted, scan for hand edits,
plan the path updates, run them through the journal (the ref move is the commit
point), and bring the catalog along. :func:`writing` is the first two and says
what recovery did, the same way for every command; :func:`plan` the fourth;
:func:`move` the last two.

Only the paths that differ between the two trees, plus the paths the user has
changed, are touched; the cost follows the events crossed, not the world's size.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from narrative.errors import BusyError, InvalidWorldError, NarrError, StorageError
from narrative.nodefile import NodeDict
from narrative.store import deferred, journal
from narrative.store.libgit import pygit2
from narrative.store.lock import WriteLock, refuse_if_called_off
from narrative.store.objects import Tree, git_tree
from narrative.store.trees import blob_at, diff_blobs
from narrative.store.worktree import HandEdits
from narrative.store.worldrepo import WorldRepo


@contextmanager
def writing(wr: WorldRepo) -> Iterator[list[str]]:
    """Hold the write lock, with any interrupted write finished first.

    Yields the notes of what recovery did (empty: nothing to recover), for the
    command to report. Inside a batch, the batch has recovered already.
    """
    with wr.lock:
        refuse_if_called_off()
        if wr.batch is not None:
            yield []
            return
        note = journal.recover(wr)
        yield [note] if note else []


def finish_interrupted(wr: WorldRepo) -> str | None:
    """For readers: finish (or drop) a write a crash interrupted; say what was done.

    A journal left beside a running writer is that writer's own, so this only acts
    when it can take the write lock at once; otherwise the writer finishes it.
    """
    if not (wr.narr_dir / journal.JOURNAL).exists():
        return None
    lock = WriteLock(wr.lock.path, timeout=0)
    try:
        lock.acquire()
    except BusyError:
        return None
    try:
        return journal.recover(wr)
    finally:
        lock.release()


def changed_paths(wr: WorldRepo, old: Tree, new: Tree) -> set[str]:
    """Every file path that differs between two commit trees."""
    return _changed_paths(wr.repo, git_tree(old), git_tree(new))


def _changed_paths(repo: pygit2.Repository, old: pygit2.Tree | None,
                   new: pygit2.Tree | None) -> set[str]:
    return {path for path, _, _ in diff_blobs(repo, old, new)}


def plan(wr: WorldRepo, head: Tree, new: Tree, scan: HandEdits,
         overrides: dict[str, bytes | None] | None = None,
         keep_worktree: frozenset[str] = frozenset()) -> list[journal.PathUpdate]:
    """Path updates taking the working tree from (HEAD + the user's changes) to ``new_tree``.

    ``overrides`` give working-tree content that differs from ``new_tree`` (edits a
    reset restores or carries over); the index always ends equal to ``new_tree``.
    Paths in ``keep_worktree`` keep whatever the working tree holds now.
    """
    repo = wr.repo
    head_tree, new_tree = git_tree(head), git_tree(new)
    overrides = overrides or {}
    odd = [p for p, oid in scan.raw.items() if oid == "not-a-file"]
    if odd:
        raise InvalidWorldError(
            f"{odd[0]} is not a regular file (a directory or a symbolic link): narr will not "
            "replace it", details=odd, hint="move it out of world/ and run the command again")
    stale = set(scan.stale_index)  # the index differs from HEAD there: always rewrite it
    paths = _changed_paths(repo, head_tree, new_tree) | set(overrides) | set(scan.raw) | stale
    updates = []
    for path in sorted(paths):
        head_blob = blob_at(head_tree, path)
        current = scan.raw[path] if path in scan.raw else (
            str(head_blob.id) if head_blob is not None else None)
        target_blob = blob_at(new_tree, path)
        index = str(target_blob.id) if target_blob is not None else None
        if path in keep_worktree:
            after = current
        elif path in overrides:
            data = overrides[path]
            after = str(repo.create_blob(data)) if data is not None else None
        else:
            after = index
        unchanged_index = index == (str(head_blob.id) if head_blob is not None else None)
        if current == after and unchanged_index and path not in stale:
            continue
        updates.append(journal.PathUpdate(path, current, after, index))
    return updates


def journaled(path: str) -> bool:
    """Whether the journal may name ``path`` (a node-file-shaped path under ``world/``)."""
    return journal.plain_world_path(path)


def index_to(wr: WorldRepo, tree: Tree, paths: list[str]) -> None:
    """Set the index entries of ``paths`` to ``tree``'s blobs, leaving the files alone.

    For paths the journal does not name (outside ``world/``): a crash before this
    leaves them staged, which loses nothing.
    """
    if not paths:
        return
    entries = {}
    git = git_tree(tree)
    for path in paths:
        blob = blob_at(git, path)
        entries[path] = (journal.hash_file(wr, path), str(blob.id) if blob is not None else None)
    journal.write_index(wr, entries)


@dataclass(frozen=True)
class Move:
    """One move of the story: the ref, where it goes, the files that come along."""

    ref: str | None  # None: the ref stays (restoring edits moves only files)
    old: str | None
    new: str  # a commit id, or ``journal.SYMBOLIC + ref`` when HEAD changes branch
    message: str
    updates: tuple[journal.PathUpdate, ...]
    tree: Tree  # the commit tree the story lands on
    # narr's own change of the world (id -> node, None: gone) from ``from_tree``: the
    # catalog applies it instead of diffing trees
    nodes: Mapping[str, NodeDict | None] | None = None
    from_tree: Tree | None = None
    # refs made just for this move (set-aside edits, an abandoned chain): dropped again when
    # the story never moved (a full disk at the journal), so a second try keeps one copy
    made_refs: tuple[str | None, ...] = ()


@dataclass
class Moved:
    kept: list[str] = field(default_factory=list)  # paths the user changed meanwhile: left alone


def _trees(wr: WorldRepo, m: Move) -> tuple[str, str] | None:
    """(the tree the story leaves, the tree it lands on) when a server's watcher may use them:
    the updates of :func:`plan` and of a sealed event take an index holding one to the other."""
    from narrative.store import watch

    if m.ref is None or m.old is None or m.old.startswith(journal.SYMBOLIC) \
            or m.new.startswith(journal.SYMBOLIC) or watch.for_git_dir(wr.git_dir) is None:
        return None
    if m.from_tree is not None:
        return m.from_tree.id, m.tree.id
    try:
        old = wr.repo[m.old].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return str(old.tree_id), m.tree.id


def move(wr: WorldRepo, m: Move) -> Moved:
    """Run ``m`` through the journal, then bring the catalog to the new world."""
    try:
        kept = journal.run(wr, journal.Transaction(ref=m.ref, old=m.old, new=m.new,
                                                   message=m.message, updates=m.updates),
                           _trees(wr, m))
    except NarrError as exc:
        if not (isinstance(exc, StorageError) and exc.recorded):  # nothing moved
            for name in m.made_refs:
                if name is not None:
                    with contextlib.suppress(KeyError, OSError, pygit2.GitError):
                        wr.repo.references.delete(name)
        raise
    if m.ref is not None:
        new_world = wr.world_tree_id(m.tree)
        old_world = (wr.world_tree_id(m.from_tree)
                     if m.nodes is not None and m.from_tree is not None else None)
        if deferred.deferring():  # a server, with the answer still to give
            deferred.later(partial(_catalog_follows_at, wr.root, m.nodes, old_world, new_world))
        else:
            _catalog_follows(wr, m.nodes, old_world, new_world)
    return Moved(kept)


def _catalog_follows(wr: WorldRepo, nodes: Mapping[str, NodeDict | None] | None,
                     old_world: str | None, new_world: str) -> None:
    """Bring the catalog to the world the story moved to: by the nodes a sealed event
    wrote (from ``old_world``), else by a tree diff. A catalog narr cannot update now (a
    full disk) is no failure: it still names the old tree, so it follows HEAD next time."""
    with contextlib.suppress(sqlite3.Error):
        if nodes is not None and old_world is not None:
            wr.catalog.apply(nodes, old_world, new_world, wr.repo, wr.config.layout)
        else:
            wr.catalog.sync(wr.repo, new_world, wr.config.layout)


def _catalog_follows_at(root: Path, nodes: Mapping[str, NodeDict | None] | None,
                        old_world: str | None, new_world: str) -> None:
    """:func:`_catalog_follows` once the command's own repository is closed."""
    with contextlib.suppress(NarrError), WorldRepo.open(root) as wr:
        _catalog_follows(wr, nodes, old_world, new_world)
