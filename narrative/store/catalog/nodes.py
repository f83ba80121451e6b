"""Nodes and names: the committed world's nodes, their relations and the names they go by.

The rows describe one ``world/`` tree (recorded in ``meta``) and follow HEAD by
applying the changes narr makes (:meth:`NodeIndex.apply`), or by diffing trees when
something else moved HEAD (:meth:`NodeIndex.sync`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from narrative import safejson
from narrative.fields import reference_candidates
from narrative.ids import Layout, normalize_name, parse_node_path
from narrative.store.catalog.connection import Connection

if TYPE_CHECKING:  # git loads with what follows the tree (sync), never for a query alone
    import sqlite3

    from narrative.store.libgit import pygit2


_TABLES = ("nodes", "names", "edges", "refs", "node_text", "node_text_src", "node_text_stale",
           "in_view")
"""What the nodes of one world tree fill (a rebuild empties them first)."""


class Edge(NamedTuple):
    """One relation of the world graph: ``src`` relates to ``dst`` by ``type``."""

    src: str
    type: str
    dst: str


class NodeRow(NamedTuple):
    """What a listing shows of a node without reading its file."""

    id: str
    layer: str
    kind: str
    name: str
    lifecycle: str


class NameRow(NamedTuple):
    """A name or alias some node carries, normalised (:func:`narrative.ids.normalize_name`)."""

    norm: str
    id: str


class NodeId(NamedTuple):
    id: str
    layer: str


class Reference(NamedTuple):
    """A reference field: ``src``'s ``field`` (a JSON pointer) holds the id ``dst``."""

    src: str
    field: str
    dst: str


