"""The parts many answers share: a change, an event as others name it, an event's record.

Each is a :class:`~narrative.answers.Shape`; the answers that carry them are defined with
their use cases (``narrative.engine``), so a program reads one type wherever a change or a
record comes back.
"""

from __future__ import annotations

from typing import Annotated

from narrative.answers import MAYBE, Shape
from narrative.model import JSON, Op

Obj = dict[str, JSON]
"""A JSON object whose members the world decides (a node's state) or another module's record."""


class Change(Shape):
    """A field that changed: ``old_value`` absent when it was made, ``new_value`` when removed;
    ``side`` in a merge (ours, theirs, resolved), ``path`` the file of a hand edit."""

    target: str
    field: str
    old_value: Annotated[JSON | None, MAYBE] = None
    new_value: Annotated[JSON | None, MAYBE] = None
    side: Annotated[str | None, MAYBE] = None
    path: Annotated[str | None, MAYBE] = None


class EventRef(Shape):
    """An event as other answers name it."""

    commit: str
    id: str | None
    kind: str
    content: str
    timestamp: str | None


class SceneRecord(Shape):
    """A scene of a chapter: its place in the chapter's text and its sentences."""

    number: int
    title: str | None
    start: int
    end: int
    first_sentence: int
    sentences: int


class ChapterRecord(Shape):
    """A chapter's own record (its commit's): the text, the scenes, the summary."""

    number: int
    title: str | None
    text: str
    language: str
    scenes: list[SceneRecord]
    sentences: int
    events: int
    summary: str
    nodes: list[str]
    digest: str
    key: str | None


class InChapterRef(Shape):
    """Where an event told in a chapter stands in it."""

    chapter: str
    number: int
    sentence: int
    scene: int


class ToldAt(Shape):
    """The chapter an event was told in, and its sentence there."""

    number: int
    sentence: int
    scene: int
    id: str
    commit: str | None
    heading: str


class StoredRecord(Shape):
    """An event's record as its commit holds it: what every event answer carries."""

    narr: int
    kind: str
    id: str
    parent: str | None
    content: str
    diffusions: list[Change]
    edits: list[Change]
    narrative_text: str | None
    timestamp: str | None
    created_at: str
    close_scene: bool
    diffuser: str | None
    causes: list[str]
    reverts: str | None
    replay_of: str | None
    merged: str | None
    explicit: list[Op]
    joined: Annotated[dict[str, str] | None, MAYBE] = None
    chapter: Annotated[ChapterRecord | None, MAYBE] = None
    in_chapter: Annotated[InChapterRef | None, MAYBE] = None


class Record(StoredRecord):
    """An event's record, as ``narr show`` gives it: the stored record and its commit's id."""

    commit: str | None


class PlainCommit(Shape):
    """A commit made without narr (plain git) on the story line: no record, its message."""

    commit: str
    kind: str
    id: None
    content: str
    diffusions: list[Change]
    edits: list[Change]


class Proposal(Shape):
    """What the diffuser proposed and what became of each op."""

    diffuser: str | None
    ops: list[Op]
    notes: list[str]
    held: list[Obj]
    proposed: list[Obj]  # as the diffuser proposed them, valid or not
    arbitration: list[Obj]
    refused: list[Obj]
