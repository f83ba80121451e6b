"""``narr story``: the book so far, the events of the story line oldest first, as Markdown or JSON.

The story line is the first-parent chain, as for ``narr log``, with each merge's
events where the merge brought them, in their order and marked with their branch
(:mod:`narrative.engine.storyline`): an alternate ending merged in is part of the
book. The events come from the derived catalog, which already holds each one's
content, story time and narrative text, so the book costs a query or two whatever
the length of the story. The genesis is the world's setting, not part of the book,
and commits made with plain git are not events: both are left out, the latter listed
as ``skipped``; a merge is listed under ``merges``.

A chapter recorded with ``narr chapter`` is told by its own prose: its heading, then
its text as the writer wrote it, once, where it begins; the events it was recorded as
are still listed (each names its chapter and sentence) but not printed again.
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

from dataclasses import dataclass, field
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
    reverts: list[dict[str, Any]]  # events that undo an earlier one: no place of their own
    chapters: list[dict[str, Any]] = field(default_factory=list)
    merges: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"world": self.world, "from": self.start, "to": self.end, "events": self.events,
                "chapters": self.chapters, "merges": self.merges, "skipped": self.skipped,
                "reverts": self.reverts}

    def to_markdown(self) -> str:
        return render_markdown(self.to_json())


def book(wr: WorldRepo, start: str | None = None, end: str | None = None) -> Book:
    """The events after ``start`` (exclusive; default the genesis) up to ``end`` (default HEAD)."""
    from narrative.engine.chapters import heading
    from narrative.engine.storyline import read_line

    tip = tip_of(wr, end)
    if tip is None:
        raise NotFoundError("the story has no events yet")
    story = Story(wr, tip.id)
    line = read_line(wr, tip.id, story)  # oldest first, merged lines where they came in
    after = -1
    first = None
    if start is not None:
        commit = resolve_rev(wr, start).id
        place = next((i for i, t in enumerate(line) if t.info.commit == commit), None)
        if place is None:
            raise InvalidInputError(
                f"{start} is not on the story line that ends at {end or 'HEAD'}",
                hint="--from takes an earlier event of the same line ({0} lists them)",
                steps=[Step("log")])
        first = line[place].info
        after = place
    events: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    reverts: list[dict[str, Any]] = []
    merges: list[dict[str, Any]] = []
    chapters: list[dict[str, Any]] = []
    undo = reverted_by(wr, [t.info.commit for t in line if t.info.kind == "event"])
    told = wr.catalog.chapters.told([t.info.commit for t in line if t.info.kind == "event"])
    own = wr.catalog.chapters.rows([t.info.commit for t in line if t.info.kind == "chapter"])
    by_id: dict[str, dict[str, Any]] = {}
    places: dict[str, dict[str, Any]] = {}
    number = 0
    time: str | None = None  # the story time in force: the last --at so far
    for i, t in enumerate(line):
        e = t.info
        revert = e.commit in undo
        if e.kind == "event" and not revert:
            number += 1
        moves_time = bool(e.timestamp) and e.timestamp != time
        if e.timestamp:
            time = e.timestamp
        if i <= after or e.kind == "genesis":
            continue
        if e.kind == "merge":
            merges.append({"commit": e.commit, "id": e.id, "content": e.content})
            continue
        if e.kind == "chapter" and e.commit in own:
            row = own[e.commit]
            chapter = {"number": row.number, "id": row.id, "commit": e.commit,
                       "title": row.title, "heading": heading(row.number, row.title, row.language),
                       "summary": row.summary, "timestamp": e.timestamp, "story_time": time,
                       "line": t.line, "events": 0, "at": len(events), "text": None}
            chapters.append(chapter)
            by_id[row.id] = chapter
            continue
        if e.kind != "event":
            skipped.append({"commit": e.commit, "content": e.content})
            continue
        if revert:
            reverts.append({"commit": e.commit, "id": e.id, "content": e.content, "reverts": undo[e.commit]})
            shown = places.get(undo[e.commit])
            if shown is not None:
                shown["reverted_by"] = {"commit": e.commit, "content": e.content}
            continue
        brk = None if not e.close_scene else "before" if moves_time else "after"
        at = told.get(e.commit)
        in_book = by_id.get(at.chapter) if at is not None else None
        if in_book is not None:
            in_book["events"] += 1
        places[e.id or e.commit] = {
            "number": number, "id": e.id, "commit": e.commit, "content": e.content,
            "timestamp": e.timestamp, "story_time": time,
            "narrative_text": e.narrative, "close_scene": e.close_scene,
            "scene_break": brk, "reverted_by": None, "line": t.line,
            "chapter": in_book["number"] if in_book is not None else None,
            "sentence": at.sentence if at is not None and in_book is not None else None}
        events.append(places[e.id or e.commit])
    _chapter_texts(wr, chapters)
    return Book(wr.config.name, first.to_json() if first else None,
                story.by_commit[tip.id].to_json(), events, skipped, reverts, chapters, merges)


def _chapter_texts(wr: WorldRepo, chapters: list[dict[str, Any]]) -> None:
    """Each chapter's own prose, read from its commit (only the chapters in the book)."""
    from narrative.engine.chapters import written

    for chapter in chapters:
        data = written(wr, chapter["commit"])
        chapter["text"] = data.get("text") if data is not None else None


def _prose(chapter: dict[str, Any]) -> str:
    """A chapter's text without the heading line its title came from (the book gives one)."""
    text = str(chapter.get("text") or "").strip()
    lines = text.splitlines()
    if lines and chapter.get("title"):
        first = lines[0].strip().lstrip("#").strip()
        if first == chapter["title"]:
            lines = lines[1:]
            if lines and set(lines[0].strip()) <= {"="} and lines[0].strip():
                lines = lines[1:]  # the underline of a setext heading
    return "\n".join(lines).strip()


def render_markdown(d: dict[str, Any]) -> str:
    """The book dict as Markdown: a title, then each chapter in its own prose where it begins,
    and one section per event told outside a chapter."""
    lines = [f"# {d['world'] or 'Untitled world'}"]
    if d["from"] is not None:
        lines += ["", f"*After: {subject_of(d['from']['content'])}*"]
    chapters = d.get("chapters") or []
    if not d["events"] and not chapters:
        lines += ["", "*No events in this part of the story.*"]
    shown: str | None = None
    starting: dict[int, list[dict[str, Any]]] = {}
    for chapter in chapters:
        starting.setdefault(chapter["at"], []).append(chapter)
    told = {c["number"] for c in chapters}
    for i, e in enumerate([*d["events"], None]):
        for chapter in starting.get(i, []):
            shown = _open_chapter(lines, chapter, shown)
        if e is None or e.get("chapter") in told:
            continue  # the end, or told by its chapter's own prose
        if e["scene_break"] == "before" and i and lines[-1] != SCENE_BREAK:
            lines += ["", SCENE_BREAK]
        heading = subject_of(e["content"])
        line = f" *(from {e['line']})*" if e.get("line") else ""
        lines += ["", f"## {e['number']}. {heading}{line}"]
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


def _open_chapter(lines: list[str], chapter: dict[str, Any], shown: str | None) -> str | None:
    line = f" *(from {chapter['line']})*" if chapter.get("line") else ""
    lines += ["", f"## {chapter['heading']}{line}"]
    when = chapter.get("story_time") or chapter.get("timestamp")
    if when and when != shown:
        lines += ["", f"*{when.strip()}*"]
    prose = _prose(chapter)
    if prose:
        lines += ["", prose]
    return when or shown
