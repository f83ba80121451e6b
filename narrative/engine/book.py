"""``narr story``: the book so far, the events of the story line oldest first, as Markdown or JSON.

The story line is the first-parent chain, as for ``narr log``; the events come
from the derived catalog, which already holds each one's content, story time and
narrative text, so the book costs one query whatever the length of the story.
The genesis is the world's setting, not a chapter, and commits made with plain
git are not events: both are left out, the latter listed as ``skipped``.

Events are numbered by their place on the whole line (the third event is 3 in
every range), so a part of the book printed with ``--from`` lines up with the
whole. An event that closes the scene is followed by a scene break.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from narrative.engine.eventgraph import Story, tip_of
from narrative.errors import InvalidInputError, NotFoundError
from narrative.store import history
from narrative.store.records import subject_of
from narrative.store.worldrepo import WorldRepo

SCENE_BREAK = "* * *"


@dataclass
class Book:
    world: str
    start: dict[str, Any] | None  # the --from commit (excluded), None from the beginning
    end: dict[str, Any]  # the --to commit (included)
    events: list[dict[str, Any]]
    skipped: list[dict[str, Any]]  # commits on the line that are not events

    def to_json(self) -> dict[str, Any]:
        return {"world": self.world, "from": self.start, "to": self.end, "events": self.events,
                "skipped": self.skipped}

    def to_markdown(self) -> str:
        return render_markdown(self.to_json())


def book(wr: WorldRepo, start: str | None = None, end: str | None = None) -> Book:
    """The events after ``start`` (exclusive; default the genesis) up to ``end`` (default HEAD)."""
    tip = tip_of(wr, end)
    if tip is None:
        raise NotFoundError("the story has no events yet")
    story = Story(wr, tip.id)
    after = -1
    first = None
    if start is not None:
        commit = history.resolve(wr, start).id
        if commit not in story.by_commit:
            raise InvalidInputError(
                f"{start} is not on the story line that ends at {end or 'HEAD'}",
                hint="--from takes an earlier event of the same line (narr log lists them)")
        first = story.by_commit[commit]
        after = first.seq
    events: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    number = 0
    for e in reversed(story.events):  # oldest first
        if e.kind == "event":
            number += 1
        if e.seq <= after or e.kind == "genesis":
            continue
        if e.kind != "event":
            skipped.append({"commit": e.commit, "content": e.content})
            continue
        events.append({"number": number, "id": e.id, "commit": e.commit, "content": e.content,
                       "timestamp": e.timestamp, "narrative_text": e.narrative,
                       "close_scene": e.close_scene})
    return Book(wr.config.name, first.to_json() if first else None,
                story.by_commit[tip.id].to_json(), events, skipped)


def render_markdown(d: dict[str, Any]) -> str:
    """The book dict as Markdown: a title, then one section per event with its prose."""
    lines = [f"# {d['world'] or 'Untitled world'}"]
    if d["from"] is not None:
        lines += ["", f"*After: {subject_of(d['from']['content'])}*"]
    if not d["events"]:
        lines += ["", "*No events in this part of the story.*"]
    for e in d["events"]:
        heading = subject_of(e["content"])
        lines += ["", f"## {e['number']}. {heading}"]
        if e["timestamp"]:
            lines += ["", f"*{e['timestamp'].strip()}*"]
        if heading != e["content"].strip():
            lines += ["", e["content"].strip()]
        if e["narrative_text"]:
            lines += ["", e["narrative_text"].strip()]
        if e["close_scene"]:
            lines += ["", SCENE_BREAK]
    return "\n".join(lines) + "\n"
