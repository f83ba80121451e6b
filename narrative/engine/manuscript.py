"""The manuscript: the story line read as prose, by chapter and scene, with what each passage
changed beside it and the world's names marked in it.

Chapters come from one place, :func:`chapter_records`: the chapters recorded with ``narr
chapter`` on the story line (and on lines merged into it), read as ``narr log --chapters``
reads them (:mod:`narrative.engine.chapters`). A recorded chapter is told in its own prose,
scene by scene, each of its events a passage beside the scene it was told in (its sentence
and its changes), and the events told outside any chapter keep their place. Where none is
recorded (a story told event by event), the events themselves are the manuscript, as ``narr
story`` prints it: one chapter, cut into scenes where a scene closes
(:mod:`narrative.engine.book` decides where), each event a passage in its narrative text, or
its words when it has none.

A passage's prose is given as pieces, ``[text, node id or None]``, so a page marks a name
without counting characters (a server's and a browser's count differ beyond the BMP). Names
are found as the diffusers find them (:func:`narrative.diffusers.context.find_mentions`,
whole words, longest first), in the world as it stands now.

Story time is an axis where it parses (:func:`time_key`: dates, ``Day 3, dusk``, ``第三日
黄昏``); a time that does not parse keeps the place of the passage before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from narrative import fields
from narrative.errors import InvalidInputError
from narrative.ids import id_problem, normalize_name
from narrative.store import WorldRepo

PASSAGE_LIMIT = 500  # the last passages shown; older ones are one request away (``limit``)
CHANGES_SHOWN = 12  # changes listed beside one passage; the rest counted


@dataclass(frozen=True)
class ChapterRecord:
    """A recorded chapter as the manuscript reads it. ``scenes`` are the texts of its scenes
    in order (together, ``text``); ``first_event`` and ``last_event`` are commits or event
    ids of the story line, the chapter's events being those between them, both included.
    ``heading`` is how the chapter is named (default ``Chapter N: title``), ``summary`` the
    one its record holds, ``line`` the branch a merge brought it from."""

    number: int
    title: str
    text: str
    scenes: Sequence[str]
    first_event: str
    last_event: str
    heading: str | None = None
    summary: str | None = None
    line: str | None = None


def chapter_records(wr: WorldRepo) -> list[ChapterRecord]:
    """The chapters recorded on the current story line, oldest first, merged lines' chapters
    where their merge brought them: the manuscript's one source of chapters, read as ``narr
    log --chapters`` and ``narr show chapter:N`` read them (:mod:`narrative.engine.chapters`).
    A chapter with no event left on the line (reset to before it) is not told; one reset into
    its middle is told to the scene its last event left stands in, the scenes undone being
    no longer the story's."""
    from narrative.engine.chapters import chapters_on_line, heading, written

    out = []
    for chapter in chapters_on_line(wr, merged=True):
        data = written(wr, chapter.commit) if chapter.first and chapter.last else None
        if data is None or chapter.first is None or chapter.last is None or chapter.span is None:
            continue
        text = str(data.get("text") or "")
        scenes = [text[int(sc["start"]):int(sc["end"])].strip() for sc in data.get("scenes") or []]
        row = chapter.row
        if chapter.span.events < row.events:  # cut by a reset
            place = wr.catalog.chapters.told([chapter.last["commit"]]).get(chapter.last["commit"])
            if place is not None:
                scenes = scenes[:place.scene]
        out.append(ChapterRecord(row.number, row.title or "", text, [sc for sc in scenes if sc],
                                 chapter.first["commit"], chapter.last["commit"],
                                 heading(row.number, row.title, row.language), row.summary,
                                 chapter.line))
    return out


# --- story time ---------------------------------------------------------------------------

_PARTS = [
    (("midnight", "子夜", "午夜", "半夜"), 8),
    (("dawn", "daybreak", "sunrise", "黎明", "拂晓", "破晓", "清晨", "凌晨"), 1),
    (("morning", "早上", "早晨", "上午", "晨"), 2),
    (("noon", "midday", "中午", "正午", "晌午"), 3),
    (("afternoon", "午后", "下午"), 4),
    (("dusk", "sunset", "evening", "twilight", "黄昏", "傍晚", "日落", "薄暮"), 5),
    (("night", "晚上", "夜晚", "入夜", "夜"), 6),
]
_WORDS = {w: n for n, w in enumerate([
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
    "twenty"])}
