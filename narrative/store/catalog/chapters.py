"""The chapters of a story line: one row per chapter's own commit, one per event told in one.

A chapter's record lives in its own commit (the story line's history, so it travels with
every clone, push and pull and stays with the events a reset keeps as a chain); these rows
only index it, keyed by commit id like the rest of the event graph, so listing a hundred
chapters and their summaries reads no commit. The rows are written as the chain is indexed
(:meth:`narrative.store.catalog.story.StoryIndex.follow_chain`); a query reads the commits of
the chain it asks about through the temporary table ``cur``.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from narrative.store.catalog import Catalog

_COLUMNS = ("c.commit_id, cur.seq, c.event_id, c.number, c.title, c.language, c.summary, c.nodes,"
            " c.sentences, c.events, c.digest, c.key")


class ChapterRow(NamedTuple):
    """A chapter as the catalog lists it: its commit and place on the chain, its record's
    number, title, language, summary, the nodes its events changed, its size."""

    commit: str
    seq: int
    id: str
    number: int
    title: str | None
    language: str
    summary: str
    nodes: list[str]
    sentences: int
    events: int
    digest: str
    key: str | None

    @classmethod
    def of_row(cls, row: tuple[Any, ...]) -> ChapterRow:
        values = list(row)
        values[7] = json.loads(values[7])
        return cls(*values)


class Told(NamedTuple):
    """Where an event stands in the chapter it was told in."""

    commit: str
    chapter: str  # the chapter's record id
    number: int
    sentence: int
    scene: int


class Span(NamedTuple):
    """A chapter's events on a chain: the first and last (their places and commits), how many."""

    chapter: str
    first_seq: int
    last_seq: int
    events: int
    first: str
    last: str


def index_record(db: sqlite3.Connection, commit: str, rec: dict[str, Any]) -> None:
    """The rows of one commit's record, as its chain is indexed."""
    data = rec.get("chapter")
    if rec.get("kind") == "chapter" and isinstance(data, dict):
        try:
            db.execute("INSERT OR REPLACE INTO chapters VALUES (?,?,?,?,?,?,?,?,?,?,?)", (
                commit, str(rec["id"]), int(data["number"]), data.get("title"),
                str(data.get("language") or "en"), str(data.get("summary") or ""),
                json.dumps([str(n) for n in data.get("nodes") or []]),
                int(data.get("sentences") or 0), int(data.get("events") or 0),
                str(data.get("digest") or ""), data.get("key")))
        except (KeyError, TypeError, ValueError):
            return  # not a chapter narr wrote: a plain commit to this index
    place = rec.get("in_chapter")
    if isinstance(place, dict):
        try:
            db.execute("INSERT OR REPLACE INTO told VALUES (?,?,?,?,?)", (
                commit, str(place["chapter"]), int(place["number"]), int(place["sentence"]),
                int(place["scene"])))
        except (KeyError, TypeError, ValueError):
            return


class ChapterIndex:
    """The chapters' rows, on the catalog's connection (``catalog.chapters``)."""

    def __init__(self, catalog: Catalog) -> None:
        self._c = catalog

    def on_chain(self, tip: str) -> list[ChapterRow]:
        """The chapters whose own commit is on ``tip``'s chain (indexed already), oldest first."""
        self._c.graph.use_chain(tip)
        return list(map(ChapterRow.of_row, self._c.db.execute(
            f"SELECT {_COLUMNS} FROM chapters c JOIN cur USING (commit_id) ORDER BY cur.seq")))

    def rows(self, commits: list[str]) -> dict[str, ChapterRow]:
        """The chapters among ``commits`` (any chain's), by commit; ``seq`` is -1."""
        out = {}
        for row in self._c._where_in(
                f"SELECT {_COLUMNS.replace('cur.seq', '-1')} FROM chapters c WHERE c.commit_id IN",
                commits):
            chapter = ChapterRow.of_row(row)
            out[chapter.commit] = chapter
        return out

    def by_ids(self, ids: list[str]) -> dict[str, ChapterRow]:
        """The chapters whose records have these ids (any chain's), by id; ``seq`` is -1."""
        out = {}
        for row in self._c._where_in(
                f"SELECT {_COLUMNS.replace('cur.seq', '-1')} FROM chapters c WHERE c.event_id IN",
                ids):
            chapter = ChapterRow.of_row(row)
            out[chapter.id] = chapter
        return out

    def spans(self, tip: str) -> dict[str, Span]:
        """For each chapter that has events on ``tip``'s chain: their first, last and count."""
        self._c.graph.use_chain(tip)
        rows = self._c.db.execute(
            "SELECT t.chapter, min(cur.seq), max(cur.seq), count(*) FROM told t"
            " JOIN cur USING (commit_id) GROUP BY t.chapter").fetchall()
        out = {}
        for chapter, first_seq, last_seq, count in rows:
            first, last = (self._c.db.execute(
                "SELECT cur.commit_id FROM cur JOIN told t USING (commit_id)"
                " WHERE t.chapter=? AND cur.seq=?", (chapter, seq)).fetchone()[0]
                for seq in (first_seq, last_seq))
            out[chapter] = Span(chapter, first_seq, last_seq, count, first, last)
        return out

    def told(self, commits: list[str]) -> dict[str, Told]:
        """Where each of ``commits`` stands in its chapter (those told in one)."""
        return {row[0]: Told(*row) for row in self._c._where_in(
            "SELECT commit_id, chapter, number, sentence, scene FROM told WHERE commit_id IN",
            commits)}

    def with_key(self, key: str) -> list[str]:
        """The commits of the chapters recorded with idempotency key ``key`` (any chain's)."""
        return [row[0] for row in self._c.db.execute(
            "SELECT commit_id FROM chapters WHERE key=?", (key,))]
