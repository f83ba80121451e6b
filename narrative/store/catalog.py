"""The catalog: a derived index of the committed world, so no operation re-reads ten thousand nodes.

It answers what the engine needs without scanning: which nodes are transient
(``scene``/``event`` lifecycles), which relations point at a node, how many nodes
a layer holds, which node carries a name, which commit holds an event id. It
describes one ``world/`` tree (recorded in ``meta``) and follows HEAD by applying
the changes narr makes, or by diffing trees when something else moved HEAD.
It is a cache: deleting it loses nothing, it is rebuilt from the history.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pygit2

from narrative.ids import Layout, normalize_name, parse_node_path
from narrative.store.trees import EMPTY_TREE, diff_blobs, walk_blobs

SCHEMA_VERSION = "2"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY, layer TEXT NOT NULL, lifecycle TEXT NOT NULL,
    name TEXT NOT NULL, kind TEXT NOT NULL, aliases TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS nodes_lifecycle ON nodes(lifecycle) WHERE lifecycle != 'permanent';
CREATE INDEX IF NOT EXISTS nodes_layer ON nodes(layer);
CREATE TABLE IF NOT EXISTS names (norm TEXT NOT NULL, id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS names_norm ON names(norm);
CREATE INDEX IF NOT EXISTS names_id ON names(id);
CREATE TABLE IF NOT EXISTS edges (src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE INDEX IF NOT EXISTS edges_src ON edges(src);
CREATE TABLE IF NOT EXISTS events (event_id TEXT PRIMARY KEY, commit_id TEXT NOT NULL);
"""


