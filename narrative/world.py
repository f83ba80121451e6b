"""The world graph as an event finds it: a commit's tree plus the user's hand edits.

Nodes are read lazily, one file at a time, so looking at three nodes costs three
reads whatever the size of the world. Questions about the whole world (which
nodes are transient, who points at a node) go to the derived index.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pygit2

from narrative.ids import LAYERS, Layer, id_problem, node_path
from narrative.nodefile import NodeDict, load_trusted
from narrative.store.trees import blob_at
from narrative.store.worktree import HandEdits
from narrative.store.worldrepo import WorldRepo


class WorldView:
    def __init__(self, wr: WorldRepo, tree: pygit2.Tree | None,
                 edits: HandEdits | None = None) -> None:
        self.wr = wr
        self.tree = tree
        self.edits = edits or HandEdits()
        self._committed: dict[str, tuple[str, NodeDict] | None] = {}
        self._synced = False

    @property
    def layout(self) -> Any:
        return self.wr.config.layout

    # --- committed world --------------------------------------------------------------

    def committed_path(self, node_id: str) -> str | None:
        """The path of ``node_id``'s file in the tree (None: not there), without reading it."""
        if node_id in self._committed:
            found = self._committed[node_id]
            return found[0] if found else None
        if id_problem(node_id) is not None:
            return None
        layers: Iterable[Layer] = LAYERS
        if self._synced:
            known = self.wr.index_cache.layer_of(node_id)
            layers = [layer for layer in LAYERS if layer == known]
        for layer in layers:
            path = node_path(node_id, layer, self.layout)
            if blob_at(self.tree, path) is not None:
                return path
        return None

    def committed(self, node_id: str) -> tuple[str, NodeDict] | None:
        """``(path, node)`` of ``node_id`` in the tree, or None."""
        if node_id in self._committed:
            return self._committed[node_id]
        path = self.committed_path(node_id)
        found = None
        if path is not None:
            blob = blob_at(self.tree, path)
            assert blob is not None
            found = (path, load_trusted(blob.data))
        self._committed[node_id] = found
        return found

    # --- edited world -----------------------------------------------------------------

    def get(self, node_id: str) -> NodeDict | None:
        """The node as the user sees it now (hand edits included), or None."""
        edit = self.edits.edits.get(node_id)
        if edit is not None:
            return edit.new
        found = self.committed(node_id)
        return found[1] if found else None

    def exists(self, node_id: str) -> bool:
        """Whether the node is in the world as the user sees it (no file is parsed)."""
        edit = self.edits.edits.get(node_id)
        if edit is not None:
            return edit.new is not None
        return self.committed_path(node_id) is not None

    def path(self, node: NodeDict) -> str:
        return node_path(node["id"], node["layer"], self.layout)

    # --- whole-world questions, through the derived index -----------------------------

    def index(self) -> Any:
        """The derived index, brought up to this view's tree."""
        cache = self.wr.index_cache
        if not self._synced:
            cache.sync(self.wr.repo, self.wr.world_tree_id(self.tree), self.layout)
            self._synced = True
        return cache

    def transient_committed(self, lifecycles: Iterable[str] = ("scene", "event")) -> dict[str, str]:
        """Id -> lifecycle of committed nodes whose lifecycle is one of ``lifecycles``."""
        return dict(self.index().transient(lifecycles))

    def incoming(self, ids: set[str]) -> list[tuple[str, str, str]]:
        """``(source, type, target)`` of relations in the edited world that point into ``ids``."""
        out: set[tuple[str, str, str]] = set()
        for src, rtype, dst in self.index().incoming(ids):
            if src not in self.edits.edits:
                out.add((src, rtype, dst))
        for node_id, edit in self.edits.edits.items():
            if edit.new is None:
                continue
            for rtype, targets in edit.new.get("relations", {}).items():
                for dst in targets:
                    if dst in ids:
                        out.add((node_id, rtype, dst))
        return sorted(out)
