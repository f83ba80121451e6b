"""Full-text search over the world's nodes and the story's events.

FTS5 tables with the ``trigram`` tokenizer, so Chinese, which has no spaces, is
searchable too; terms shorter than three characters fall back to ``LIKE``. A node's
text is staged when the node changes and indexed by the next search
(:meth:`TextIndex._refresh_text`): writing FTS segments at every event cost more
than the event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from narrative.store.catalog import Catalog


class Hit(NamedTuple):
    """A search result: a node id or a commit id, and its score (lower is better)."""

    id: str
    score: float


class TextIndex:
    """Full-text search, on the catalog's connection (``catalog.text``)."""

    def __init__(self, catalog: Catalog) -> None:
        self._c = catalog

    def _refresh_text(self) -> None:
        """Bring the full-text index up to the nodes changed since the last search."""
        db = self._c.db
        stale = int(db.execute("SELECT COUNT(*) FROM node_text_stale").fetchone()[0])
        if not stale:
            return
        with self._c.atomic():
            if stale * 4 >= int(db.execute("SELECT COUNT(*) FROM node_text_src").fetchone()[0]):
                db.execute("DELETE FROM node_text")  # most of it: rebuilding is cheaper
                db.execute("INSERT INTO node_text SELECT id, name, aliases, summary, body"
                           " FROM node_text_src")
            else:
                db.execute("DELETE FROM node_text WHERE id IN (SELECT id FROM node_text_stale)")
                db.execute("INSERT INTO node_text SELECT s.id, s.name, s.aliases, s.summary, s.body"
                           " FROM node_text_src s JOIN node_text_stale USING (id)")
            db.execute("DELETE FROM node_text_stale")

    def search_nodes(self, terms: list[str], limit: int) -> list[Hit]:
        """Nodes whose text holds every term, best first."""
        self._refresh_text()
        if all(len(t) >= 3 for t in terms):
            rows = self._c.db.execute(
                "SELECT id, bm25(node_text, 0, 10.0, 8.0, 3.0, 1.0) AS score FROM node_text"
                " WHERE node_text MATCH ? ORDER BY score, id LIMIT ?", (_match(terms), limit))
        else:
            where = " AND ".join(["(name || ' ' || aliases || ' ' || summary || ' ' || body) LIKE ?"
                                  " ESCAPE '\\'"] * len(terms))
            rows = self._c.db.execute(
                f"SELECT id, 0.0 FROM node_text WHERE {where} ORDER BY id LIMIT ?",
                (*(_like(t) for t in terms), limit))
        return list(map(Hit._make, rows))

    def search_commits(self, commits: list[str], terms: list[str], limit: int) -> list[Hit]:
        """Events among ``commits`` (any chain's: those a merge brought) whose text holds every
        term, best first."""
        if all(len(t) >= 3 for t in terms):
            return self._ranked_among(commits, terms, limit)
        where = " AND ".join(["(content || ' ' || narrative) LIKE ? ESCAPE '\\'"] * len(terms))
        rows: list[Hit] = []
        for i in range(0, len(commits), 400):
            chunk = commits[i:i + 400]
            marks = ",".join("?" * len(chunk))
            rows.extend(map(Hit._make, self._c.db.execute(
                f"SELECT commit_id, 0.0 FROM event_text WHERE commit_id IN ({marks}) AND {where}"
                " LIMIT ?", (*chunk, *(_like(t) for t in terms), limit))))
        return rows[:limit]

    def _ranked_among(self, commits: list[str], terms: list[str], limit: int) -> list[Hit]:
        rows: list[Hit] = []
        for i in range(0, len(commits), 400):
            chunk = commits[i:i + 400]
            marks = ",".join("?" * len(chunk))
            rows.extend(map(Hit._make, self._c.db.execute(
                "SELECT commit_id, bm25(event_text, 0, 5.0, 1.0) AS score FROM event_text"
                f" WHERE event_text MATCH ? AND commit_id IN ({marks}) ORDER BY score LIMIT ?",
                (_match(terms), *chunk, limit))))
        return sorted(rows, key=lambda h: h.score)[:limit]

    def search_events(self, tip: str, terms: list[str], limit: int) -> list[Hit]:
        """Events on ``tip``'s chain whose text holds every term, best first (by commit)."""
        self._c.graph.use_chain(tip)
        if all(len(t) >= 3 for t in terms):
            rows = self._c.db.execute(
                "SELECT event_text.commit_id, bm25(event_text, 0, 5.0, 1.0) AS score FROM event_text"
                " JOIN cur ON cur.commit_id = event_text.commit_id WHERE event_text MATCH ?"
                " ORDER BY score, cur.seq DESC LIMIT ?", (_match(terms), limit))
        else:
            where = " AND ".join(["(content || ' ' || narrative) LIKE ? ESCAPE '\\'"] * len(terms))
            rows = self._c.db.execute(
                "SELECT event_text.commit_id, 0.0 FROM event_text JOIN cur"
                f" ON cur.commit_id = event_text.commit_id WHERE {where} ORDER BY cur.seq DESC LIMIT ?",
                (*(_like(t) for t in terms), limit))
        return list(map(Hit._make, rows))


def _match(terms: list[str]) -> str:
    """An FTS5 query holding every term as a literal string (quotes doubled)."""
    return " AND ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