_ORDINALS = {w: n for n, w in enumerate([
    "zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
    "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
    "seventeenth", "eighteenth", "nineteenth", "twentieth"])}
_HAN = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
        "八": 8, "九": 9}
_DATE = re.compile(r"(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})日?(?:[ T,]*(\d{1,2})[:：](\d{2}))?")
_CLOCK = re.compile(r"\b(\d{1,2})[:：](\d{2})\b")
_HAN_DIGITS = "\\d零〇一二两三四五六七八九十百"
_YEAR = re.compile(rf"\byear\s+(\d+|[a-z]+)\b|第([{_HAN_DIGITS}]+)年", re.I)
_DAY = re.compile(rf"\bday\s+(\d+|[a-z]+)\b|\b(\d+|[a-z]+)\s+day\b|第([{_HAN_DIGITS}]+)[日天]", re.I)


def _han_number(text: str) -> int | None:
    """一 to 九百九十九 (and plain digits)."""
    if text.isdigit():
        return int(text)
    total, digit = 0, None
    for ch in text:
        if ch in _HAN:
            digit = _HAN[ch]
        elif ch in "十百":
            total += (1 if digit is None else digit) * (10 if ch == "十" else 100)
            digit = None
        else:
            return None
    return total + (digit or 0)


def _number(text: str) -> int | None:
    low = text.lower()
    if low.isdigit():
        return int(low)
    return _WORDS.get(low, _ORDINALS.get(low, _han_number(text)))


def time_key(text: str | None) -> list[int] | None:
    """A sortable key for a story time, or None when it does not parse. A date (``2024-05-03``,
    ``2024年5月3日``, with a clock time) sorts among dates; a day (``Day 3``, ``the third day``,
    ``第三日``, with ``Year 2``) among days, with the part of the day (dawn, morning, noon,
    afternoon, dusk, night; 清晨 ... 夜) or a clock time after it."""
    if not text:
        return None
    date = _DATE.search(text)
    if date:
        y, m, d = (int(date.group(i)) for i in (1, 2, 3))
        minutes = int(date.group(4)) * 60 + int(date.group(5)) if date.group(4) else 0
        return [0, y * 10_000 + m * 100 + d, minutes]
    day = _DAY.search(text)
    if not day:
        return None
    number = _number(day.group(1) or day.group(2) or day.group(3))
    if number is None:
        return None
    year = _YEAR.search(text)
    year_n = _number(year.group(1) or year.group(2)) if year else 0
    low = text.lower()
    part = 0
    clock = _CLOCK.search(text)
    if clock:
        part = 100 + int(clock.group(1)) * 60 + int(clock.group(2))
    else:
        for words, rank in _PARTS:
            if any((re.search(rf"\b{w}\b", low) if w.isascii() else w in text) for w in words):
                part = rank
                break
    return [1, year_n or 0, number, part]


# --- the manuscript -----------------------------------------------------------------------

def _pieces(world: Any, text: str) -> list[list[Any]]:
    """``text`` cut at the names of the world in it: ``[[text, id or None], ...]``."""
    from narrative.diffusers.context import find_mentions

    if not text:
        return []
    found = sorted((m.start, m.end, m.ids[0]) for m in find_mentions(world, text) if len(m.ids) == 1)
    out: list[list[Any]] = []
    at = 0
    for start, end, node_id in found:
        if start > at:
            out.append([text[at:start], None])
        out.append([text[start:end], node_id])
        at = end
    if at < len(text):
        out.append([text[at:], None])
    return out


def _change_row(w: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"target": w.target, "field": w.field,
                           "by": "hand edit" if w.source == "edit" else "diffusion"}
    if w.old is not fields.ABSENT:
        row["old"] = w.old if w.field else {"name": (w.old or {}).get("name")}
    if w.new is not fields.ABSENT:
        row["new"] = w.new if w.field else {"name": (w.new or {}).get("name")}
    return row


