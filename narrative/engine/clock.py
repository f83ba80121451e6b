"""The story time in force: the last story time an event set on a story line.

Apart from :mod:`narrative.engine.eventgraph` because ``narr status`` shows it: the
event graph's module brings the catalog's story rows with it, a cost a status that
finds the time among the last commits' summaries never needs to pay.
"""

from __future__ import annotations

from typing import Any

from narrative.store import WorldRepo, commit_summaries, resolve_rev

STORY_TIME_SCAN = 16  # commits read from their summaries before the catalog is asked


def story_time(wr: WorldRepo, rev: str | None = None) -> dict[str, Any] | None:
    """The story time in force at HEAD (or ``rev``): the last ``--at`` on the story line,
    ``{"value", "since": {"id", "commit", "content"}}``, or None when no event set one.

    An event recorded without a story time keeps the time it found, so the time in force is
    never blank once one was set. The last few commits are read from their one-line
    summaries (a story that keeps time sets it often, and ``narr status`` then never opens
    the catalog); past them, one indexed query over the chain answers.
    """
    start = wr.head_id() if rev is None else resolve_rev(wr, rev).id
    if start is None:
        return None
    rows = commit_summaries(wr, start, STORY_TIME_SCAN)
    for row in rows:
        if row.get("timestamp"):
            return {"value": row["timestamp"], "since": {"id": row["id"], "commit": row["commit"],
                                                         "content": row["content"]}}
    if len(rows) < STORY_TIME_SCAN or rows[-1]["parent"] is None:
        return None  # the whole line was read
    graph = wr.catalog.graph
    graph.follow_chain(resolve_rev(wr, start))
    found = graph.story_time(start)
    if found is None:
        return None
    since = graph.event_info(found.commit)
    return {"value": found.value, "since": {"id": since.id if since else None,
                                            "commit": found.commit,
                                            "content": since.content if since else ""}}