class Catalog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._connect()
        return self._db

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():  # the same cache under its former name: rebuilt, so drop it
            for suffix in ("", "-wal", "-shm"):
                (self.path.parent / f"index.sqlite{suffix}").unlink(missing_ok=True)
        for attempt in range(2):
            try:
                db = sqlite3.connect(self.path, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
                row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                if row is None or row[0] != SCHEMA_VERSION:
                    db.executescript(
                        "DELETE FROM meta; DELETE FROM nodes; DELETE FROM names;"
                        "DELETE FROM edges; DELETE FROM events;"
                    )
                    db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                return db
            except sqlite3.DatabaseError:
                # A damaged cache is thrown away: everything in it is derived.
                if attempt:
                    raise
                for suffix in ("", "-wal", "-shm"):
                    Path(str(self.path) + suffix).unlink(missing_ok=True)
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # --- following the world tree -----------------------------------------------------

    def tree(self) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key='tree'").fetchone()
        return row[0] if row else None

    def sync(self, repo: pygit2.Repository, world_tree: str, layout: Layout) -> None:
        """Make the index describe ``world_tree`` (the ``world/`` subtree of a commit)."""
        current = self.tree()
        if current == world_tree:
            return
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            if current is not None and (current == EMPTY_TREE or repo.odb.exists(current)):
                self._follow_diff(repo, current, world_tree, layout)
            else:
                self._rebuild(repo, world_tree, layout)
            self._set_tree(world_tree)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _rebuild(self, repo: pygit2.Repository, world_tree: str, layout: Layout) -> None:
        db = self.db
        db.execute("DELETE FROM nodes")
        db.execute("DELETE FROM names")
        db.execute("DELETE FROM edges")
        if world_tree == EMPTY_TREE:
            return
        tree = repo[world_tree]
        assert isinstance(tree, pygit2.Tree)
        for path, oid in walk_blobs(repo, tree, "world"):
            placed = parse_node_path(path, layout)
            if placed is None:
                continue
            node = _load(repo, oid)
            if node is not None:
                self._insert(node)

    def _follow_diff(self, repo: pygit2.Repository, old: str, new: str, layout: Layout) -> None:
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
        for path, _, new_blob in changes:
            placed = parse_node_path(path, layout)
            if placed is not None and new_blob is not None:
                node = _load(repo, new_blob)
                if node is not None:
                    self._insert(node)

    def apply(self, nodes: Mapping[str, Mapping[str, Any] | None], old_tree: str,
              new_tree: str, repo: pygit2.Repository, layout: Layout) -> None:
        """Record narr's own change of the world (node id -> new node, None = removed)."""
        if self.tree() != old_tree:
            self.sync(repo, new_tree, layout)
            return
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            for node_id, node in nodes.items():
                self._delete(node_id)
                if node is not None:
                    self._insert(node)
            self._set_tree(new_tree)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _set_tree(self, tree: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('tree', ?)", (tree,))

    def _delete(self, node_id: str) -> None:
        db = self.db
        db.execute("DELETE FROM nodes WHERE id=?", (node_id,))
        db.execute("DELETE FROM names WHERE id=?", (node_id,))
        db.execute("DELETE FROM edges WHERE src=?", (node_id,))

    def _insert(self, node: Mapping[str, Any]) -> None:
        db = self.db
        node_id = str(node.get("id", ""))
        aliases = [a for a in node.get("aliases", []) if isinstance(a, str)]
        name = str(node.get("name", ""))
        db.execute(
            "INSERT OR REPLACE INTO nodes VALUES (?,?,?,?,?,?)",
            (node_id, str(node.get("layer", "")), str(node.get("lifecycle", "permanent")),
             name, str(node.get("kind", "")), json.dumps(aliases, ensure_ascii=False)),
        )
        norms = {normalize_name(n) for n in [name, *aliases] if n.strip()}
        db.executemany("INSERT INTO names VALUES (?,?)", [(n, node_id) for n in norms])
        relations = node.get("relations", {})
        if isinstance(relations, Mapping):
            rows = [
                (node_id, rtype, dst)
                for rtype, targets in relations.items() if isinstance(targets, Mapping)
                for dst in targets
            ]
            db.executemany("INSERT INTO edges VALUES (?,?,?)", rows)

    # --- queries ----------------------------------------------------------------------

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

    def incoming(self, ids: Iterable[str]) -> list[tuple[str, str, str]]:
        """``(source, type, target)`` of every relation pointing at one of ``ids``."""
        ids = list(ids)
        out: list[tuple[str, str, str]] = []
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            out.extend(self.db.execute(
                f"SELECT src, type, dst FROM edges WHERE dst IN ({marks})", chunk
            ).fetchall())
        return out

    def layer_of(self, node_id: str) -> str | None:
        row = self.db.execute("SELECT layer FROM nodes WHERE id=?", (node_id,)).fetchone()
        return row[0] if row else None

    def count(self, layer: str | None = None) -> int:
        if layer is None:
            return int(self.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0])
        return int(self.db.execute(
            "SELECT COUNT(*) FROM nodes WHERE layer=?", (layer,)).fetchone()[0])

    def ids(self, layer: str | None = None) -> list[tuple[str, str]]:
        """``(id, layer)`` of every node, sorted by id."""
        if layer is None:
            rows = self.db.execute("SELECT id, layer FROM nodes ORDER BY id")
        else:
            rows = self.db.execute("SELECT id, layer FROM nodes WHERE layer=? ORDER BY id", (layer,))
        return rows.fetchall()

    def names(self) -> list[tuple[str, str]]:
        """``(normalised name or alias, id)`` pairs."""
        return self.db.execute("SELECT norm, id FROM names").fetchall()

    def by_name(self, norm: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM names WHERE norm=?", (norm,))]

    def names_in_layer(self, layer: str) -> list[tuple[str, str]]:
        """``(normalised name or alias, id)`` of every node of ``layer``."""
        return self.db.execute(
            "SELECT names.norm, names.id FROM names JOIN nodes ON nodes.id = names.id "
            "WHERE nodes.layer = ?", (layer,)).fetchall()

    def ids_by_names(self, norms: Iterable[str]) -> list[tuple[str, str]]:
        """``(normalised name, id)`` for each of ``norms`` some node carries."""
        items = sorted(set(norms))
        out: list[tuple[str, str]] = []
        for k in range(0, len(items), 500):
            chunk = items[k : k + 500]
            marks = ",".join("?" * len(chunk))
            out.extend(self.db.execute(f"SELECT norm, id FROM names WHERE norm IN ({marks})", chunk))
        return out

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

    def listing(self, layer: str | None = None) -> list[tuple[str, str, str, str, str]]:
        """``(id, layer, kind, name, lifecycle)`` of every node (of ``layer``)."""
        q = "SELECT id, layer, kind, name, lifecycle FROM nodes"
        if layer is None:
            return self.db.execute(q).fetchall()
        return self.db.execute(q + " WHERE layer=?", (layer,)).fetchall()

    # --- event ids --------------------------------------------------------------------

    def remember_event(self, event_id: str, commit_id: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO events VALUES (?,?)", (event_id, commit_id))

    def remember_events(self, rows: Iterable[tuple[str, str]]) -> None:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT OR REPLACE INTO events VALUES (?,?)", rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def find_events(self, prefix: str) -> list[tuple[str, str]]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return self.db.execute(
            "SELECT event_id, commit_id FROM events WHERE event_id LIKE ? ESCAPE '\\' LIMIT 20",
            (escaped + "%",),
        ).fetchall()


def _load(repo: pygit2.Repository, oid: Any) -> dict[str, Any] | None:
    try:
        value = json.loads(repo[oid].read_raw())
    except (ValueError, KeyError):
        return None
    return value if isinstance(value, dict) else None