class NodeIndex(Connection):
    # --- following the world tree -----------------------------------------------------

    def tree(self) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key='tree'").fetchone()
        return row[0] if row else None

    def sync(self, repo: pygit2.Repository, world_tree: str, layout: Layout) -> None:
        """Make the index describe ``world_tree`` (the ``world/`` subtree of a commit)."""
        from narrative.store.trees import EMPTY_TREE

        current = self.tree()
        if current == world_tree:
            return
        with self.atomic():
            if current is not None and (current == EMPTY_TREE or repo.odb.exists(current)):
                self._follow_diff(repo, current, world_tree, layout)
            else:
                self._rebuild(repo, world_tree, layout)
            self._set_tree(world_tree)

    def _rebuild(self, repo: pygit2.Repository, world_tree: str, layout: Layout) -> None:
        from narrative.store.libgit import pygit2
        from narrative.store.trees import EMPTY_TREE, walk_blobs

        db = self.db
        for table in _TABLES:
            db.execute(f"DELETE FROM {table}")
        if world_tree == EMPTY_TREE:
            return
        tree = repo[world_tree]
        assert isinstance(tree, pygit2.Tree)
        nodes = (_load(repo, oid) for path, oid in walk_blobs(repo, tree, "world")
                 if parse_node_path(path, layout) is not None)
        # The tables' indexes are made again once the rows are in: sorting a million rows
        # once costs half of keeping nine indexes in order row by row. All of it is one
        # transaction, so a reader sees the old catalog or the new one.
        marks = ",".join("?" * len(_TABLES))
        indexes = db.execute("SELECT name, sql FROM sqlite_master WHERE type='index' AND "
                             f"sql IS NOT NULL AND tbl_name IN ({marks})", _TABLES).fetchall()
        for name, _ in indexes:
            db.execute(f'DROP INDEX "{name}"')
        self._insert_all(node for node in nodes if node is not None)
        for _, sql in indexes:
            db.execute(sql)

    def _follow_diff(self, repo: pygit2.Repository, old: str, new: str, layout: Layout) -> None:
        from narrative.store.libgit import pygit2
        from narrative.store.trees import EMPTY_TREE, diff_blobs

        old_tree = repo[old] if old != EMPTY_TREE else None
        new_tree = repo[new] if new != EMPTY_TREE else None
        if old_tree is None and new_tree is None:
            return
        if not isinstance(old_tree, pygit2.Tree) or not isinstance(new_tree, pygit2.Tree):
            self._rebuild(repo, new, layout)
            return
        changes = list(diff_blobs(repo, old_tree, new_tree, "world"))
        for path, _, _ in changes:  # deletions first: a node may move between paths
            placed = parse_node_path(path, layout)
            if placed is not None:
                self._delete(placed[1])
        loaded = (_load(repo, new_blob) for path, _, new_blob in changes
                  if new_blob is not None and parse_node_path(path, layout) is not None)
        self._insert_all(node for node in loaded if node is not None)

    def apply(self, nodes: Mapping[str, Mapping[str, Any] | None], old_tree: str,
              new_tree: str, repo: pygit2.Repository, layout: Layout) -> None:
        """Record narr's own change of the world (node id -> new node, None = removed)."""
        if self.tree() != old_tree:
            self.sync(repo, new_tree, layout)
            return
        with self.atomic():
            for node_id in nodes:
                self._delete(node_id)
            self._insert_all(node for node in nodes.values() if node is not None)
            self._set_tree(new_tree)

    def _set_tree(self, tree: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('tree', ?)", (tree,))

    def _delete(self, node_id: str) -> None:
        db = self.db
        db.execute("DELETE FROM nodes WHERE id=?", (node_id,))
        db.execute("DELETE FROM names WHERE id=?", (node_id,))
        db.execute("DELETE FROM in_view WHERE id=?", (node_id,))
        db.execute("DELETE FROM edges WHERE src=?", (node_id,))
        db.execute("DELETE FROM refs WHERE src=?", (node_id,))
        db.execute("DELETE FROM node_text_src WHERE id=?", (node_id,))
        db.execute("INSERT OR IGNORE INTO node_text_stale VALUES (?)", (node_id,))

    def _insert_all(self, nodes: Iterable[Mapping[str, Any]], batch: int = 2000) -> None:
        """Insert the rows of ``nodes``, a batch of nodes to one statement per table: a world
        rebuilt from nothing (a clone, a lost catalog) is 100k nodes, and a statement per row
        cost more than the rows (19 s at 100k nodes, most of it in the calls)."""
        rows = _Rows()
        for n, node in enumerate(nodes, 1):
            rows.add(node)
            if n % batch == 0:
                rows.write(self.db)
                rows = _Rows()
        rows.write(self.db)

    # --- nodes ------------------------------------------------------------------------

    def transient(self, lifecycles: Iterable[str] = ("scene", "event")) -> dict[str, str]:
        """Node id -> lifecycle for every node whose lifecycle is one of ``lifecycles``."""
        wanted = [x for x in lifecycles if x != "permanent"]
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = self.db.execute(
            f"SELECT id, lifecycle FROM nodes WHERE lifecycle != 'permanent' AND lifecycle IN ({marks})",
            wanted)
        return dict(rows.fetchall())

    def incoming(self, ids: Iterable[str]) -> list[Edge]:
        """Every relation pointing at one of ``ids``."""
        return list(map(Edge._make, self._where_in("SELECT src, type, dst FROM edges WHERE dst IN",
                                                   ids)))

    def outgoing(self, ids: Iterable[str]) -> list[Edge]:
        """Every relation leaving one of ``ids``."""
        return list(map(Edge._make, self._where_in("SELECT src, type, dst FROM edges WHERE src IN",
                                                   ids)))

    def rows_of(self, ids: Iterable[str]) -> list[NodeRow]:
        """The row of each of ``ids`` the world holds."""
        return list(map(NodeRow._make, self._where_in(
            "SELECT id, layer, kind, name, lifecycle FROM nodes WHERE id IN", ids)))

    def listing(self, layer: str | None = None) -> list[NodeRow]:
        """The row of every node (of ``layer``)."""
        q = "SELECT id, layer, kind, name, lifecycle FROM nodes"
        rows = self.db.execute(q) if layer is None else self.db.execute(q + " WHERE layer=?",
                                                                          (layer,))
        return list(map(NodeRow._make, rows))

    def ids_of_kind(self, kinds: Iterable[str]) -> list[str]:
        """The ids of the nodes whose ``kind`` is one of ``kinds``, sorted."""
        wanted = sorted(set(kinds))
        marks = ",".join("?" * len(wanted))
        return [node_id for (node_id,) in self.db.execute(
            f"SELECT id FROM nodes WHERE kind IN ({marks}) ORDER BY id", wanted)]

    def ids_in_view(self) -> list[str]:
        """The ids of the nodes marked ``always_in_view``, sorted."""
        return [node_id for (node_id,) in self.db.execute("SELECT id FROM in_view ORDER BY id")]

    def layer_of(self, node_id: str) -> str | None:
        row = self.db.execute("SELECT layer FROM nodes WHERE id=?", (node_id,)).fetchone()
        return row[0] if row else None

    def count(self, layer: str | None = None) -> int:
        if layer is None:
            return int(self.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0])
        return int(self.db.execute(
            "SELECT COUNT(*) FROM nodes WHERE layer=?", (layer,)).fetchone()[0])

    def ids(self, layer: str | None = None) -> list[NodeId]:
        """Every node's id and layer, sorted by id."""
        if layer is None:
            rows = self.db.execute("SELECT id, layer FROM nodes ORDER BY id")
        else:
            rows = self.db.execute("SELECT id, layer FROM nodes WHERE layer=? ORDER BY id", (layer,))
        return list(map(NodeId._make, rows))

    # --- reference fields -------------------------------------------------------------
    # Every string of a node's state and traits that could be an id is kept (refs), so a
    # field a world declares later needs no rebuild; which fields are edges is asked here.

    def references_to(self, ids: Iterable[str], flds: Iterable[str]) -> list[Reference]:
        """Every reference field (one of ``flds``) holding one of ``ids``: who stands at a
        place, who holds an item by its ``state.holder``."""
        wanted = sorted(set(flds))
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        return list(map(Reference._make, self._where_in(
            f"SELECT src, field, dst FROM refs WHERE dst IN (?*) AND field IN ({marks})",
            sorted(set(ids)), *wanted)))

    def references_from(self, ids: Iterable[str], flds: Iterable[str]) -> list[Reference]:
        """The reference fields (one of ``flds``) of ``ids``."""
        wanted = sorted(set(flds))
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        return list(map(Reference._make, self._where_in(
            f"SELECT src, field, dst FROM refs WHERE src IN (?*) AND field IN ({marks})",
            sorted(set(ids)), *wanted)))

    def all_references(self, flds: Iterable[str]) -> list[Reference]:
        """Every reference field (one of ``flds``) whose target is a node of the world (a
        field naming no node is no edge)."""
        wanted = sorted(set(flds))
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        return list(map(Reference._make, self.db.execute(
            f"SELECT r.src, r.field, r.dst FROM refs r JOIN nodes n ON n.id = r.dst"
            f" WHERE r.field IN ({marks})", wanted)))

    # --- names ------------------------------------------------------------------------

    def names(self) -> list[NameRow]:
        """Every name and alias of every node."""
        return list(map(NameRow._make, self.db.execute("SELECT norm, id FROM names")))

    def aliases(self) -> dict[str, list[str]]:
        """Every node's aliases as written (not normalised), for nodes that have some."""
        return {node_id: json.loads(aliases) for node_id, aliases in self.db.execute(
            "SELECT id, aliases FROM nodes WHERE aliases != '[]'")}

    def names_in_layer(self, layer: str) -> list[NameRow]:
        """Every name and alias of the nodes of ``layer``."""
        return list(map(NameRow._make, self.db.execute(
            "SELECT names.norm, names.id FROM names JOIN nodes ON nodes.id = names.id "
            "WHERE nodes.layer = ?", (layer,))))

    def ids_by_names(self, norms: Iterable[str]) -> list[NameRow]:
        """The nodes carrying each of ``norms`` (normalised names)."""
        return list(map(NameRow._make, self._where_in("SELECT norm, id FROM names WHERE norm IN",
                                                      sorted(set(norms)))))

    def longest_name_from(self, first: str, exclude: Iterable[str] = ()) -> int:
        """The length of the longest normalised name starting with ``first`` (one character),
        leaving out the names of the nodes in ``exclude``.

        Names are stored normalised, so they sort in ``[first, first+1)``: one indexed
        range query, however many names the world holds.
        """
        if not first or ord(first) >= 0x10FFFF:
            return 0
        left_out = sorted(set(exclude))[:500]  # past that the answer is a bound, never too short
        marks = ",".join("?" * len(left_out))
        row = self.db.execute(
            "SELECT max(length(norm)) FROM names WHERE norm >= ? AND norm < ?"
            + (f" AND id NOT IN ({marks})" if left_out else ""),
            (first, chr(ord(first) + 1), *left_out)).fetchone()
        return int(row[0] or 0)


