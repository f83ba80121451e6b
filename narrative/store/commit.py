"""Sealing an event: blobs, the trees above them, the commit, the branch, the working tree.

Every command that adds an event (``event``, ``revert``, ``replay``, ``merge``, and
``chapter``, whose events are sealed as one chain with one move) ends here, and so does
the genesis a new world starts with (:func:`seal_genesis`), so there is one place
that writes a record into history: one encoding, one signature, one catalog entry. An
event's move goes the way every move of the story goes (:func:`narrative.store.move.move`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from narrative.model import EventRecord
from narrative.nodefile import NodeDict, dump
from narrative.store import journal, records
from narrative.store.history import LARGE_COMMIT
from narrative.store.libgit import pygit2
from narrative.store.move import Move, move
from narrative.store.objects import Commit, Tree, git_tree
from narrative.store.trees import blob_at, update_tree
from narrative.store.view import WorldView
from narrative.store.worldrepo import WorldRepo


@dataclass
class Sealed:
    commit: str
    kept: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)  # a chain's, oldest first


def seal(view: WorldView, finals: dict[str, NodeDict | None], record: EventRecord,
         *, when: datetime | None = None, merged: Commit | None = None) -> Sealed:
    """Commit ``finals`` (node id -> node after the event, None = gone) on top of the view's tree.

    ``finals`` holds every node whose committed state changes: hand edits the event
    absorbs and the event's own diffusions. ``merged`` is a merge event's second
    parent (the merged branch's tip); the first parent is always HEAD, the story
    line the record's changes start from.
    """
    return seal_chain(view, [(finals, record)], when=when, merged=merged)


def seal_chain(view: WorldView, steps: Sequence[tuple[Mapping[str, NodeDict | None], EventRecord]],
               *, when: datetime | None = None, merged: Commit | None = None,
               message: str | None = None) -> Sealed:
    """Commit a chain of events on top of the view's tree, each on the one before, and move the
    story to the last with one move: all of them are recorded, or (a crash, an error before the
    ref moves) none.

    Each step is ``(finals, record)`` as :func:`seal` takes them, the first step's finals
    holding the hand edits it absorbs; a later step's are only the nodes it changes. The
    commits are built in memory (blobs and the trees on changed paths); the working tree and
    the index go from HEAD's to the last commit's in the one journalled move, whose ref move
    is the commit point. ``merged`` is the first step's second parent.
    """
    wr = view.wr
    repo = wr.repo
    ref = wr.require_branch(merging=merged is not None)
    head = wr.head_commit()
    tree = git_tree(view.tree)
    assert head is not None and tree is not None and steps

    workdir = view.hand.raw  # path -> blob id now in the working tree, where it differs
    where: dict[str, str | None] = {}  # node -> its path in the last tree built
    all_paths: set[str] = set()
    nodes: dict[str, NodeDict | None] = {}
    tree_id = tree.id
    parents: list[str] = [head.id, *([merged.id] if merged is not None else [])]
    commits: list[tuple[str, str, EventRecord, str]] = []  # commit, parent, record, message
    for k, (finals, record) in enumerate(steps):
        tree_changes: dict[str, pygit2.Oid | None] = {}
        for node_id, node in finals.items():
            old_path = where[node_id] if node_id in where else view.committed_path(node_id)
            new_path = view.path(node) if node is not None else None
            if node is not None and new_path is not None:
                tree_changes[new_path] = repo.create_blob(dump(node))
            if old_path is not None and old_path != new_path:
                tree_changes[old_path] = None
            where[node_id] = new_path
            nodes[node_id] = node
        if k == 0:
            for path in view.hand.stale_index:
                head_blob = blob_at(tree, path)
                tree_changes.setdefault(path, head_blob.id if head_blob is not None else None)
        all_paths.update(tree_changes)
        tree_id = update_tree(repo, tree_id, tree_changes)
        encoded = records.encode(record)
        commit = _commit(wr, None, encoded, tree_id, parents, when)
        commits.append((str(commit), str(parents[0]), record, encoded))
        parents = [str(commit)]

    new_tree_obj = repo[tree_id]
    assert isinstance(new_tree_obj, pygit2.Tree)
    # Every path the trees change and every path the user changed by hand ends equal to
    # the last tree: a node made by hand and ended by this very event leaves no file.
    updates = []
    for path in sorted(all_paths | set(workdir)):
        if path in workdir:
            before = workdir[path]
        else:
            blob = blob_at(tree, path)
            before = str(blob.id) if blob is not None else None
        target = blob_at(new_tree_obj, path)
        after = str(target.id) if target is not None else None
        updates.append(journal.PathUpdate(path, before, after, after))
    last = commits[-1]
    moved = move(wr, Move(
        ref=ref, old=str(head.id), new=last[0],
        message=message or f"narr {_verb(last[2])}: {records.subject_of(last[2].content)}",
        updates=tuple(updates), tree=Tree(new_tree_obj), nodes=nodes, from_tree=view.tree,
    ))
    # The events are recorded; a cache narr cannot update now (a full disk) is no failure:
    # it still names the old tree, so it follows HEAD by a tree diff next time.
    with contextlib.suppress(sqlite3.Error):
        for commit_id, parent_id, record, encoded in commits:
            _remember(wr, record, commit_id, parent_id, encoded)
    if wr.batch is not None:
        wr.batch.clean = True  # the hand edits are recorded; later events of the batch skip the scan
    return Sealed(last[0], moved.kept, [c[0] for c in commits])


def seal_genesis(wr: WorldRepo, tree: str, record: EventRecord, *, ref: str,
                 parent: str | None = None, when: datetime | None = None) -> str:
    """Commit a new world's genesis ``record`` on ``tree`` and point ``ref`` at it.

    ``ref`` is ``refs/heads/main`` for a new repository (created), or ``HEAD`` for a
    repository made a world in place (``parent`` is then its tip, whose history stays).
    The catalog starts at the genesis world. Returns the commit id.
    """
    message = records.encode(record)
    if ref == "HEAD":
        commit = _commit(wr, "HEAD", message, tree, [parent] if parent else [], when)
    else:
        commit = _commit(wr, None, message, tree, [parent] if parent else [], when)
        wr.repo.create_reference_direct(ref, commit, True,
                                        message=f"narr init: genesis of {wr.config.name}")
    git = wr.repo[tree]
    assert isinstance(git, pygit2.Tree)
    wr.catalog.sync(wr.repo, wr.world_tree_id(git), wr.config.layout)
    _remember(wr, record, str(commit), parent, message, summarise=True)
    return str(commit)


def _commit(wr: WorldRepo, ref: str | None, message: str, tree: pygit2.Oid | str,
            parents: list[str], when: datetime | None) -> pygit2.Oid:
    sig = wr.signature(when)
    return wr.repo.create_commit(ref, sig, sig, message, tree, parents)


def _remember(wr: WorldRepo, record: EventRecord, commit: str, parent: str | None, message: str,
              *, summarise: bool = False) -> None:
    """Where the event is, and for a large record (or when asked) its one-line summary, so
    no listing ever parses it (:func:`narrative.store.history.summaries`)."""
    large = summarise or len(message) > LARGE_COMMIT // 4  # characters: up to 4 bytes each
    wr.catalog.remember_event(record.id, commit, records.record_summary_row(commit, parent, record)
                              if large else None)


def _verb(record: EventRecord) -> str:
    """How the reflog names the move: a replayed or reverting event says so."""
    if record.replay_of:
        return "replay"
    if record.reverts:
        return "revert"
    return record.kind

