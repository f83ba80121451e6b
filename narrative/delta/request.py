"""What an event asks for, kept whole so that a failed event can run again exactly as asked."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from narrative.model import Change, ChapterData, Delta, InChapter


class EventRequest(BaseModel):
    """Everything needed to run an event again exactly as it was asked for."""

    content: str
    delta: Delta = Field(default_factory=Delta)
    narrative_text: str | None = None
    timestamp: str | None = None
    close_scene: bool = False
    diffuser: str | None = None
    causes: list[str] = Field(default_factory=list)
    edits: list[Change] = Field(
        default_factory=list,
        description="Hand edits to lay onto the world before the event (a replayed event's own).",
    )
    replay_of: str | None = None
    reverts: str | None = None
    chapter: ChapterData | None = Field(
        default=None, description="A chapter's own commit told again (a replay): its record.")
    in_chapter: InChapter | None = Field(
        default=None, description="An event told in a chapter: which one, at which sentence.")
    render: bool = Field(default=False, description="Ask the diffuser for the narrative text too.")
    accept: list[int] = Field(
        default_factory=list,
        description="Held-back changes to apply after all (their numbers, from a run of the same "
                    "words): the rules diffuser holds back what it finds under a structure it "
                    "does not know.")
    large: bool = Field(default=False,
                        description="Let the rules diffuser read content beyond its size limit.")
    brief: dict[str, Any] | None = Field(
        default=None, exclude=True,
        description="The deterministic brief for this event (``narr brief`` with the event's "
                    "content as the goal), filled in by the engine for a diffuser that asks for "
                    "it; derived from the world, so never saved with a kept event.",
    )
