"""The world as an event finds it: a commit's tree plus the user's hand edits.

This is the store's implementation of :class:`narrative.delta.world.World`.
Nodes are read lazily, one file at a time, so looking at three nodes costs three
reads whatever the size of the world. Questions about the whole world (which
nodes are transient, who points at a node, who carries a name) go to the derived
catalog, corrected here, and only here, for the nodes the user edited by hand:
the catalog describes the committed tree, so an edited node's rows are replaced
by what its edited file says.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from narrative.ids import EVENT_ID_RE, LAYERS, Layer, Layout, id_problem, node_path
from narrative.nodefile import NodeDict, dump, edges_of, load_trusted, names_of
from narrative.store.objects import Tree, git_tree
from narrative.store.trees import blob_at
from narrative.store.worktree import HandEdit, HandEdits
from narrative.store.worldrepo import WorldRepo

if TYPE_CHECKING:
    from narrative.store.catalog import Catalog, NodeRow, Reference


class WorldView:
    def __init__(self, wr: WorldRepo, tree: Tree | None,
                 edits: HandEdits | None = None) -> None:
        self.wr = wr
        self.tree = tree
        self._git = git_tree(tree)
        self.hand = edits or HandEdits()
        self._committed: dict[str, tuple[str, NodeDict] | None] = {}
        self._layers: dict[str, str | None] = {}  # the catalog's answers, asked in bulk
        self._synced = False

    @property
    def layout(self) -> Layout:
        return self.wr.config.layout

    @property
    def name(self) -> str:
        return self.wr.config.name

    @property
    def language(self) -> str:
        return self.wr.config.language

    @property
    def root(self) -> Path:
        return self.wr.root

    @property
    def edits(self) -> Mapping[str, HandEdit]:
        return self.hand.edits

    # --- committed world --------------------------------------------------------------

    def committed_path(self, node_id: str) -> str | None:
        """The path of ``node_id``'s file in the tree (None: not there), without reading it."""
        return self._tree_path(node_id)

    def _tree_path(self, node_id: str) -> str | None:
        if node_id in self._committed:
            found = self._committed[node_id]
            return found[0] if found else None
        if id_problem(node_id) is not None:
            return None
        layers: Iterable[Layer] = LAYERS
        if self._synced:
            known = (self._layers[node_id] if node_id in self._layers
                     else self.wr.catalog.layer_of(node_id))
            layers = [layer for layer in LAYERS if layer == known]
        for layer in layers:
            path = node_path(node_id, layer, self.layout)
            if blob_at(self._git, path) is not None:
                return path
        return None

    def committed_file(self, node_id: str) -> tuple[str, NodeDict] | None:
        """``(path, node)`` of ``node_id`` in the tree, or None."""
        if node_id in self._committed:
            return self._committed[node_id]
        path = self._tree_path(node_id)
        found = None
        if path is not None:
            blob = blob_at(self._git, path)
            assert blob is not None
            found = (path, load_trusted(blob.data, path))
        self._committed[node_id] = found
        return found

    def committed(self, node_id: str) -> NodeDict | None:
        found = self.committed_file(node_id)
        return found[1] if found else None

    # --- edited world -----------------------------------------------------------------

    def get(self, node_id: str) -> NodeDict | None:
        """The node as the user sees it now (hand edits included), or None."""
        edit = self.hand.edits.get(node_id)
        if edit is not None:
            return edit.new
        return self.committed(node_id)

    def get_many(self, node_ids: Iterable[str]) -> dict[str, NodeDict]:
        """:meth:`get` of each of ``node_ids`` that exists, the layers of the committed ones
        asked of the catalog in one query (one per node was a tenth of a second for the
        3,500 thread nodes of a 100k world)."""
        wanted = list(dict.fromkeys(node_ids))
        pending = [i for i in wanted if i not in self.hand.edits and i not in self._committed
                   and i not in self._layers]
        if pending:
            found = {row.id: row.layer for row in self.catalog().rows_of(pending)}
            self._layers.update((i, found.get(i)) for i in pending)
        return {i: node for i in wanted if (node := self.get(i)) is not None}

    def exists(self, node_id: str) -> bool:
        """Whether the node is in the world as the user sees it (no file is parsed)."""
        edit = self.hand.edits.get(node_id)
        if edit is not None:
            return edit.new is not None
        return self.committed_path(node_id) is not None

    def path(self, node: NodeDict) -> str:
        return node_path(node["id"], node["layer"], self.layout)

    def lay(self, node_id: str, node: NodeDict | None) -> None:
        """A hand edit in memory only (sealing the event writes the file)."""
        edit = self.hand.edits.get(node_id)
        committed = self.committed_file(node_id)
        # What the working tree holds is tracked by hand.raw; raw_oid only says
        # whether the file's bytes differ from the canonical form.
        self.hand.edits[node_id] = HandEdit(
            node_id, committed[1] if committed else None, node,
            committed[0] if committed else None,
            self.path(node) if node is not None else None,
            edit.raw_oid if edit is not None else None,
            dump(node) if node is not None else None,
        )

    # --- whole-world questions, through the derived catalog ---------------------------

    def catalog(self) -> Catalog:
        """The derived catalog, brought up to this view's tree."""
        cache = self.wr.catalog
        if not self._synced:
            cache.sync(self.wr.repo, self.wr.world_tree_id(self.tree), self.layout)
            self._synced = True
        return cache

    def transient(self, lifecycles: Collection[str] = ("scene", "event")) -> dict[str, str]:
        """Id -> lifecycle of committed nodes whose lifecycle is one of ``lifecycles``."""
        return dict(self.catalog().transient(lifecycles))

    def _edited_nodes(self) -> Iterable[tuple[str, NodeDict]]:
        return ((i, e.new) for i, e in self.hand.edits.items() if e.new is not None)

    def incoming(self, ids: Collection[str]) -> list[tuple[str, str, str]]:
        """``(source, type, target)`` of relations in the edited world that point into ``ids``."""
        edited = self.hand.edits
        out: set[tuple[str, str, str]] = {
            row for row in self.catalog().incoming(ids) if row.src not in edited}
        for node_id, node in self._edited_nodes():
            out.update((node_id, rtype, dst) for rtype, dst in edges_of(node) if dst in ids)
        return sorted(out)

    def outgoing(self, ids: Collection[str]) -> list[tuple[str, str, str]]:
        """``(source, type, target)`` of relations in the edited world that leave ``ids``."""
        edited = self.hand.edits
        out: set[tuple[str, str, str]] = {
            row for row in self.catalog().outgoing(ids) if row.src not in edited}
        for node_id in ids:
            node = self.hand.edits[node_id].new if node_id in edited else None
            if node is not None:
                out.update((node_id, rtype, dst) for rtype, dst in edges_of(node))
        return sorted(out)

    def references_to(self, ids: Collection[str], labels: Mapping[str, str]) -> list[Reference]:
        """The reference fields (``labels``: pointer -> label) in the edited world that hold
        one of ``ids``: who stands at a place, what someone holds."""
        from narrative.fields import reference_edges
        from narrative.store.catalog import Reference

        edited = self.hand.edits
        out = {row for row in self.catalog().references_to(ids, labels) if row.src not in edited}
        for node_id, node in self._edited_nodes():
            out.update(Reference(node_id, fld, dst) for fld, _, dst in reference_edges(node, labels)
                       if dst in ids)
        return sorted(out)

    def references_from(self, ids: Collection[str], labels: Mapping[str, str]) -> list[Reference]:
        """The reference fields of ``ids`` in the edited world (targets that name no node
        included: the caller keeps the edges it can draw)."""
        from narrative.fields import reference_edges
        from narrative.store.catalog import Reference

        edited = self.hand.edits
        out = {row for row in self.catalog().references_from(ids, labels) if row.src not in edited}
        for node_id in ids:
            node = edited[node_id].new if node_id in edited else None
            if node is not None:
                out.update(Reference(node_id, fld, dst)
                           for fld, _, dst in reference_edges(node, labels))
        return sorted(out)

    def rows_of(self, ids: Collection[str]) -> dict[str, NodeRow]:
        """Id -> the listing row of each of ``ids`` in the edited world."""
        from narrative.store.catalog import NodeRow

        edited = self.hand.edits
        out = {row.id: row for row in self.catalog().rows_of(ids) if row.id not in edited}
        for node_id in ids:
            node = edited[node_id].new if node_id in edited else None
            if node is not None:
                out[node_id] = NodeRow(node_id, str(node.get("layer", "")),
                                       str(node.get("kind", "")), str(node.get("name", "")),
                                       str(node.get("lifecycle", "permanent")))
        return out

    def ids_of_kind(self, kinds: Collection[str]) -> list[str]:
        """The ids of the nodes of the edited world whose ``kind`` is one of ``kinds``."""
        edited = self.hand.edits
        out = {i for i in self.catalog().ids_of_kind(kinds) if i not in edited}
        out.update(i for i, node in self._edited_nodes() if node.get("kind") in kinds)
        return sorted(out)

    def ids_in_view(self) -> list[str]:
        """The ids of the nodes of the edited world marked ``always_in_view``."""
        edited = self.hand.edits
        out = {i for i in self.catalog().ids_in_view() if i not in edited}
        out.update(i for i, node in self._edited_nodes() if node.get("always_in_view") is True)
        return sorted(out)

    def names_in_layer(self, layer: str) -> list[tuple[str, str]]:
        edited = self.hand.edits
        out: list[tuple[str, str]] = [row for row in self.catalog().names_in_layer(layer)
                                      if row.id not in edited]
        for node_id, node in self._edited_nodes():
            if node.get("layer") == layer:
                out.extend((norm, node_id) for norm in sorted(names_of(node)))
        return out

    def ids_by_name(self, norms: Collection[str]) -> dict[str, set[str]]:
        hits: dict[str, set[str]] = {}
        if not norms:
            return hits
        edited = self.hand.edits
        for norm, node_id in self.catalog().ids_by_names(norms):
            if node_id not in edited:
                hits.setdefault(norm, set()).add(node_id)
        wanted = set(norms)
        for node_id, node in self._edited_nodes():
            for norm in names_of(node) & wanted:
                hits.setdefault(norm, set()).add(node_id)
        return hits

    def name_reach(self, first: str) -> int:
        longest = self.catalog().longest_name_from(first, exclude=self.hand.edits)
        for _, node in self._edited_nodes():
            for norm in names_of(node):
                if norm.startswith(first):
                    longest = max(longest, len(norm))
        return longest

    def known_events(self, event_ids: Collection[str]) -> set[str]:
        """The event index knows what this clone recorded; events that came another way
        (a pull) are found by indexing the whole history, at most once per question."""
        from narrative.store import history

        wanted = {e for e in event_ids if EVENT_ID_RE.match(e)}
        if not wanted:
            return set()
        known = history.known_events(self.wr, wanted)
        if known != wanted:
            history.index_all_events(self.wr)
            known = history.known_events(self.wr, wanted)
        return known

    def recent_events(self, limit: int, *, changes: bool = True) -> list[dict[str, Any]]:
        from narrative.store import history, records

        out: list[dict[str, Any]] = []
        if not changes:  # from the catalog's summaries: no record is read
            start_id = self.wr.head_id()
            if start_id is None:
                return out
            start = start_id
            step = max(limit, 1) * 2
            while len(out) < limit:
                rows = history.summaries(self.wr, start, step)
                out.extend({"id": s["id"], "content": s["content"], "timestamp": s["timestamp"]}
                           for s in rows if s["kind"] == "event")
                if len(rows) < step or rows[-1]["parent"] is None:
                    break
                start = rows[-1]["parent"]
            return out[:limit]
        head = self.wr.head_commit()
        for commit in history.first_parent(head):
            if len(out) >= limit:
                break
            rec = records.decode(commit.message)
            if rec is not None and rec.kind == "event":
                out.append({"id": rec.id, "content": rec.content, "timestamp": rec.timestamp,
                            "diffusions": [d.model_dump(mode="json") for d in rec.diffusions]})
        return out
