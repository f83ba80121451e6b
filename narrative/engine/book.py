"""``narr story``: the book so far, the events of the story line oldest first, as Markdown or JSON.

The story line is the first-parent chain, as for ``narr log``; the events come
from the derived catalog, which already holds each one's content, story time and
narrative text, so the book costs one query whatever the length of the story.
The genesis is the world's setting, not a chapter, and commits made with plain
git are not events: both are left out, the latter listed as ``skipped``.
Each event stands under the story time in force (``story_time``: the last ``--at``
on the line, its own or an earlier event's); the Markdown writes a time where it
changes, so events told without ``--at`` read on under the time they happened in.

Events are numbered by their place on the whole line (the third event is 3 in
every range), so a part of the book printed with ``--from`` lines up with the
whole. A revert is no chapter: it undoes one, which says so, and the revert is
listed under ``reverts`` (it is not counted either).

A scene break goes where the scene changes. An event that closes the scene ends
it (the last boat leaves and the rain stops), so the break follows it; but an
event that closes the scene *and* moves the story time (``--at "Day 4, dawn"``)
is the first beat of the new scene, and the break goes before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from narrative.engine.eventgraph import Story, tip_of
from narrative.errors import InvalidInputError, NotFoundError, Step
from narrative.store import WorldRepo, resolve_rev, reverted_by, subject_of

SCENE_BREAK = "* * *"


@dataclass
class Book:
    world: str
    start: dict[str, Any] | None  # the --from commit (excluded), None from the beginning
    end: dict[str, Any]  # the --to commit (included)
    events: list[dict[str, Any]]
    skipped: list[dict[str, Any]]  # commits on the line that are not events
    reverts: list[dict[str, Any]]  # events that undo an earlier one: no chapter of their own

    def to_json(self) -> dict[str, Any]:
        return {"world": self.world, "from": self.start, "to": self.end, "events": self.events,
                "skipped": self.skipped, "reverts": self.reverts}

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
        commit = resolve_rev(wr, start).id
        if commit not in story.by_commit:
            raise InvalidInputError(
                f"{start} is not on the story line that ends at {end or 'HEAD'}",
                hint="--from takes an earlier event of the same line ({0} lists them)",
                steps=[Step("log")])
        first = story.by_commit[commit]
        after = first.seq
    events: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    reverts: list[dict[str, Any]] = []
    line = list(reversed(story.events))  # oldest first
    undo = reverted_by(wr, [e.commit for e in line if e.kind == "event"])
    chapters: dict[str, dict[str, Any]] = {}
    number = 0
    time: str | None = None  # the story time in force: the last --at so far
    for e in line:
        revert = e.commit in undo
        if e.kind == "event" and not revert:
            number += 1
        moves_time = bool(e.timestamp) and e.timestamp != time
        if e.timestamp:
            time = e.timestamp
        if e.seq <= after or e.kind == "genesis":
            continue
        if e.kind != "event":
            skipped.append({"commit": e.commit, "content": e.content})
            continue
        if revert:
            reverts.append({"commit": e.commit, "id": e.id, "content": e.content, "reverts": undo[e.commit]})
            chapter = chapters.get(undo[e.commit])
            if chapter is not None:
                chapter["reverted_by"] = {"commit": e.commit, "content": e.content}
            continue
        brk = None if not e.close_scene else "before" if moves_time else "after"
        chapters[e.id or e.commit] = {
            "number": number, "id": e.id, "commit": e.commit, "content": e.content,
            "timestamp": e.timestamp, "story_time": time,
            "narrative_text": e.narrative, "close_scene": e.close_scene,
            "scene_break": brk, "reverted_by": None}
        events.append(chapters[e.id or e.commit])
    return Book(wr.config.name, first.to_json() if first else None,
                story.by_commit[tip.id].to_json(), events, skipped, reverts)


def render_markdown(d: dict[str, Any]) -> str:
    """The book dict as Markdown: a title, then one section per event with its prose."""
    lines = [f"# {d['world'] or 'Untitled world'}"]
    if d["from"] is not None:
        lines += ["", f"*After: {subject_of(d['from']['content'])}*"]
    if not d["events"]:
        lines += ["", "*No events in this part of the story.*"]
    shown: str | None = None
    for i, e in enumerate(d["events"]):
        if e["scene_break"] == "before" and i and lines[-1] != SCENE_BREAK:
            lines += ["", SCENE_BREAK]
        heading = subject_of(e["content"])
        lines += ["", f"## {e['number']}. {heading}"]
        when = e.get("story_time") or e["timestamp"]
        if when and when != shown:
            lines += ["", f"*{when.strip()}*"]
        shown = when
        if heading != e["content"].strip():
            lines += ["", e["content"].strip()]
        if e["narrative_text"]:
            lines += ["", e["narrative_text"].strip()]
        if e["reverted_by"]:
            lines += ["", "*Undone later by a revert.*"]
        if e["scene_break"] == "after":
            lines += ["", SCENE_BREAK]
    return "\n".join(lines) + "\n"