class _Rows:
    """The catalog rows of some nodes, per table, written with one statement each."""

    def __init__(self) -> None:
        self.nodes: list[tuple[str, ...]] = []
        self.names: list[tuple[str, str]] = []
        self.in_view: list[tuple[str]] = []
        self.edges: list[tuple[str, str, str]] = []
        self.refs: list[tuple[str, str, str]] = []
        self.text: list[tuple[str, ...]] = []

    def add(self, node: Mapping[str, Any]) -> None:
        node_id = str(node.get("id", ""))
        aliases = [a for a in node.get("aliases", []) if isinstance(a, str)]
        name = str(node.get("name", ""))
        self.nodes.append((node_id, str(node.get("layer", "")),
                           str(node.get("lifecycle", "permanent")), name,
                           str(node.get("kind", "")), json.dumps(aliases, ensure_ascii=False)))
        self.names += [(n, node_id) for n in {normalize_name(n) for n in [name, *aliases]
                                               if n.strip()}]
        if node.get("always_in_view") is True:
            self.in_view.append((node_id,))
        relations = node.get("relations", {})
        if isinstance(relations, Mapping):
            self.edges += [(node_id, rtype, dst) for rtype, targets in relations.items()
                           if isinstance(targets, Mapping) for dst in targets]
        self.refs += [(node_id, fld, dst) for fld, dst in reference_candidates(node)]
        self.text.append((node_id, name, " ".join(aliases), str(node.get("summary", "")),
                          searchable_text(node)))

    def write(self, db: sqlite3.Connection) -> None:
        db.executemany("INSERT OR REPLACE INTO nodes VALUES (?,?,?,?,?,?)", self.nodes)
        db.executemany("INSERT INTO names VALUES (?,?)", self.names)
        db.executemany("INSERT OR IGNORE INTO in_view VALUES (?)", self.in_view)
        db.executemany("INSERT INTO edges VALUES (?,?,?)", self.edges)
        db.executemany("INSERT INTO refs VALUES (?,?,?)", self.refs)
        # The full-text index itself is brought up to date by the next search
        # (search.TextIndex._refresh_text): writing FTS segments at every event cost more than
        # the event.
        db.executemany("INSERT OR REPLACE INTO node_text_src VALUES (?,?,?,?,?)", self.text)
        db.executemany("INSERT OR IGNORE INTO node_text_stale VALUES (?)",
                       [(row[0],) for row in self.text])


def searchable_text(node: Mapping[str, Any]) -> str:
    """The searchable text of a node's state, relations, tags and sections: keys, values, targets."""
    parts: list[str] = [str(node.get("id", "")), str(node.get("kind", ""))]

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                parts.append(str(k))
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif value is not None:
            parts.append(str(value))

    walk(node.get("state", {}))
    walk(node.get("relations", {}))
    walk(node.get("tags", []))
    walk(node.get("sections", {}))
    return " ".join(parts)


def _load(repo: pygit2.Repository, oid: Any) -> dict[str, Any] | None:
    try:
        value = safejson.loads(repo[oid].read_raw())
    except (ValueError, KeyError):
        return None
    return value if isinstance(value, dict) else None
