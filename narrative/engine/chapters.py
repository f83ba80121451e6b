"""The chapters of the story: ``narr log --chapters``, ``narr show chapter:N``, ``narr reset
--chapter N``, and what the book and the brief read of them.

A chapter is its own commit on the story line (its record: number, title, text, scenes,
summary) followed by the events told in it, each naming it. Its first and last event are
read from the line as it stands: after a reset into the middle of a chapter it holds the
events left, and a merged line's chapters are listed where the merge brought them, marked
with their branch. Everything here reads the catalog's rows (one query for the chapters,
one for their events), never a chapter's text, unless one chapter is shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from narrative.engine.eventgraph import tip_of
from narrative.errors import InvalidInputError, NotFoundError, Step
from narrative.store import ChapterRow, Span, WorldRepo, decode_raw_record, peel_commit

CHAPTER_REV = re.compile(r"^chapter:(\d{1,7})$", re.IGNORECASE)


@dataclass
class ChapterInfo:
    """A chapter as a list shows it."""

    row: ChapterRow
    span: Span | None  # its events on the line (None: none left)
    line: str | None = None  # the branch a merge brought it from; None: the story line's own
    first: dict[str, Any] | None = None
    last: dict[str, Any] | None = None

    @property
    def number(self) -> int:
        return self.row.number

    @property
    def commit(self) -> str:
        return self.row.commit

    def to_json(self) -> dict[str, Any]:
        r = self.row
        return {"id": r.id, "commit": r.commit, "number": r.number, "title": r.title,
                "heading": heading(r.number, r.title, r.language), "summary": r.summary,
                "language": r.language, "sentences": r.sentences, "events": r.events,
                "events_on_line": self.span.events if self.span is not None else 0,
                "first": self.first, "last": self.last, "key": r.key, "line": self.line}


def heading(number: int, title: str | None, language: str = "en") -> str:
    """How a chapter is named: its title when that names the number already (``Chapter 3: The
    Ferry``, ``第三章 渡口``), else ``Chapter 3: The Ferry`` (``第3章 渡口``)."""
    from narrative.engine.scenes import chapter_number

    if title and chapter_number(title) is not None:
        return title
    if language.startswith("zh"):
        return f"第{number}章" + (f" {title}" if title else "")
    return f"Chapter {number}" + (f": {title}" if title else "")


def chapters_on_line(wr: WorldRepo, tip: str | None = None, *,
                     merged: bool = False) -> list[ChapterInfo]:
    """The chapters of the story line ending at ``tip`` (HEAD), oldest first; with ``merged``
    those merged lines brought too, where their merge stands."""
    commit = tip_of(wr, tip)
    if commit is None:
        return []
    index = wr.catalog.chapters
    own = index.on_chain(commit.id)
    spans = index.spans(commit.id)
    out: list[ChapterInfo] = []
    if merged:
        from narrative.engine.storyline import read_line

        told = read_line(wr, commit.id)
        merged_chapters = [t for t in told if t.line is not None and t.info.kind == "chapter"]
        rows = index.rows([t.info.commit for t in merged_chapters])
        lines = {t.info.commit: t.line for t in merged_chapters}
        order = {t.info.commit: i for i, t in enumerate(told)}
        brought = _spans_of(wr, [t for t in told if t.line is not None])
        for chapter in sorted([*own, *rows.values()], key=lambda c: order.get(c.commit, 0)):
            span = spans.get(chapter.id) or brought.get(chapter.id)
            out.append(ChapterInfo(chapter, span, lines.get(chapter.commit)))
    else:
        out = [ChapterInfo(c, spans.get(c.id)) for c in own]
    _ends(wr, out)
    return out


def _spans_of(wr: WorldRepo, told: list[Any]) -> dict[str, Span]:
    """The spans of the chapters among merged lines' commits (in story order)."""
    places = wr.catalog.chapters.told([t.info.commit for t in told])
    out: dict[str, Span] = {}
    for i, t in enumerate(told):
        place = places.get(t.info.commit)
        if place is None:
            continue
        span = out.get(place.chapter)
        out[place.chapter] = Span(place.chapter, span.first_seq if span else i, i,
                                  (span.events if span else 0) + 1,
                                  span.first if span else t.info.commit, t.info.commit)
    return out


def _ends(wr: WorldRepo, chapters: list[ChapterInfo]) -> None:
    """Each chapter's first and last event on the line, as events are named."""
    wanted = [c for ch in chapters if ch.span is not None for c in (ch.span.first, ch.span.last)]
    if not wanted:
        return
    infos = {e.commit: e for e in wr.catalog.graph.event_infos(wanted)}
    for ch in chapters:
        if ch.span is None:
            continue
        first, last = infos.get(ch.span.first), infos.get(ch.span.last)
        ch.first = {"id": first.id, "commit": first.commit, "content": first.content} if first else None
        ch.last = {"id": last.id, "commit": last.commit, "content": last.content} if last else None


