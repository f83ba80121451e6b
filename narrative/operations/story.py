"""Rows that tell the story: an event, and the events that failed and wait."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from narrative.errors import InvalidInputError
from narrative.model import Op
from narrative.operations import MAX_CONTENT, Operation, Params, Short

if TYPE_CHECKING:
    from narrative.engine.event import EventResult
    from narrative.store import WorldRepo


class EventParams(Params):
    content: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT, description="what happens")]
    ops: Annotated[list[Op], Field(max_length=10_000)] = Field(
        default_factory=list, description="changes spelt out (the delta's ops)")
    diffuser: Short | None = Field(
        None, description="rules, llm, exec, none; the world's default if left out")
    dry_run: bool = Field(False, description="show what would change, record nothing")
    at: Short | None = Field(None, description="the story time of the event")
    text: Annotated[str, Field(max_length=MAX_CONTENT)] | None = Field(
        None, description="the narrative text the event is told in")
    close_scene: bool = False


def run_event(wr: WorldRepo, p: EventParams) -> EventResult:
    from narrative.delta.request import EventRequest
    from narrative.diffusers.base import default_name, get_diffuser
    from narrative.engine.event import run_event
    from narrative.model import Delta

    content = p.content.strip()
    if not content:
        raise InvalidInputError("the arguments: /content: say what happens")
    name = p.diffuser or default_name(wr)
    request = EventRequest(content=content, delta=Delta(ops=p.ops), diffuser=name, timestamp=p.at,
                           narrative_text=p.text, close_scene=p.close_scene)
    return run_event(wr, request, dry_run=p.dry_run, diffuser=get_diffuser(name, wr))


E = "narrative.engine"
ROWS = (
    Operation("event", "Record one event: its words, the changes spelt out, and what the diffuser "
              "adds (dry_run: only show them).", EventParams, run_event, f"{E}.event:EventResult",
              "POST", "/api/events", "event", positional=("content",), writes=True, idempotent=False),
)
