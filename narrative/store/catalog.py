"""The catalog: a derived index of the committed world, so no operation re-reads ten thousand nodes.

It answers what the engine needs without scanning: which nodes are transient
(``scene``/``event`` lifecycles), which relations point at a node, how many nodes
a layer holds, which node carries a name, which commit holds an event id. It
describes one ``world/`` tree (recorded in ``meta``) and follows HEAD by applying
the changes narr makes, or by diffing trees when something else moved HEAD.
It is a cache: deleting it loses nothing, it is rebuilt from the history.

It also holds the event graph and the text index the query commands read
(``why``, ``history``, ``search``, ``graph``, ``brief``): one row per commit
(``chain``), the field values each event wrote (``writes``), its causal edges
(``deps``) and full-text tables (FTS5, ``trigram`` tokenizer, so Chinese, which has
no spaces, is searchable too). Those rows are keyed by commit id and a commit's
first-parent chain never changes, so they stay true whatever HEAD does; a query
walks the chain of the commit it asks about (:meth:`Catalog.use_chain`), and
:meth:`Catalog.follow_chain` indexes only the commits it has not seen, newest
back to the first one it knows.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pygit2

from narrative.ids import Layout, normalize_name, parse_node_path
from narrative.store.objects import Commit, git_commit
from narrative.store.trees import EMPTY_TREE, diff_blobs, walk_blobs

SCHEMA_VERSION = "5"

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
CREATE TABLE IF NOT EXISTS summary (
    commit_id TEXT PRIMARY KEY, parent TEXT, kind TEXT NOT NULL, event_id TEXT,
    content TEXT NOT NULL, timestamp TEXT, created_at TEXT, changes INTEGER NOT NULL,
    edits INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chain (
    commit_id TEXT PRIMARY KEY, parent TEXT, seq INTEGER NOT NULL, event_id TEXT,
    kind TEXT NOT NULL, content TEXT NOT NULL, narrative TEXT, timestamp TEXT,
    created_at TEXT, close_scene INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS writes (
    commit_id TEXT NOT NULL, pos INTEGER NOT NULL, source TEXT NOT NULL,
    target TEXT NOT NULL, field TEXT NOT NULL, old TEXT, new TEXT
);
CREATE INDEX IF NOT EXISTS writes_target ON writes(target, field);
CREATE INDEX IF NOT EXISTS writes_commit ON writes(commit_id);
CREATE TABLE IF NOT EXISTS deps (
    commit_id TEXT NOT NULL, cause TEXT NOT NULL, kind TEXT NOT NULL,
    target TEXT NOT NULL, field TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS deps_commit ON deps(commit_id);
CREATE TABLE IF NOT EXISTS node_text_src (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, aliases TEXT NOT NULL, summary TEXT NOT NULL,
    body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS node_text_stale (id TEXT PRIMARY KEY);
CREATE VIRTUAL TABLE IF NOT EXISTS node_text USING fts5(
    id UNINDEXED, name, aliases, summary, body, tokenize='trigram');
CREATE VIRTUAL TABLE IF NOT EXISTS event_text USING fts5(
    commit_id UNINDEXED, content, narrative, tokenize='trigram');
"""

_CLEAR = ("DELETE FROM meta; DELETE FROM nodes; DELETE FROM names; DELETE FROM edges;"
          "DELETE FROM events; DELETE FROM summary; DELETE FROM chain; DELETE FROM writes; DELETE FROM deps;"
          "DELETE FROM node_text; DELETE FROM event_text; DELETE FROM node_text_src;"
          "DELETE FROM node_text_stale;")