def _world_now(wr: WorldRepo) -> Any:
    from narrative.store import WorldView, scan_for_reader

    head = wr.head_commit()
    tree = head.tree if head else None
    return WorldView(wr, tree, scan_for_reader(wr, tree))


def manuscript(wr: WorldRepo, limit: int = PASSAGE_LIMIT, *,
               records: Iterable[ChapterRecord] | None = None,
               looking_for: set[str] | None = None) -> dict[str, Any]:
    """The story line as chapters, scenes and passages (its last ``limit`` events), each
    passage with its prose in marked pieces, its story time and key, and its changes.
    ``records``: the chapters to read (default: :func:`chapter_records`). ``looking_for``:
    normalised names; only a passage holding one of them is searched for names (the others
    come as one piece, and no passage's changes are read): what finding one node's passages
    needs, at a fraction of the cost."""
    from narrative.engine.book import book
    from narrative.errors import NotFoundError

    if limit < 1:
        raise InvalidInputError("limit must be 1 or more")
    try:
        events = book(wr).events
    except NotFoundError:
        events = []
    total = len(events)
    events = events[-limit:]
    world = _world_now(wr)
    graph = wr.catalog.graph
    names: dict[str, str] = {}

    def passage(e: Mapping[str, Any], n: int) -> dict[str, Any]:
        writes = graph.commit_writes(e["commit"], n) if looking_for is None else []
        prose = e["narrative_text"] or e["content"]
        if looking_for is None or any(name in normalize_name(prose) for name in looking_for):
            pieces = _pieces(world, prose)
        else:
            pieces = [[prose, None]]
        for _, node_id in pieces:
            if node_id:
                names.setdefault(node_id, "")
        changes = [_change_row(w) for w in writes]
        for c in changes:
            whole = c.get("old") or c.get("new") if not c["field"] else None
            names.setdefault(c["target"], str(whole["name"]) if whole and whole.get("name") else "")
            tokens = fields.split(c["field"])
            if len(tokens) == 3 and tokens[0] == "relations":
                names.setdefault(tokens[2], "")
            for value in (c.get("old"), c.get("new")):  # a reference field's node, by its name
                if isinstance(value, str) and id_problem(value) is None and world.exists(value):
                    names.setdefault(value, "")
        return {"commit": e["commit"], "id": e["id"], "number": e["number"],
                "content": e["content"], "sentence": e.get("sentence"),
                "told": bool(e["narrative_text"]), "pieces": pieces,
                "story_time": e["story_time"], "time_key": time_key(e["story_time"]),
                "changes": changes[:CHANGES_SHOWN], "more_changes": max(0, len(changes) - CHANGES_SHOWN),
                "reverted": e["reverted_by"] is not None}

    recorded = list(chapter_records(wr) if records is None else records)
    chapters = (_from_records(recorded, events, passage, world) if recorded
                else _from_events(events, passage))
    for node_id, known in list(names.items()):
        node = world.get(node_id)  # an ended node keeps the name its ending recorded
        names[node_id] = str(node.get("name") or node_id) if node else (known or node_id)
    return {"source": "records" if recorded else "events", "chapters": chapters,
            "total": total, "shown": len(events), "names": names}


def _scene(n: int, passages: list[dict[str, Any]], prose: list[list[Any]] | None = None) -> dict[str, Any]:
    times = [p["story_time"] for p in passages if p["story_time"]]
    return {"number": n, "story_time": times[0] if times else None, "pieces": prose,
            "passages": passages}


def _scenes(events: Sequence[Mapping[str, Any]], passage: Any) -> list[dict[str, Any]]:
    """Events as scenes, cut where a scene closes."""
    scenes: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    for e in events:
        if e["scene_break"] == "before" and current:
            scenes.append(_scene(len(scenes) + 1, current))
            current = []
        current.append(passage(e, e["number"]))
        if e["scene_break"] == "after":
            scenes.append(_scene(len(scenes) + 1, current))
            current = []
    if current:
        scenes.append(_scene(len(scenes) + 1, current))
    return scenes