def find(wr: WorldRepo, number: int, tip: str | None = None) -> ChapterInfo:
    """Chapter ``number`` of the story line (the newest of that number, should there be two)."""
    found = [c for c in chapters_on_line(wr, tip, merged=True) if c.number == number]
    if not found:
        listed = chapters_on_line(wr, tip, merged=True)
        known = ", ".join(str(c.number) for c in listed[-20:]) or "none yet"
        raise NotFoundError(f"no chapter {number} on this story line (chapters: {known})",
                            hint="narr log --chapters lists them")
    return found[-1]


def chapter_info(wr: WorldRepo, commit: str, tip: str) -> dict[str, Any]:
    """The chapter whose own commit is ``commit``, as a list shows it."""
    for c in chapters_on_line(wr, tip, merged=True):
        if c.commit == commit:
            return c.to_json()
    raise NotFoundError(f"{commit[:10]} is no chapter of this story line")


def before(wr: WorldRepo, number: int) -> str:
    """The commit just before chapter ``number`` began: where ``reset --chapter`` goes."""
    chapter = find(wr, number)
    if chapter.line is not None:
        raise InvalidInputError(
            f"chapter {number} came in with the merge of {chapter.line}: resetting to before it "
            "would leave the merge", hint="{0} to before the merge, or {1} it",
            steps=[Step("reset", cli="narr reset"), Step("revert", cli="narr revert")])
    commit = peel_commit(wr, chapter.commit)
    if commit is None or commit.first_parent is None:
        raise NotFoundError(f"chapter {number}'s commit is missing from this repository")
    return commit.first_parent.id


def show(wr: WorldRepo, number: int) -> dict[str, Any]:
    """One chapter whole: its record (text, scenes, summary), where it stands, its events."""
    chapter = find(wr, number)
    raw = _raw(wr, chapter.commit)
    if raw is None or not isinstance(raw.get("chapter"), dict):
        raise NotFoundError(f"chapter {number}'s record cannot be read")
    head = tip_of(wr)
    assert head is not None
    events = _events_of(wr, chapter, head.id)
    return {**chapter.to_json(), "record": {k: raw[k] for k in ("id", "content", "created_at",
                                                                 "timestamp", "diffuser", "edits")},
            "text": raw["chapter"]["text"], "scenes": raw["chapter"]["scenes"],
            "digest": raw["chapter"]["digest"], "told": events}


def _raw(wr: WorldRepo, commit_id: str) -> dict[str, Any] | None:
    commit = peel_commit(wr, commit_id)
    return decode_raw_record(commit.message) if commit is not None else None


def written(wr: WorldRepo, commit_id: str) -> dict[str, Any] | None:
    """The chapter as its own commit records it (``text``, ``scenes`` with their offsets in
    the text, ``digest``), or None when ``commit_id`` holds no chapter narr wrote: the one
    reading of a chapter's prose, for ``show chapter:N``, the book and the manuscript."""
    data = (_raw(wr, commit_id) or {}).get("chapter")
    return data if isinstance(data, dict) else None


def _events_of(wr: WorldRepo, chapter: ChapterInfo, tip: str) -> list[dict[str, Any]]:
    """The chapter's events on the line, oldest first, each with its sentence and changes."""
    from narrative.engine.storyline import read_line

    told = [t for t in read_line(wr, tip) if t.info.kind == "event"]
    places = wr.catalog.chapters.told([t.info.commit for t in told])
    out = []
    for t in told:
        place = places.get(t.info.commit)
        if place is None or place.chapter != chapter.row.id:
            continue
        out.append({"id": t.info.id, "commit": t.info.commit, "sentence": place.sentence,
                    "scene": place.scene, "content": t.info.content,
                    "changes": len(wr.catalog.graph.commit_writes(t.info.commit, 0))})
    return out


def places(wr: WorldRepo, commits: list[str]) -> dict[str, dict[str, Any]]:
    """For each of ``commits`` told in a chapter: the chapter (its number, heading, record id
    and commit) and the sentence and scene the event was told at."""
    index = wr.catalog.chapters
    told = index.told(commits)
    if not told:
        return {}
    rows = index.by_ids(sorted({t.chapter for t in told.values()}))
    out = {}
    for commit, t in told.items():
        row = rows.get(t.chapter)
        out[commit] = {"number": t.number, "sentence": t.sentence, "scene": t.scene,
                       "id": t.chapter, "commit": row.commit if row is not None else None,
                       "heading": heading(row.number, row.title, row.language)
                       if row is not None else f"Chapter {t.number}"}
    return out


def parse_rev(rev: str) -> int | None:
    """The chapter number ``chapter:N`` names, or None for any other revision."""
    m = CHAPTER_REV.match(rev.strip())
    return int(m.group(1)) if m else None
