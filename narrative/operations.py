"""The world's operations as data: what each takes (a pydantic model), what it answers, and
whether it writes.

The HTTP API (:mod:`narrative.serve.http`), the MCP server (:mod:`narrative.serve.mcp`) and the
OpenAPI document are generated from :data:`narrative.api.OPERATIONS`, a table of the
:class:`Operation` values defined here, so the three can never disagree on an argument's name or
type. Arguments are validated strictly (a boolean is a JSON boolean, a count a JSON integer; an
unknown argument is refused) and every violation is an :class:`~narrative.errors.InvalidInputError`
naming the field. Every answer is a JSON object whose ``"schema"`` field names its shape and
version (``"narr.brief/1"``): a change of shape bumps the number, so an agent can tell which shape
it got. A list is answered as ``{"schema": ..., "items": [...]}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from narrative.answers import Answer, answer
from narrative.errors import InvalidInputError, validation_error
from narrative.model import Op

if TYPE_CHECKING:
    from narrative.engine.audit import AuditReport
    from narrative.engine.branches import Branches
    from narrative.engine.brief import Brief
    from narrative.engine.chains import Chains
    from narrative.engine.event import EventResult, RevertResult
    from narrative.engine.history_of import NodeHistory
    from narrative.engine.log import LogEntries, Shown
    from narrative.engine.nodes import EditedNodeFile, NodeFile, NodeList
    from narrative.engine.replay import ReplayResult
    from narrative.engine.reset import ResetResult
    from narrative.engine.search import SearchResult
    from narrative.engine.status import Status
    from narrative.engine.threads import Threads
    from narrative.engine.why import WhyResult
    from narrative.store import WorldRepo

MAX_CONTENT = 256 * 1024
"""Characters in an event's words or text given through an operation (the CLI's own limit aside)."""
MAX_STRING = 4096
"""Characters in a name, revision, query or field argument: none is longer in a real world."""

_Short = Annotated[str, Field(max_length=MAX_STRING)]
_Node = Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                             description="a node's id, name or alias")]
_Rev = Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                            description="a revision: an event id, a commit, HEAD~N, a branch")]
_At = Annotated[str | None, Field(max_length=MAX_STRING,
                                  description="read the world as it was at this revision")]


class Params(BaseModel):
    """Arguments of an operation: strict JSON types, no unknown field."""

    model_config = ConfigDict(extra="forbid", strict=True)


class NoParams(Params):
    pass


class ListNodesParams(Params):
    layer: _Short | None = Field(None, description="only the nodes of this layer")


class GetNodeParams(Params):
    node: _Node
    at: _At = None


class LogParams(Params):
    n: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(None, description="at most this many events")
    rev: _Rev = "HEAD"


class ShowParams(Params):
    rev: _Rev


class WhyParams(Params):
    node: _Node
    field: Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                                description="state.location or /state/location")]
    at: _At = None


class HistoryParams(Params):
    node: _Node
    at: _At = None


class SearchParams(Params):
    q: Annotated[str, Field(min_length=1, max_length=MAX_STRING, description="words to look for")]
    limit: Annotated[int, Field(ge=1, le=10_000)] = 20


class BriefParams(Params):
    goal: _Short | None = Field(None, description="what the next event is about")
    focus: Annotated[list[_Node], Field(max_length=100)] = Field(
        default_factory=list, description="nodes the brief must include")
    pov: _Node | None = Field(None, description="only what this character knows")
    budget: Annotated[int, Field(ge=1, le=1_000_000)] = Field(4000, description="tokens, about")
    at: _At = None


class ThreadsParams(Params):
    all: bool = Field(False, description="resolved threads too")
    at: _At = None


class EventParams(Params):
    content: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT, description="what happens")]
    ops: Annotated[list[Op], Field(max_length=10_000)] = Field(
        default_factory=list, description="changes spelt out (the delta's ops)")
    diffuser: _Short | None = Field(
        None, description="rules, llm, exec, none; the world's default if left out")
    dry_run: bool = Field(False, description="show what would change, record nothing")
    at: _Short | None = Field(None, description="the story time of the event")
    text: Annotated[str, Field(max_length=MAX_CONTENT)] | None = Field(
        None, description="the narrative text the event is told in")
    close_scene: bool = False


class ResetParams(Params):
    rev: _Rev | None = None
    before: _Node | None = Field(None, description="back to just before this node was created")
    keep_edits: bool = False
    hard: bool = False


class RevertParams(Params):
    rev: _Rev
    content: Annotated[str, Field(max_length=MAX_CONTENT)] | None = None


class ReplayParams(Params):
    chain: Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                                description="the chain's number or name (narr chains)")]
    reuse: bool = Field(False, description="reuse the recorded deltas instead of diffusing again")
    diffuser: _Short | None = None
    again: bool = Field(False, description="replay every event, even those the story holds an "
                                           "earlier replay of (told twice)")


class AuditParams(Params):
    text: Annotated[str, Field(min_length=1, max_length=1_000_000, description="the chapter")]
    at: _At = None


class EditNodeParams(Params):
    node: _Node
    file: dict[str, Any] = Field(description="the node, as in its file")


@dataclass(frozen=True)
class Operation:
    """One thing a program can ask of a world.

    ``schema`` names the answer's shape (``narr.NAME/VERSION``); ``writes`` sends it to the
    world's one writer; ``destructive`` (moves or drops story a user wrote) and ``idempotent``
    are what an MCP client is told so it can ask its user first. ``method`` and ``path`` place it
    in the HTTP API; fields of ``params`` named in the path are taken from it, the rest from the
    query (a read) or the JSON body (a write); ``body`` names the one field a write's whole body
    fills instead (a hand edit's node).
    """

    name: str
    summary: str
    params: type[Params]
    run: Callable[[WorldRepo, Any], Any]
    schema: str
    method: str
    path: str
    answer: Any = None  # the answer's class (or a union of classes: show)
    writes: bool = False
    destructive: bool = False
    idempotent: bool = True
    body: str | None = None

    def parse(self, arguments: Mapping[str, Any] | None, source: str = "the arguments",
              lax: bool = False) -> Params:
        """The arguments validated, or one :class:`InvalidInputError` naming the field.
        ``lax``: from a query string, where numbers and booleans arrive as text."""
        return parse_params(self.params, arguments, source=source, lax=lax)

    def call(self, wr: WorldRepo, params: Params) -> dict[str, Any]:
        """Run on an open world: the versioned answer."""
        found = self.run(wr, params)
        if isinstance(found, Answer):
            return found.answer()
        return answer(self.schema, found)


def parse_params(model: type[Params], arguments: Mapping[str, Any] | None, *, source: str,
                 lax: bool = False) -> Params:
    from narrative.nodefile import MAX_DEPTH, json_problem

    data = dict(arguments or {})
    problem = json_problem(data, MAX_DEPTH + 8)
    if problem:
        raise InvalidInputError(f"{source}: {problem}")
    try:
        return model.model_validate(data, strict=not lax)
    except ValidationError as exc:
        raise validation_error(exc, source) from None


# --- the calls ----------------------------------------------------------------------------------

def node_id(wr: WorldRepo, text: str, *, must_exist: bool = False, context: str | None = None) -> str:
    """The id of the node ``text`` names (its id, a name or an alias), as the CLI takes it."""
    from narrative.engine.naming import Names

    return Names(wr).resolve(text, must_exist=must_exist, context=context)


def run_status(wr: WorldRepo, p: NoParams) -> Status:
    from narrative.engine.status import status

    return status(wr)


def run_list_nodes(wr: WorldRepo, p: ListNodesParams) -> NodeList:
    from narrative.engine.nodes import list_nodes

    return list_nodes(wr, p.layer)


def run_get_node(wr: WorldRepo, p: GetNodeParams) -> NodeFile:
    from narrative.engine.nodes import get_node_file

    return get_node_file(wr, node_id(wr, p.node), p.at)


def run_log(wr: WorldRepo, p: LogParams) -> LogEntries:
    from narrative.engine.log import log_entries

    return log_entries(wr, p.rev, p.n, node=False)


def run_show(wr: WorldRepo, p: ShowParams) -> Shown:
    from narrative.engine.log import show_answer

    return show_answer(wr, p.rev)


def run_branches(wr: WorldRepo, p: NoParams) -> Branches:
    from narrative.engine.branches import list_branches

    return list_branches(wr)


def run_chains(wr: WorldRepo, p: NoParams) -> Chains:
    from narrative.engine.chains import list_chains

    return list_chains(wr)


def run_why(wr: WorldRepo, p: WhyParams) -> WhyResult:
    from narrative.engine.why import why

    return why(wr, node_id(wr, p.node), p.field, p.at)


def run_history(wr: WorldRepo, p: HistoryParams) -> NodeHistory:
    from narrative.engine.history_of import history_of

    return history_of(wr, node_id(wr, p.node), p.at)


def run_search(wr: WorldRepo, p: SearchParams) -> SearchResult:
    from narrative.engine.search import search

    return search(wr, p.q, p.limit)


def run_brief(wr: WorldRepo, p: BriefParams) -> Brief:
    from narrative.engine.brief import brief

    focus = [node_id(wr, f, must_exist=True, context="focus") for f in p.focus]
    pov = node_id(wr, p.pov, must_exist=True, context="pov") if p.pov is not None else None
    return brief(wr, p.goal, focus, p.budget, pov, at=p.at)


def run_threads(wr: WorldRepo, p: ThreadsParams) -> Threads:
    from narrative.engine.threads import threads

    return threads(wr, p.at, include_resolved=p.all)


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


def run_reset(wr: WorldRepo, p: ResetParams) -> ResetResult:
    from narrative.engine.reset import reset

    return reset(wr, p.rev, before=p.before, keep_edits=p.keep_edits, hard=p.hard)


def run_revert(wr: WorldRepo, p: RevertParams) -> RevertResult:
    from narrative.engine.revert import revert

    return revert(wr, p.rev, content=p.content)


def run_replay(wr: WorldRepo, p: ReplayParams) -> ReplayResult:
    from narrative.engine.replay import replay

    return replay(wr, p.chain, reuse=p.reuse, diffuser_name=p.diffuser, again=p.again)


def run_audit(wr: WorldRepo, p: AuditParams) -> AuditReport:
    from narrative.engine.audit import audit

    return audit(wr, p.text, p.at)


def run_edit_node(wr: WorldRepo, p: EditNodeParams) -> EditedNodeFile:
    from narrative.engine.handedit import write_hand_edit
    from narrative.engine.nodes import EditedNodeFile

    edit = write_hand_edit(wr, p.file, node_id=p.node)
    return EditedNodeFile.model_validate({"path": edit.path, "node": edit.node})


# --- the operations table -----------------------------------------------------------------------
# One row per thing a program can ask of a world: the HTTP API, the MCP tools and the OpenAPI
# document are generated from it.

def _operations() -> tuple[Operation, ...]:
    from narrative.answers import schema, schema_name
    from narrative.engine.audit import AuditReport
    from narrative.engine.branches import Branches
    from narrative.engine.brief import Brief
    from narrative.engine.chains import Chains
    from narrative.engine.event import EventResult, RevertResult
    from narrative.engine.history_of import NodeHistory
    from narrative.engine.log import LogEntries, Shown
    from narrative.engine.nodes import EditedNodeFile, NodeFile, NodeList
    from narrative.engine.replay import ReplayResult
    from narrative.engine.reset import ResetResult
    from narrative.engine.search import SearchResult
    from narrative.engine.status import Status
    from narrative.engine.threads import Threads
    from narrative.engine.why import WhyResult

    def op(name: str, summary: str, params: type[Params], run: Any, method: str, path: str,
           **kw: Any) -> Operation:
        """The answer's version is its class's (a test holds the shapes)."""
        kind = kw.get("answer")
        return Operation(name=name, summary=summary, params=params, run=run,
                         schema=schema_name(kind) if kind is not None else schema(name),
                         method=method, path=path, **kw)

    write = {"writes": True, "idempotent": False}
    return (
        op("status", "Where the story stands: branch, last event, hand edits not yet recorded.",
           NoParams, run_status, "GET", "/api/status", answer=Status),
        op("list_nodes", "Every node of the world (hand edits included), sorted by id.",
           ListNodesParams, run_list_nodes, "GET", "/api/nodes", answer=NodeList),
        op("get_node", "One node as its file holds it, now or at a revision.",
           GetNodeParams, run_get_node, "GET", "/api/nodes/{node}", answer=NodeFile),
        op("log", "Events newest first along the story line from rev.",
           LogParams, run_log, "GET", "/api/log", answer=LogEntries),
        op("show", "One event: its words, its changes and what caused them.",
           ShowParams, run_show, "GET", "/api/show/{rev}", answer=Shown),
        op("branches", "The story's branches and which one is current.",
           NoParams, run_branches, "GET", "/api/branches", answer=Branches),
        op("chains", "Abandoned chains of events (left by reset), which replay can bring back.",
           NoParams, run_chains, "GET", "/api/chains", answer=Chains),
        op("why", "Why a node's field holds its value: the events that set it and their causes.",
           WhyParams, run_why, "GET", "/api/why/{node}", answer=WhyResult),
        op("history", "What happened to a node, oldest first.",
           HistoryParams, run_history, "GET", "/api/history/{node}", answer=NodeHistory),
        op("search", "Nodes and events whose words match the query.",
           SearchParams, run_search, "GET", "/api/search", answer=SearchResult),
        op("brief", "The pack of world state to write or play the next event from.",
           BriefParams, run_brief, "GET", "/api/brief", answer=Brief),
        op("threads", "Open story threads, stalest first, with what each waits for.",
           ThreadsParams, run_threads, "GET", "/api/threads", answer=Threads),
        op("audit", "The actions in a chapter that the world contradicts; writes nothing.",
           AuditParams, run_audit, "POST", "/api/audit", answer=AuditReport),
        op("event", "Record one event: its words, the changes spelt out, and what the diffuser adds "
           "(dry_run: only show them).", EventParams, run_event, "POST", "/api/events", **write,
           answer=EventResult),
        op("reset", "Move the story back to rev (or to just before a node was made); the undone "
           "events stay as a chain for replay.", ResetParams, run_reset, "POST", "/api/reset",
           writes=True, destructive=True, idempotent=False, answer=ResetResult),
        op("revert", "Record an event that undoes an earlier one.",
           RevertParams, run_revert, "POST", "/api/revert", **write, answer=RevertResult),
        op("replay", "Run an abandoned chain again on top of the story.",
           ReplayParams, run_replay, "POST", "/api/replay", **write, answer=ReplayResult),
        op("edit_node", "Write a node's file as a hand edit (validated first); the next event "
           "records it.", EditNodeParams, run_edit_node, "PUT", "/api/nodes/{node}",
           writes=True, destructive=True, idempotent=True, body="file", answer=EditedNodeFile),
    )


OPERATIONS: tuple[Operation, ...] = _operations()
"""Every operation a program can ask of a world, in the order the API documents them."""
