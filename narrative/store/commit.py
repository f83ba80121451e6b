"""Sealing an event: blobs, the trees above them, the commit, the branch, the working tree.

Every command that adds an event (``event``, ``revert``, ``replay``) ends here, so
there is one place that writes history; the move itself goes the way every move
of the story goes (:func:`narrative.store.move.move`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime

import pygit2

from narrative.model import EventRecord
from narrative.nodefile import NodeDict, dump
from narrative.store import journal, records
from narrative.store.history import LARGE_COMMIT
from narrative.store.move import Move, move
from narrative.store.objects import Commit, Tree, git_tree
from narrative.store.trees import blob_at, update_tree
from narrative.store.view import WorldView


@dataclass
class Sealed:
    commit: str
    kept: list[str] = field(default_factory=list)


def seal(view: WorldView, finals: dict[str, NodeDict | None], record: EventRecord,
         *, when: datetime | None = None, merged: Commit | None = None) -> Sealed:
    """Commit ``finals`` (node id -> node after the event, None = gone) on top of the view's tree.

    ``finals`` holds every node whose committed state changes: hand edits the event
    absorbs and the event's own diffusions. ``merged`` is a merge event's second
    parent (the merged branch's tip); the first parent is always HEAD, the story
    line the record's changes start from.
    """
    wr = view.wr
    repo = wr.repo
    ref = wr.require_branch(merging=merged is not None)
    head = wr.head_commit()
    tree = git_tree(view.tree)
    assert head is not None and tree is not None

    workdir = view.hand.raw  # path -> blob id now in the working tree, where it differs

    tree_changes: dict[str, pygit2.Oid | None] = {}
    for node_id, node in finals.items():
        old_path = view.committed_path(node_id)
        new_path = view.path(node) if node is not None else None
        if node is not None and new_path is not None:
            tree_changes[new_path] = repo.create_blob(dump(node))
        if old_path is not None and old_path != new_path:
            tree_changes[old_path] = None
    for path in view.hand.stale_index:
        head_blob = blob_at(tree, path)
        tree_changes.setdefault(path, head_blob.id if head_blob is not None else None)

    new_tree = update_tree(repo, tree.id, tree_changes)
    sig = wr.signature(when)
    message = records.encode(record)
    commit = repo.create_commit(None, sig, sig, message, new_tree,
                               [head.id, *([merged.id] if merged is not None else [])])

    new_tree_obj = repo[new_tree]
    assert isinstance(new_tree_obj, pygit2.Tree)
    # Every path the tree changes and every path the user changed by hand ends equal to
    # the new tree: a node made by hand and ended by this very event leaves no file.
    updates = []
    for path in sorted(set(tree_changes) | set(workdir)):
        if path in workdir:
            before = workdir[path]
        else:
            blob = blob_at(tree, path)
            before = str(blob.id) if blob is not None else None
        target = blob_at(new_tree_obj, path)
        after = str(target.id) if target is not None else None
        updates.append(journal.PathUpdate(path, before, after, after))
    moved = move(wr, Move(
        ref=ref, old=str(head.id), new=str(commit),
        message=f"narr {_verb(record)}: {records.subject_of(record.content)}",
        updates=tuple(updates), tree=Tree(new_tree_obj), nodes=finals, from_tree=view.tree,
    ))
    # The event is recorded; a cache narr cannot update now (a full disk) is no failure:
    # it still names the old tree, so it follows HEAD by a tree diff next time.
    with contextlib.suppress(sqlite3.Error):
        # a large record is summarised now, so no listing ever parses it (history.summaries)
        large = len(message) > LARGE_COMMIT // 4  # characters: up to 4 bytes each
        wr.catalog.remember_event(record.id, str(commit),
                                  records.record_summary_row(str(commit), head.id, record)
                                  if large else None)
    if wr.batch is not None:
        wr.batch.clean = True  # the hand edits are recorded; later events of the batch skip the scan
    return Sealed(str(commit), moved.kept)


def _verb(record: EventRecord) -> str:
    """How the reflog names the move: a replayed or reverting event says so."""
    if record.replay_of:
        return "replay"
    if record.reverts:
        return "revert"
    return record.kind

