"""The answers of a chapter: its review sentence by sentence, the chapter recorded, the chapters
of a story line."""

from __future__ import annotations

from typing import Annotated, ClassVar

from narrative.answers import MAYBE, Answer, Items, Shape
from narrative.model import Op
from narrative.shapes import Change, Obj, SceneRecord


class ProposedChangeJson(Shape):
    """One numbered change of a chapter's review: the op (null: the sentence closes the scene),
    what it does (old -> new), and the rule and words that made it."""

    n: int
    sentence: int
    scene: int
    kind: str
    op: Op | None
    changes: list[Change]
    rule: str | None
    source: str | None
    words: str


class SentenceReviewJson(Shape):
    """A sentence of a chapter's review: where it lies, its numbered changes, those added by
    hand, what follows from them, what was held back and what contradicts the world."""

    number: int
    scene: int
    start: int
    end: int
    text: str
    changes: list[int]
    added: list[Op]
    effects: list[Change]
    expired: dict[str, str]
    held: list[Obj]
    notes: list[str]
    findings: list[Obj]
    remarks: list[Obj]


class ChapterReviewJson(Shape):
    """A chapter read on the world, nothing written."""

    number: int
    title: str | None
    language: str
    heading: str
    digest: str
    head: str
    diffuser: str | None
    review: str
    edits: int
    scenes: list[SceneRecord]
    sentences: list[SentenceReviewJson]
    changes: list[ProposedChangeJson]
    findings: list[Obj]
    held: list[Obj]
    warnings: list[str]
    replaces: Obj | None


class ToldEvent(Shape):
    """An event a chapter was recorded as."""

    id: str
    commit: Annotated[str | None, MAYBE] = None
    sentence: int
    scene: int
    content: str
    changes: int


class _ChapterShown(Shape):
    """What every answer says of a chapter: its own commit and record's number, title, summary."""

    id: str
    commit: str
    number: int
    title: str | None
    heading: str
    summary: str
    language: str
    sentences: int
    events: int
    key: str | None
    line: str | None


class ChapterListed(_ChapterShown):
    """A chapter as a list shows it: ``events_on_line`` those still on the story line, ``line``
    the branch a merge brought it from (null: the line's own)."""

    events_on_line: int
    first: Obj | None
    last: Obj | None


class ChapterRecorded(_ChapterShown):
    """A chapter just recorded: its own commit, the events it became."""

    scenes: int
    first: ToldEvent | None
    last: ToldEvent | None


class ChapterAnswer(Answer):
    """A chapter reviewed (``dry_run``: ``chapter`` null, nothing written) or recorded as one
    unit (``already``: found recorded with the same key, nothing written again)."""

    NAME: ClassVar[str] = "chapter"

    dry_run: bool
    chapter: ChapterRecorded | ChapterListed | None
    events: list[ToldEvent]
    accepted: list[int]
    rejected: list[int]
    head: str | None
    already: bool
    warnings: list[str]
    kept_paths: list[str]
    review: ChapterReviewJson | None


class ChaptersAnswer(Items[ChapterListed]):
    """``narr log --chapters``: the chapters, newest first (a page of them: ``next``)."""

    NAME: ClassVar[str] = "chapters"
    VERSION: ClassVar[int] = 2  # 2: a page (next)
