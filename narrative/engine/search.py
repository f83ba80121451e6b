"""``narr search QUERY``: nodes and events whose words hold every term of the query, best first.

The text index lives in the derived catalog: SQLite FTS5 with the ``trigram``
tokenizer, which indexes every three characters, so Chinese (no spaces between
words) is found as readily as English, and a term matches inside words. Results
are ranked with BM25 (a name counts more than a summary, a summary more than
state). A term shorter than three characters has no trigram: then the query runs
as a substring scan (``LIKE``), unranked, and events come newest first. Nodes
come before events either way (the things first, then what happened to them):
BM25 scores of two tables are not on one scale.

Nodes are searched as committed at HEAD, corrected for the hand-edited files
(checked directly, they are few); events along the current story line, and those a
merge brought into it from another line (marked with that ``line``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from narrative.answers import Answer
from narrative.engine.eventgraph import Story, tip_of
from narrative.engine.storyline import merged_lines
from narrative.errors import InvalidInputError
from narrative.ids import normalize_name
from narrative.shapes import Obj
from narrative.store import WorldRepo, scan_for_reader


class SearchResult(Answer):
    """Nodes and events whose words match the query, best first; ``mode`` is ``ranked`` (every
    word three characters or more: FTS5's BM25) or ``substring``."""

    NAME: ClassVar[str] = "search"

    query: str
    mode: str
    hits: list[Obj]


def _node_text(node: dict[str, Any]) -> str:
    from narrative.store import searchable_text

    return normalize_name(" ".join([str(node.get("name", "")), *map(str, node.get("aliases", [])),
                                    str(node.get("summary", "")), searchable_text(node)]))


MAX_LIMIT = 1_000_000_000


def search(wr: WorldRepo, query: str, limit: int = 20) -> SearchResult:
    """Nodes and events whose words match ``query`` (every word, any order), best first."""
    terms = query.split()
    if not terms:
        raise InvalidInputError("the search query is empty")
    if limit < 1:
        raise InvalidInputError("--limit must be at least 1")
    limit = min(limit, MAX_LIMIT)  # "at most N": beyond every hit, all of them (SQLite: 64 bits)
    head = tip_of(wr)
    if head is None:
        return SearchResult(query=query, mode="ranked", hits=[])
    cache = wr.catalog_at(head.tree)
    ranked = all(len(t) >= 3 for t in terms)
    edits = scan_for_reader(wr, head.tree).edits
    scored: list[tuple[float, int, dict[str, Any]]] = []
    found = cache.text.search_nodes(terms, limit + len(edits))
    listing = {row.id: row for row in cache.rows_of(match.id for match in found)}
    for match in found:
        if match.id in edits:
            continue
        row = listing[match.id]
        scored.append((match.score, 0, {"kind": "node", "id": match.id, "name": row.name,
                                        "layer": row.layer, "node_kind": row.kind,
                                        "edited": False, "score": round(-match.score, 4)}))
    wanted = [normalize_name(t) for t in terms]
    for node_id, e in sorted(edits.items()):
        if e.new is not None and all(t in _node_text(dict(e.new)) for t in wanted):
            scored.append((-1e9, 0, {"kind": "node", "id": node_id, "name": e.new.get("name", ""),
                                     "layer": e.new.get("layer", ""), "node_kind": e.new.get("kind", ""),
                                     "edited": True, "score": None}))
    story = Story(wr, head.id)
    for match in cache.text.search_events(head.id, terms, limit):
        ev = story.event(match.id)
        scored.append((match.score, 1, {"kind": "event", **ev.to_json(),
                                        "score": round(-match.score, 4)}))
    merged = {t.info.commit: t for t in merged_lines(wr, head.id) if t.info.kind == "event"}
    if merged:  # an alternate ending merged in is part of the story: its events are found too
        for match in cache.text.search_commits(list(merged), terms, limit):
            told = merged[match.id]
            scored.append((match.score, 1, {"kind": "event", **told.info.to_json(),
                                            "line": told.line, "score": round(-match.score, 4)}))
    if ranked:
        scored.sort(key=lambda t: (t[1], t[0]))
    else:
        for _, _, hit in scored:
            hit["score"] = None
        scored.sort(key=lambda t: t[1])
    return SearchResult(query=query, mode="ranked" if ranked else "substring",
                        hits=[h for _, _, h in scored[:limit]])
