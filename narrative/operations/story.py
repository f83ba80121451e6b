"""Rows that tell the story: an event, and the events that failed and wait.

:class:`EventParams` is everything an event takes, through every door: the words, the changes
spelt out (``ops``, or in the command line's own forms: ``set``, ``unset``, ``relate``,
``unrelate``, ``expire``, where a node may be named by its name or alias), the diffuser, the
story time, the narrative text, causes, held-back changes to ``accept``, ``render``, ``large``
and a dry run. A failed event is run again by a row of its own (``retry``), not by the event's
words. :func:`request_from` is
the one place such arguments become an :class:`~narrative.delta.request.EventRequest`, so the
same words give the same changes whether they come from ``narr event``, the HTTP API, an MCP
tool, the studio's composer or the library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, field_validator

from narrative.errors import InvalidInputError
from narrative.model import Op
from narrative.operations import MAX_CONTENT, MAX_STRING, Operation, Paged, Params, Short

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.engine.event import EventResult
    from narrative.engine.failed_answers import FailedDropped, FailedEvents
    from narrative.store import WorldRepo

_Flags = Annotated[list[Annotated[str, Field(max_length=MAX_CONTENT)]], Field(max_length=10_000)]


class EventParams(Params):
    content: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT, description="what happens")]
    ops: Annotated[list[Op], Field(max_length=10_000)] = Field(
        default_factory=list, description="changes spelt out (the delta's ops)")
    set: _Flags = Field(default_factory=list, description=(
        "NODE.FIELD=VALUE: set a field (VALUE is JSON when it parses, else text); NODE is an "
        "id, a name or an alias"))
    unset: _Flags = Field(default_factory=list, description="NODE.FIELD: remove a field")
    relate: _Flags = Field(default_factory=list, description=(
        "SRC:TYPE:DST[=ATTRS]: add a relation (ATTRS a JSON object)"))
    unrelate: _Flags = Field(default_factory=list, description="SRC:TYPE:DST: remove a relation")
    expire: _Flags = Field(default_factory=list, description="NODE: end a node")
    diffuser: Short | None = Field(None, description=(
        "what turns the words into changes: rules, llm, exec, explicit (only the changes spelt "
        "out); the world's default if left out"))
    story_time: Annotated[str, Field(min_length=1, max_length=MAX_STRING)] | None = Field(
        None, description="when it happens in the story (Day 3, dusk); left out: the time in force")
    text: Annotated[str, Field(max_length=MAX_CONTENT)] | None = Field(
        None, description="the narrative text the event is told in")
    close_scene: bool = Field(False, description="the event ends the scene: scene nodes expire")
    causes: Annotated[list[Short], Field(max_length=1000)] = Field(
        default_factory=list, description="the events this one follows from (their ids)")
    accept: Annotated[list[Annotated[int, Field(ge=1, le=1_000_000)]], Field(max_length=1000)] = Field(
        default_factory=list, description=(
            "held-back changes to apply after all, by number (a dry run of the same words lists them)"))
    render: bool = Field(False, description="ask the diffuser to write the narrative text too")
    large: bool = Field(False, description="let the rules read words beyond 256 KB at once")
    dry_run: bool = Field(False, description="show what would change, record nothing")

    @field_validator("ops", mode="before")
    @classmethod
    def _flat(cls, value: Any) -> Any:
        """A list of ops may hold lists of ops (what the library's helpers return)."""
        if isinstance(value, list | tuple):
            flat: list[Any] = []
            for item in value:
                flat.extend(item if isinstance(item, list | tuple) else [item])
            return flat
        return value


def request_from(wr: WorldRepo, params: EventParams) -> EventRequest:
    """The request ``params`` ask for: the changes spelt out and those the flag forms name (a
    node named by its name or alias), the words, the story time, the text and the rest."""
    from narrative.delta import flags
    from narrative.delta.request import EventRequest
    from narrative.diffusers.base import default_name
    from narrative.model import Delta

    content = params.content
    if not content.strip():
        raise InvalidInputError("an event needs content: say what happens")
    if params.story_time is not None and not params.story_time.strip():
        raise InvalidInputError("the arguments: /story_time: give a story time (\"Day 3, dusk\"), "
                                "or leave it out for the time in force")
    names = None
    if params.set or params.unset or params.relate or params.unrelate or params.expire:
        from narrative.engine.naming import Names

        names = Names(wr)
    delta = flags.build_delta(delta=Delta(ops=list(params.ops)), sets=params.set, unsets=params.unset,
                              relates=params.relate, unrelates=params.unrelate,
                              expires=params.expire, names=names,
                              references=set(wr.config.reference_labels))
    return EventRequest(content=content, delta=delta, narrative_text=params.text,
                        timestamp=params.story_time, close_scene=params.close_scene,
                        diffuser=params.diffuser or default_name(wr), causes=list(params.causes),
                        render=params.render, accept=sorted(set(params.accept)), large=params.large)


def run_event(wr: WorldRepo, p: EventParams) -> EventResult:
    from narrative.diffusers.base import default_name, get_diffuser
    from narrative.engine import event as engine

    diffuser = get_diffuser(p.diffuser or default_name(wr), wr)
    with engine.names_then_event(wr, diffuser):
        request = request_from(wr, p)
        return engine.run_event(wr, request, dry_run=p.dry_run, diffuser=diffuser)


class RetryParams(Params):
    which: Annotated[str, Field(min_length=1, max_length=MAX_STRING)] = Field(
        "1", description="the failed event: its number (1: the newest) or the start of its key")
    dry_run: bool = Field(False, description="show what it would change; record nothing")
    diffuser: Short | None = Field(None, description="run it through this diffuser instead of its own")


class DropFailedParams(Params):
    which: Annotated[str, Field(min_length=1, max_length=MAX_STRING)] = Field(
        description="the failed event: its number (1: the newest) or the start of its key")


def run_retry(wr: WorldRepo, p: RetryParams) -> EventResult:
    from narrative.diffusers.base import get_diffuser
    from narrative.engine import event as engine

    chosen = get_diffuser(p.diffuser, wr) if p.diffuser else None
    return engine.retry(wr, p.which, dry_run=p.dry_run, diffuser=chosen)


def run_failed(wr: WorldRepo, p: Paged) -> FailedEvents:
    from narrative.engine.failed import listing

    return listing(wr)


def run_drop_failed(wr: WorldRepo, p: DropFailedParams) -> FailedDropped:
    from narrative.engine.failed import drop

    return drop(wr, p.which)


E = "narrative.engine"
EVENT = Operation(
    "event", "Record one event: its words, the changes spelt out, and what the diffuser adds "
    "(dry_run: only show them).",
    EventParams, run_event, f"{E}.event:EventResult", "POST", "/api/events", "event",
    writes=True, idempotent=False, positional=("content",),
    cli_only={"creates": "--create FILE: a node file, read into ops",
              "delta_file": "--delta FILE: a delta's ops (and text, story time...)",
              "at": "--at: the old spelling of --story-time",
              "retry": "--retry: the retry row, for the newest failed event"})
FAILED = Operation(
    "failed", "Events that could not be recorded, kept with their error; newest first.",
    Paged, run_failed, f"{E}.failed_answers:FailedEvents", "GET", "/api/failed", "failed")
RETRY = Operation(
    "retry", "Run a failed event again (1: the newest); it is forgotten once recorded.",
    RetryParams, run_retry, f"{E}.event:EventResult", "POST", "/api/failed/retry", "failed retry",
    writes=True, idempotent=False, positional=("which",))
DROP_FAILED = Operation(
    "drop_failed", "Forget a failed event for good (its words are answered one last time).",
    DropFailedParams, run_drop_failed, f"{E}.failed_answers:FailedDropped", "POST",
    "/api/failed/drop", "failed drop", writes=True, destructive=True, idempotent=False,
    positional=("which",))
ROWS = (EVENT, FAILED, RETRY, DROP_FAILED)
