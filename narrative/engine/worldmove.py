"""Moving HEAD and bringing the working tree along, for reset, switch and fast-forward.

Only the paths that differ between the two trees, plus the paths the user has
changed, are touched; the cost follows the events crossed, not the world's size.
"""

from __future__ import annotations

import pygit2

from narrative.errors import InvalidWorldError
from narrative.store import journal
from narrative.store.trees import blob_at, diff_blobs
from narrative.store.worktree import HandEdits
from narrative.store.worldrepo import WorldRepo


def changed_paths(repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree) -> set[str]:
    """Every file path that differs between two commit trees."""
    return {path for path, _, _ in diff_blobs(repo, old, new)}


def plan(wr: WorldRepo, head_tree: pygit2.Tree, new_tree: pygit2.Tree, scan: HandEdits,
         overrides: dict[str, bytes | None] | None = None,
         keep_worktree: frozenset[str] = frozenset()) -> list[journal.PathUpdate]:
    """Path updates taking the working tree from (HEAD + the user's changes) to ``new_tree``.

    ``overrides`` give working-tree content that differs from ``new_tree`` (edits a
    reset restores or carries over); the index always ends equal to ``new_tree``.
    Paths in ``keep_worktree`` keep whatever the working tree holds now.
    """
    repo = wr.repo
    overrides = overrides or {}
    odd = [p for p, oid in scan.raw.items() if oid == "not-a-file"]
    if odd:
        raise InvalidWorldError(
            f"{odd[0]} is not a regular file (a directory or a symbolic link): narr will not "
            "replace it", details=odd, hint="move it out of world/ and run the command again")
    stale = set(scan.stale_index)  # the index differs from HEAD there: always rewrite it
    paths = changed_paths(repo, head_tree, new_tree) | set(overrides) | set(scan.raw) | stale
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
