"""The catalog's database: its schema, its connection, and the one way to change it, :meth:`atomic`.

SQLite in WAL mode, in autocommit mode (``isolation_level=None``), so a read takes no
lock and every change states its own transaction: :meth:`Connection.atomic`, which
begins one (``BEGIN IMMEDIATE``: a writer waits for another at the start, never half
way), commits it when the block ends and rolls it back when the block raises; nested,
it is a savepoint, so a change that is part of a larger one commits with it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SCHEMA_VERSION = "9"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY, layer TEXT NOT NULL, lifecycle TEXT NOT NULL,
    name TEXT NOT NULL, kind TEXT NOT NULL, aliases TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS nodes_lifecycle ON nodes(lifecycle) WHERE lifecycle != 'permanent';
CREATE INDEX IF NOT EXISTS nodes_layer ON nodes(layer);
CREATE INDEX IF NOT EXISTS nodes_kind ON nodes(kind);
CREATE TABLE IF NOT EXISTS in_view (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS names (norm TEXT NOT NULL, id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS names_norm ON names(norm);
CREATE INDEX IF NOT EXISTS names_id ON names(id);
CREATE TABLE IF NOT EXISTS edges (src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE INDEX IF NOT EXISTS edges_src ON edges(src);
CREATE TABLE IF NOT EXISTS refs (src TEXT NOT NULL, field TEXT NOT NULL, dst TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS refs_dst ON refs(dst, field);
CREATE INDEX IF NOT EXISTS refs_src ON refs(src);
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
CREATE TABLE IF NOT EXISTS ended (commit_id TEXT NOT NULL, target TEXT NOT NULL, norm TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS ended_norm ON ended(norm);
CREATE INDEX IF NOT EXISTS ended_target ON ended(target);
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
CREATE TABLE IF NOT EXISTS chapters (
    commit_id TEXT PRIMARY KEY, event_id TEXT NOT NULL, number INTEGER NOT NULL, title TEXT,
    language TEXT NOT NULL, summary TEXT NOT NULL, nodes TEXT NOT NULL,
    sentences INTEGER NOT NULL, events INTEGER NOT NULL, digest TEXT NOT NULL, key TEXT
);
CREATE INDEX IF NOT EXISTS chapters_key ON chapters(key);
CREATE TABLE IF NOT EXISTS told (
    commit_id TEXT PRIMARY KEY, chapter TEXT NOT NULL, number INTEGER NOT NULL,
    sentence INTEGER NOT NULL, scene INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS told_chapter ON told(chapter);
CREATE VIRTUAL TABLE IF NOT EXISTS event_text USING fts5(
    commit_id UNINDEXED, content, narrative, tokenize='trigram');
"""

_CLEAR = ("DELETE FROM meta; DELETE FROM nodes; DELETE FROM names; DELETE FROM edges; DELETE FROM refs;"
          "DELETE FROM events; DELETE FROM summary; DELETE FROM chain; DELETE FROM writes; DELETE FROM deps;"
          "DELETE FROM ended; DELETE FROM chapters; DELETE FROM told;"
          "DELETE FROM node_text; DELETE FROM event_text; DELETE FROM node_text_src;"
          "DELETE FROM node_text_stale; DELETE FROM in_view;")

BATCH = 500  # ids per statement: SQLite limits the parameters of one


class Connection:
    """The open database, made on first use, and its transactions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        # whose chain the temporary table ``cur`` holds (:mod:`.story`)
        self.cur_tip: str | None = None

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
        self.cur_tip = None
        if self._db is not None:
            self._db.close()
            self._db = None

    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """A transaction around the block: all of it is written, or (the block raised) none.

        Inside another one it is a savepoint: undone alone when its block raises, written
        when the outer transaction is.
        """
        db = self.db
        nested = db.in_transaction
        db.execute("SAVEPOINT atomic" if nested else "BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if nested:
                db.execute("ROLLBACK TO atomic")
                db.execute("RELEASE atomic")
            else:
                db.execute("ROLLBACK")
            self.cur_tip = None  # the chain table may have lost rows with the rest
            raise
        db.execute("RELEASE atomic" if nested else "COMMIT")

    def _where_in(self, select: str, ids: Iterable[str], *params: Any) -> list[Any]:
        """The rows of ``select`` for ``ids``, :data:`BATCH` at a time. The ids go where
        ``select`` says ``(?*)``, or after its last word (an ``IN``); ``params`` follow them."""
        ids = list(ids)
        out: list[Any] = []
        for i in range(0, len(ids), BATCH):
            chunk = ids[i : i + BATCH]
            marks = ",".join("?" * len(chunk))
            out.extend(self.db.execute(select.replace("(?*)", f"({marks})") if "(?*)" in select
                                       else f"{select} ({marks})", (*chunk, *params)).fetchall())
        return out