def _from_events(events: Sequence[Mapping[str, Any]], passage: Any) -> list[dict[str, Any]]:
    """One chapter, the story so far, cut into scenes where a scene closes."""
    scenes = _scenes(events, passage)
    return [{"number": 1, "title": None, "recorded": False, "heading": None, "summary": None,
             "line": None, "scenes": scenes}] if scenes else []


def _heading(number: int, title: str | None) -> str:
    from narrative.engine.chapters import heading

    return heading(number, title or None)


def _from_records(records: Sequence[ChapterRecord], events: Sequence[Mapping[str, Any]], passage: Any,
                  world: Any) -> list[dict[str, Any]]:
    """Each recorded chapter with its scenes' own prose, where its first event stands; an event
    of the chapter stands with the scene whose text holds its words (else with the chapter's
    last scene). Events told outside any chapter keep their place, as unrecorded chapters
    numbered 1, 2, ... in order (cut into scenes as the events alone are): a story is not
    shorter for having some of its chapters recorded."""
    at = {key: i for i, e in enumerate(events) for key in (e["commit"], e["id"]) if key}
    spans = []
    for record in records:
        first, last = at.get(record.first_event), at.get(record.last_event)
        if first is not None and last is not None and first <= last:
            spans.append((first, last, record))  # else not on the part of the line shown
    spans.sort(key=lambda span: span[0])
    chapters: list[dict[str, Any]] = []
    done = 0  # the events before this one are in a chapter already
    loose = 0

    def told_outside(upto: int) -> None:
        nonlocal loose
        if done < upto:
            loose += 1
            chapters.append({"number": loose, "title": None, "recorded": False, "heading": None,
                             "summary": None, "line": None, "scenes": _scenes(events[done:upto], passage)})

    for first, last, record in spans:
        if first < done:
            continue  # overlaps a chapter already placed
        told_outside(first)
        scene_texts = list(record.scenes) or [record.text]
        groups: list[list[dict[str, Any]]] = [[] for _ in scene_texts]
        for e in events[first:last + 1]:
            words = str(e["content"]).strip()
            k = next((i for i, t in enumerate(scene_texts) if words and words in t), len(scene_texts) - 1)
            groups[k].append(passage(e, e["number"]))
        scenes = [_scene(i + 1, groups[i], _pieces(world, text)) for i, text in enumerate(scene_texts)]
        chapters.append({"number": record.number, "title": record.title, "recorded": True,
                         "heading": record.heading or _heading(record.number, record.title),
                         "summary": record.summary, "line": record.line, "scenes": scenes})
        done = last + 1
    told_outside(len(events))
    return chapters


def mentions(wr: WorldRepo, node: str, limit: int = 50) -> dict[str, Any]:
    """The passages of the manuscript that name ``node`` (by any of its names), newest last:
    each with its chapter and scene, and the sentence around the name."""
    from narrative.engine.naming import Names

    node_id = Names(wr).resolve(node, context="node")
    found_node = _world_now(wr).get(node_id) or {}
    names = {normalize_name(str(x)) for x in [found_node.get("name", ""), *(found_node.get("aliases") or [])]}
    book = manuscript(wr, looking_for={n for n in names if n})
    found = []
    for chapter in book["chapters"]:
        for scene in chapter["scenes"]:
            for p in scene["passages"]:
                at = [i for i, (_, named) in enumerate(p["pieces"]) if named == node_id]
                if not at:
                    continue
                found.append({"commit": p["commit"], "number": p["number"], "chapter": chapter["number"],
                              "scene": scene["number"], "excerpt": _excerpt(p["pieces"], at[0])})
    return {"node": node_id, "passages": found[-limit:], "total": len(found)}


def _excerpt(pieces: list[list[Any]], at: int, reach: int = 60) -> list[list[Any]]:
    """The pieces around piece ``at``, cut to about ``reach`` characters each side."""
    before = "".join(t for t, _ in pieces[:at])[-reach:]
    after = "".join(t for t, _ in pieces[at + 1:])[:reach]
    out: list[list[Any]] = []
    if before:
        out.append([("…" if len(before) == reach else "") + before, None])
    out.append(list(pieces[at]))
    if after:
        out.append([after + ("…" if len(after) == reach else ""), None])
    return out