class Catalog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._cur_tip: str | None = None  # whose chain the temporary table ``cur`` holds

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
                    db.executescript(_CLEAR)
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
        self._cur_tip = None
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
        db.execute("DELETE FROM node_text")
        db.execute("DELETE FROM node_text_src")
        db.execute("DELETE FROM node_text_stale")
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
        db.execute("DELETE FROM node_text_src WHERE id=?", (node_id,))
        db.execute("INSERT OR IGNORE INTO node_text_stale VALUES (?)", (node_id,))

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
        # The full-text index itself is brought up to date by the next search
        # (_refresh_text): writing FTS segments at every event cost more than the event.
        db.execute("INSERT OR REPLACE INTO node_text_src VALUES (?,?,?,?,?)",
                   (node_id, name, " ".join(aliases), str(node.get("summary", "")),
                    searchable_text(node)))
        db.execute("INSERT OR IGNORE INTO node_text_stale VALUES (?)", (node_id,))

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

    def _where_in(self, select: str, ids: Iterable[str]) -> list[Any]:
        """The rows of ``select`` (ending in ``IN``) for ``ids``, 500 at a time: SQLite
        limits the parameters of one statement."""
        ids = list(ids)
        out: list[Any] = []
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            out.extend(self.db.execute(f"{select} ({','.join('?' * len(chunk))})", chunk).fetchall())
        return out

    def incoming(self, ids: Iterable[str]) -> list[tuple[str, str, str]]:
        """``(source, type, target)`` of every relation pointing at one of ``ids``."""
        return self._where_in("SELECT src, type, dst FROM edges WHERE dst IN", ids)

    def outgoing(self, ids: Iterable[str]) -> list[tuple[str, str, str]]:
        """``(source, type, target)`` of every relation leaving one of ``ids``."""
        return self._where_in("SELECT src, type, dst FROM edges WHERE src IN", ids)

    def rows_of(self, ids: Iterable[str]) -> list[tuple[str, str, str, str, str]]:
        """``(id, layer, kind, name, lifecycle)`` of each of ``ids`` the world holds."""
        return self._where_in("SELECT id, layer, kind, name, lifecycle FROM nodes WHERE id IN", ids)

    def ids_of_kind(self, kinds: Iterable[str]) -> list[str]:
        """The ids of the nodes whose ``kind`` is one of ``kinds``, sorted."""
        wanted = sorted(set(kinds))
        marks = ",".join("?" * len(wanted))
        return [r[0] for r in self.db.execute(
            f"SELECT id FROM nodes WHERE kind IN ({marks}) ORDER BY id", wanted)]

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
        return self._where_in("SELECT norm, id FROM names WHERE norm IN", sorted(set(norms)))

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

    def name_rows(self, prefix: str = "", limit: int = -1) -> list[tuple[str, str, str, list[str]]]:
        """``(id, layer, name, aliases)``, as written, of the nodes whose id or normalised name
        or alias starts with ``prefix`` (normalised), by id: two indexed range queries."""
        if prefix:
            hi = prefix[:-1] + chr(min(ord(prefix[-1]) + 1, 0x10FFFF))
            rows = self.db.execute(
                "SELECT id, layer, name, aliases FROM nodes WHERE id IN ("
                "SELECT id FROM nodes WHERE id >= ?1 AND id < ?2 "
                "UNION SELECT id FROM names WHERE norm >= ?1 AND norm < ?2) ORDER BY id LIMIT ?3",
                (prefix, hi, limit))
        else:
            rows = self.db.execute(
                "SELECT id, layer, name, aliases FROM nodes ORDER BY id LIMIT ?", (limit,))
        out = []
        for node_id, layer, name, aliases in rows:
            try:
                listed = json.loads(aliases)
            except ValueError:
                listed = []
            out.append((node_id, layer, name,
                        [a for a in listed if isinstance(a, str)] if isinstance(listed, list) else []))
        return out

    def listing(self, layer: str | None = None) -> list[tuple[str, str, str, str, str]]:
        """``(id, layer, kind, name, lifecycle)`` of every node (of ``layer``)."""
        q = "SELECT id, layer, kind, name, lifecycle FROM nodes"
        if layer is None:
            return self.db.execute(q).fetchall()
        return self.db.execute(q + " WHERE layer=?", (layer,)).fetchall()

    # --- event ids --------------------------------------------------------------------

    def remember_event(self, event_id: str, commit_id: str,
                       summary: tuple[Any, ...] | None = None) -> None:
        """Where an event is, and (``summary``, a row of :meth:`remember_summaries`) what
        a listing shows of it, so the log never parses a record narr has just written."""
        db = self.db
        if summary is None:
            db.execute("INSERT OR REPLACE INTO events VALUES (?,?)", (event_id, commit_id))
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT OR REPLACE INTO events VALUES (?,?)", (event_id, commit_id))
            db.execute("INSERT OR REPLACE INTO summary VALUES (?,?,?,?,?,?,?,?,?)", summary)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def remember_events(self, rows: Iterable[tuple[str, str]]) -> None:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT OR REPLACE INTO events VALUES (?,?)", rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # --- one line per commit -----------------------------------------------------------

    def summaries(self, commits: Iterable[str]) -> dict[str, tuple[Any, ...]]:
        """Commit id -> ``(parent, kind, event_id, content, timestamp, created_at, changes,
        edits)`` for each of ``commits`` summarised already
        (:data:`narrative.store.records.SUMMARY_COLUMNS`)."""
        rows = self._where_in("SELECT * FROM summary WHERE commit_id IN", commits)
        return {row[0]: tuple(row[1:]) for row in rows}

    def remember_summaries(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Store ``(commit, parent, kind, event_id, content, timestamp, created_at, changes,
        edits)`` rows; a commit's summary never changes, so they stay true whatever HEAD does."""
        db = self.db
        if db.in_transaction:
            db.executemany("INSERT OR REPLACE INTO summary VALUES (?,?,?,?,?,?,?,?,?)", rows)
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT OR REPLACE INTO summary VALUES (?,?,?,?,?,?,?,?,?)", rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def find_events(self, prefix: str, *, suffix: bool = False) -> list[tuple[str, str]]:
        """Events whose id starts with ``prefix`` (or, with ``suffix``, ends with it)."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = "%" + escaped if suffix else escaped + "%"
        return self.db.execute(
            "SELECT event_id, commit_id FROM events WHERE event_id LIKE ? ESCAPE '\\' LIMIT 20",
            (pattern,),
        ).fetchall()

    # --- the event graph ----------------------------------------------------------------

    def follow_chain(self, tip: Commit | None) -> int:
        """Index the commits of ``tip``'s first-parent chain not indexed yet; how many were new.

        Walks back from ``tip`` to the first commit already known (a reset or a
        switch usually finds one at once), then indexes the new ones oldest first,
        so each finds its parent's chain complete when its causes are worked out.
        """
        if tip is None:
            return 0
        db = self.db
        fresh: list[pygit2.Commit] = []
        commit: pygit2.Commit | None = git_commit(tip)
        while commit is not None:
            if db.execute("SELECT 1 FROM chain WHERE commit_id=?", (str(commit.id),)).fetchone():
                break
            fresh.append(commit)
            commit = commit.parents[0] if commit.parents else None
        if not fresh:
            return 0
        db.execute("BEGIN IMMEDIATE")
        try:
            for commit in reversed(fresh):
                self._index_commit(commit)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._cur_tip = None
            raise
        return len(fresh)

    def _index_commit(self, commit: pygit2.Commit) -> None:
        db = self.db
        cid = str(commit.id)
        parent = str(commit.parents[0].id) if commit.parents else None
        seq = 0
        if parent is not None:
            row = db.execute("SELECT seq FROM chain WHERE commit_id=?", (parent,)).fetchone()
            seq = int(row[0]) + 1 if row else 0
        if parent is not None:
            self.use_chain(parent)
        else:
            self._cur_table()
            db.execute("DELETE FROM cur")
        self._index_record(commit, cid, parent, seq)
        db.execute("INSERT INTO cur VALUES (?,?)", (cid, seq))  # the chain grows by one
        self._cur_tip = cid

    def _index_record(self, commit: pygit2.Commit, cid: str, parent: str | None, seq: int) -> None:
        from narrative.store import records

        db = self.db
        rec = records.decode_raw(commit.message)
        if rec is None:
            db.execute("INSERT OR REPLACE INTO chain VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (cid, parent, seq, None, "commit", commit.message.strip().split("\n")[0],
                        None, None, None, 0))
            return
        db.execute("INSERT OR REPLACE INTO chain VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (cid, parent, seq, rec["id"], rec["kind"], rec["content"] or "",
                    rec["narrative_text"], rec["timestamp"], rec["created_at"],
                    1 if rec["close_scene"] else 0))
        db.execute("INSERT OR REPLACE INTO events VALUES (?,?)", (rec["id"], cid))
        db.execute("INSERT INTO event_text VALUES (?,?,?)",
                   (cid, rec["content"] or "", rec["narrative_text"] or ""))
        rows = []
        pos = 0
        for source, changes in (("edit", rec["edits"]), ("diffusion", rec["diffusions"])):
            for ch in changes if isinstance(changes, list) else []:
                if not isinstance(ch, Mapping):
                    continue
                rows.append((cid, pos, source, str(ch.get("target", "")), str(ch.get("field", "")),
                             _dump(ch["old_value"]) if "old_value" in ch else None,
                             _dump(ch["new_value"]) if "new_value" in ch else None))
                pos += 1
        db.executemany("INSERT INTO writes VALUES (?,?,?,?,?,?,?)", rows)
        if parent is None:
            return
        deps: set[tuple[str, str, str, str, str]] = set()
        own_edits = {(r[3], r[4]): r[6] for r in rows if r[2] == "edit"}
        for _, _, source, target, fld, old, _ in rows:
            if source != "diffusion" or old is None or fld == "":
                continue
            if (target, fld) in own_edits and own_edits[(target, fld)] == old:
                continue  # it read the hand edit this event records
            writer = self._last_writer(target, fld)
            if writer is not None and writer[1] == old:
                deps.add((cid, writer[0], "read", target, fld))
        for cause in rec["causes"] if isinstance(rec["causes"], list) else []:
            row = db.execute("SELECT chain.commit_id FROM chain JOIN cur USING (commit_id) "
                             "WHERE chain.event_id=?", (str(cause),)).fetchone()
            if row is not None:
                deps.add((cid, row[0], "declared", "", ""))
        db.executemany("INSERT INTO deps VALUES (?,?,?,?,?)", sorted(deps))

    def _last_writer(self, target: str, fld: str) -> tuple[str, str | None, str] | None:
        """``(commit, value written there as JSON, source)`` of the newest change on the
        current chain to ``target``'s ``fld`` or a field containing it, or None."""
        prefixes = _prefixes(fld)
        marks = ",".join("?" * len(prefixes))
        row = self.db.execute(
            "SELECT w.commit_id, w.field, w.new, w.source FROM writes w JOIN cur USING (commit_id)"
            f" WHERE w.target=? AND w.field IN ({marks}) ORDER BY cur.seq DESC, w.pos DESC LIMIT 1",
            (target, *prefixes)).fetchone()
        if row is None:
            return None
        return row[0], _sub_value(row[2], row[1], fld), row[3]

    def use_chain(self, tip: str) -> None:
        """Fill the temporary table ``cur`` with ``tip``'s first-parent chain (indexed already)."""
        if self._cur_tip == tip:
            return
        db = self.db
        self._cur_table()
        db.execute("DELETE FROM cur")
        db.execute(
            "INSERT INTO cur WITH RECURSIVE c(commit_id, parent, seq) AS ("
            " SELECT commit_id, parent, seq FROM chain WHERE commit_id=?"
            " UNION ALL SELECT chain.commit_id, chain.parent, chain.seq FROM chain"
            " JOIN c ON chain.commit_id = c.parent)"
            " SELECT commit_id, seq FROM c", (tip,))
        self._cur_tip = tip

    def _cur_table(self) -> None:
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS cur (commit_id TEXT PRIMARY KEY, seq INTEGER)")

    def chain_rows(self, tip: str, limit: int | None = None) -> list[tuple[Any, ...]]:
        """``(commit, seq, event_id, kind, content, narrative, timestamp, created_at,
        close_scene)`` of ``tip``'s chain, newest first."""
        self.use_chain(tip)
        q = ("SELECT chain.commit_id, chain.seq, event_id, kind, content, narrative, timestamp,"
             " created_at, close_scene FROM chain JOIN cur USING (commit_id) ORDER BY cur.seq DESC")
        if limit is not None:
            return self.db.execute(q + " LIMIT ?", (limit,)).fetchall()
        return self.db.execute(q).fetchall()

    def commit_row(self, commit: str) -> tuple[Any, ...] | None:
        """The :meth:`chain_rows` row of one indexed commit, or None."""
        row: tuple[Any, ...] | None = self.db.execute(
            "SELECT commit_id, seq, event_id, kind, content, narrative, timestamp, created_at,"
            " close_scene FROM chain WHERE commit_id=?", (commit,)).fetchone()
        return row

    def commit_rows(self, commits: Iterable[str]) -> list[tuple[Any, ...]]:
        """The :meth:`chain_rows` rows of indexed commits."""
        return self._where_in(
            "SELECT commit_id, seq, event_id, kind, content, narrative, timestamp, created_at,"
            " close_scene FROM chain WHERE commit_id IN", sorted(set(commits)))

    def chain_first(self, tip: str) -> tuple[Any, ...] | None:
        """The :meth:`chain_rows` row of the oldest commit of ``tip``'s chain."""
        self.use_chain(tip)
        row: tuple[Any, ...] | None = self.db.execute(
            "SELECT chain.commit_id, chain.seq, event_id, kind, content, narrative, timestamp,"
            " created_at, close_scene FROM chain JOIN cur USING (commit_id)"
            " ORDER BY cur.seq LIMIT 1").fetchone()
        return row

    def ancestry_edges(self, tip: str, commit: str) -> list[tuple[Any, ...]]:
        """``(effect, its seq, cause, its seq, kind, target, field)`` of every causal edge
        between ``commit``'s ancestors on ``tip``'s chain (``commit`` included)."""
        self.use_chain(tip)
        return self.db.execute(
            "WITH RECURSIVE anc(c) AS (SELECT ? UNION"
            " SELECT d.cause FROM deps d JOIN anc ON d.commit_id = anc.c"
            " JOIN cur ON cur.commit_id = d.cause)"
            " SELECT d.commit_id, ce.seq, d.cause, cc.seq, d.kind, d.target, d.field FROM deps d"
            " JOIN anc a1 ON a1.c = d.commit_id JOIN anc a2 ON a2.c = d.cause"
            " JOIN cur ce ON ce.commit_id = d.commit_id JOIN cur cc ON cc.commit_id = d.cause",
            (commit,)).fetchall()

    def chain_writes(self, tip: str, target: str | None = None) -> list[tuple[Any, ...]]:
        """``(commit, seq, pos, source, target, field, old, new)`` on ``tip``'s chain (of
        ``target``, or every change), oldest first; values are JSON text, None when absent."""
        self.use_chain(tip)
        q = ("SELECT w.commit_id, cur.seq, w.pos, w.source, w.target, w.field, w.old, w.new"
             " FROM writes w JOIN cur USING (commit_id)")
        if target is None:
            return self.db.execute(q + " ORDER BY cur.seq, w.pos").fetchall()
        return self.db.execute(q + " WHERE w.target=? ORDER BY cur.seq, w.pos", (target,)).fetchall()

    def commit_writes(self, commit: str, seq: int) -> list[tuple[Any, ...]]:
        """The rows of :meth:`chain_writes` for one commit (``seq`` its place on the chain)."""
        return self.db.execute(
            "SELECT commit_id, ?, pos, source, target, field, old, new FROM writes"
            " WHERE commit_id=? ORDER BY pos", (seq, commit)).fetchall()

    def last_writes(self, tip: str, targets: Iterable[str],
                    kinds: Iterable[str] = ("event",)) -> dict[str, tuple[int, str]]:
        """For each of ``targets`` that a commit of ``tip``'s chain (of one of ``kinds``:
        ``event``, ``merge``, ``genesis``) changed: ``(seq, commit)`` of the newest such commit."""
        self.use_chain(tip)
        wanted = sorted(set(kinds))
        kmarks = ",".join("?" * len(wanted))
        ids = sorted(set(targets))
        out: dict[str, tuple[int, str]] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for target, seq, commit in self.db.execute(
                    "SELECT w.target, max(cur.seq), cur.commit_id FROM writes w"
                    " JOIN cur USING (commit_id) JOIN chain ON chain.commit_id = w.commit_id"
                    f" WHERE w.target IN ({marks}) AND chain.kind IN ({kmarks}) GROUP BY w.target",
                    (*chunk, *wanted)):
                out[target] = (int(seq), commit)
        return out

    def events_after(self, tip: str, seq: int) -> int:
        """How many events (and merges) ``tip``'s chain holds after the commit at ``seq``."""
        self.use_chain(tip)
        return int(self.db.execute(
            "SELECT count(*) FROM cur JOIN chain USING (commit_id)"
            " WHERE cur.seq > ? AND chain.kind IN ('event', 'merge')", (seq,)).fetchone()[0])

    def chain_pointing_at(self, tip: str, node_id: str) -> list[tuple[Any, ...]]:
        """Like :meth:`chain_writes`, for changes to other nodes that may concern ``node_id``:
        a relation to it, or a whole node whose text names its id (callers check which)."""
        self.use_chain(tip)
        return self.db.execute(
            "SELECT w.commit_id, cur.seq, w.pos, w.source, w.target, w.field, w.old, w.new"
            " FROM writes w JOIN cur USING (commit_id) WHERE w.target != ? AND ("
            " (w.field LIKE '/relations/%' AND instr(w.field, ?) > 0)"
            " OR (w.field = '' AND (instr(coalesce(w.new, ''), ?) > 0"
            "  OR instr(coalesce(w.old, ''), ?) > 0))) ORDER BY cur.seq, w.pos",
            (node_id, "/" + node_id, json.dumps(node_id), json.dumps(node_id))).fetchall()

    def chain_deps(self, tip: str) -> list[tuple[str, str, str, str, str]]:
        """``(commit, cause commit, kind, target, field)`` of every causal edge on the chain."""
        self.use_chain(tip)
        return self.db.execute(
            "SELECT d.commit_id, d.cause, d.kind, d.target, d.field FROM deps d"
            " JOIN cur USING (commit_id) ORDER BY d.commit_id, d.cause, d.target, d.field"
        ).fetchall()

    # --- full text --------------------------------------------------------------------

    def _refresh_text(self) -> None:
        """Bring the full-text index up to the nodes changed since the last search."""
        db = self.db
        stale = int(db.execute("SELECT COUNT(*) FROM node_text_stale").fetchone()[0])
        if not stale:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            if stale * 4 >= int(db.execute("SELECT COUNT(*) FROM node_text_src").fetchone()[0]):
                db.execute("DELETE FROM node_text")  # most of it: rebuilding is cheaper
                db.execute("INSERT INTO node_text SELECT id, name, aliases, summary, body"
                           " FROM node_text_src")
            else:
                db.execute("DELETE FROM node_text WHERE id IN (SELECT id FROM node_text_stale)")
                db.execute("INSERT INTO node_text SELECT s.id, s.name, s.aliases, s.summary, s.body"
                           " FROM node_text_src s JOIN node_text_stale USING (id)")
            db.execute("DELETE FROM node_text_stale")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def search_nodes(self, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """``(id, score)`` of nodes whose text holds every term, best first (lower is better)."""
        self._refresh_text()
        if all(len(t) >= 3 for t in terms):
            return self.db.execute(
                "SELECT id, bm25(node_text, 0, 10.0, 8.0, 3.0, 1.0) AS score FROM node_text"
                " WHERE node_text MATCH ? ORDER BY score, id LIMIT ?",
                (_match(terms), limit)).fetchall()
        where = " AND ".join(["(name || ' ' || aliases || ' ' || summary || ' ' || body) LIKE ?"
                              " ESCAPE '\\'"] * len(terms))
        return self.db.execute(
            f"SELECT id, 0.0 FROM node_text WHERE {where} ORDER BY id LIMIT ?",
            (*(_like(t) for t in terms), limit)).fetchall()

    def search_events(self, tip: str, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """``(commit, score)`` of events on ``tip``'s chain whose text holds every term."""
        self.use_chain(tip)
        if all(len(t) >= 3 for t in terms):
            return self.db.execute(
                "SELECT event_text.commit_id, bm25(event_text, 0, 5.0, 1.0) AS score FROM event_text"
                " JOIN cur ON cur.commit_id = event_text.commit_id WHERE event_text MATCH ?"
                " ORDER BY score, cur.seq DESC LIMIT ?", (_match(terms), limit)).fetchall()
        where = " AND ".join(["(content || ' ' || narrative) LIKE ? ESCAPE '\\'"] * len(terms))
        return self.db.execute(
            "SELECT event_text.commit_id, 0.0 FROM event_text JOIN cur"
            f" ON cur.commit_id = event_text.commit_id WHERE {where} ORDER BY cur.seq DESC LIMIT ?",
            (*(_like(t) for t in terms), limit)).fetchall()


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _prefixes(fld: str) -> list[str]:
    """``fld`` and every pointer containing it: ``/a/b`` -> ``["", "/a", "/a/b"]``."""
    parts = fld.split("/")
    return ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]


def _sub_value(new: str | None, written: str, fld: str) -> str | None:
    """The JSON text of ``fld`` inside a value written at ``written`` (a prefix of it)."""
    if new is None or written == fld:
        return new
    from narrative import fields

    value = fields.get(json.loads(new), fld[len(written):])
    return None if value is fields.ABSENT else _dump(value)


def searchable_text(node: Mapping[str, Any]) -> str:
    """The searchable text of a node's state and relations: keys, values and targets."""
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
    return " ".join(parts)


def _match(terms: list[str]) -> str:
    """An FTS5 query holding every term as a literal string (quotes doubled)."""
    return " AND ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _load(repo: pygit2.Repository, oid: Any) -> dict[str, Any] | None:
    try:
        value = json.loads(repo[oid].read_raw())
    except (ValueError, KeyError):
        return None
    return value if isinstance(value, dict) else None
