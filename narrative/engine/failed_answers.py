"""What the failed events' use cases answer: light on purpose (``narr status`` names the
failed events without loading what reads them)."""

from __future__ import annotations

from typing import ClassVar

from narrative.answers import Answer, Items, Shape


class FailedSummary(Shape):
    """A kept failed event, named: its key, when it failed, its words and the error."""

    key: str
    saved_at: str
    content: str
    error: str


class FailedItem(Shape):
    """An event narr could not make, its words kept: ``unread`` the change flags as typed
    when they could not be read; ``raw_reply`` what a diffuser answered that was refused."""

    n: int
    key: str
    saved_at: str
    content: str
    error: str
    details: list[str]
    diffuser: str | None
    raw_reply: str | None
    unread: list[str]


class FailedEvents(Items[FailedItem]):
    """Events that could not be recorded, their words kept with the error; newest first,
    numbered as a retry or a drop names them."""

    NAME: ClassVar[str] = "failed"
    VERSION: ClassVar[int] = 2  # 2: a page of the list (next), when one was asked for


class FailedDropped(Answer):
    """A failed event forgotten for good: its words, one last time."""

    NAME: ClassVar[str] = "failed_dropped"

    dropped: FailedSummary
