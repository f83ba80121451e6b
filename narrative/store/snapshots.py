"""The world as a commit holds it: its node files, one node by id, and what two commits differ in.

The catalog describes HEAD's tree only; a past world (``--at``, ``narr check``, a merge's
three sides) is read from its blobs here. Two trees are compared by a tree diff that
skips equal subtrees unread (:func:`narrative.store.trees.diff_blobs`), so comparing two
commits costs what they differ in, not the size of the world.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from narrative.errors import InvalidWorldError, Step
from narrative.ids import LAYERS, WORLD_DIR, Layout, node_path, parse_node_path
from narrative.nodefile import NodeDict, load_trusted
from narrative.store.objects import Tree, git_tree
from narrative.store.trees import diff_blobs, subtree, walk_blobs
from narrative.store.worldrepo import WorldRepo


def changed_world_paths(wr: WorldRepo, old: Tree | None, new: Tree | None) -> list[str]:
    """Every file path under ``world/`` that differs between two commit trees, sorted."""
    repo = wr.repo
    a, b = subtree(git_tree(old), WORLD_DIR), subtree(git_tree(new), WORLD_DIR)
    if a is None and b is None:
        return []
    if a is None or b is None:
        tree = b if b is not None else a
        assert tree is not None
        return [p for p, _ in walk_blobs(repo, tree, WORLD_DIR)]
    return [path for path, _, _ in diff_blobs(repo, a, b, WORLD_DIR)]


def changed_nodes(wr: WorldRepo, old: Tree | None, new: Tree | None) -> set[str]:
    """Ids of the nodes whose files differ between two commit trees (added, changed or gone)."""
    layout = wr.config.layout
    out = set()
    for path in changed_world_paths(wr, old, new):
        placed = parse_node_path(path, layout)
        if placed is not None:
            out.add(placed[1])
    return out


def world_files(wr: WorldRepo, tree: Tree | None) -> list[tuple[str, str]]:
    """``(path, blob id)`` of every file under ``world/`` in ``tree``, depth first, none read
    yet (:meth:`~narrative.store.worldrepo.WorldRepo.blob_bytes` reads one)."""
    return [(path, str(oid)) for path, oid in _blobs(wr, tree)]


def _blobs(wr: WorldRepo, tree: Tree | None) -> Iterator[tuple[str, Any]]:
    world = subtree(git_tree(tree), WORLD_DIR)
    if world is not None:
        yield from walk_blobs(wr.repo, world, WORLD_DIR)


def node_file(tree: Tree | None, node_id: str, layout: Layout) -> tuple[str, bytes] | None:
    """``(path, bytes)`` of ``node_id``'s file in ``tree`` (in whichever layer), or None."""
    if tree is None:
        return None
    for layer in LAYERS:
        path = node_path(node_id, layer, layout)
        data = tree.read(path)
        if data is not None:
            return path, data
    return None


def nodes_in(wr: WorldRepo, tree: Tree | None) -> dict[str, NodeDict]:
    """Every node a commit's tree holds, by id: the whole world as it stood at that commit.

    The blobs are trusted as a read of one node trusts them (narr validated each when
    it sealed it); one that is not even a JSON object is named, never skipped.
    """
    out: dict[str, NodeDict] = {}
    layout = wr.config.layout
    repo = wr.repo
    for path, oid in _blobs(wr, tree):
        placed = parse_node_path(path, layout)
        if placed is None:
            continue
        try:
            node = load_trusted(repo[oid].read_raw())
        except ValueError as exc:
            raise InvalidWorldError(f"{path}: not a node ({exc})",
                                    hint="{0} names the commit that wrote it",
                                    steps=[Step("check")]) from exc
        out[str(node.get("id") or placed[1])] = node
    return out
