"""Rows that read the story and the world: where it stands, the nodes, the events, why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from narrative.operations import (
    MAX_STRING,
    At,
    NodeName,
    NoParams,
    Operation,
    Paged,
    Params,
    Rev,
    Short,
    node_id,
)

if TYPE_CHECKING:
    from narrative.answer_models import GetValueAnswer, PathAnswer
    from narrative.engine.audit import AuditReport
    from narrative.engine.brief import Brief
    from narrative.engine.history_of import NodeHistory
    from narrative.engine.log import LogEntries, Shown
    from narrative.engine.nodes import NodeFile, NodeList
    from narrative.engine.search import SearchResult
    from narrative.engine.status import Status
    from narrative.engine.threads import Threads
    from narrative.engine.why import WhyResult
    from narrative.store import WorldRepo


class ListNodesParams(Paged):
    layer: Short | None = Field(None, description="only the nodes of this layer")


class GetNodeParams(Params):
    node: NodeName
    at: At = None


Named = Annotated[str, Field(description="a node's id, name or alias")]
"""A node named where the command line has always taken any text: an empty or a very long one
names no node (not found), as a name nobody has does; the request's own size bounds it."""


class GetValueParams(Params):
    node: Named
    field: Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                                description="state.location or /state/location")]
    at: At = None


class PathParams(Params):
    node: Named
    layer: Literal["character", "item", "ambient", "background"] | None = Field(
        None, description="for a node that does not exist yet: the layer it will live in")


class LogParams(Paged):
    rev: Rev = Field("HEAD", description="where the line starts (a revision, or A..B)")
    n: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(None, description="at most this many events")


class ShowParams(Params):
    rev: Rev = "HEAD"


class WhyParams(Params):
    node: NodeName
    field: Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                                description="state.location or /state/location")]
    at: At = None


class HistoryParams(Params):
    node: NodeName
    at: At = None


class SearchParams(Params):
    q: Annotated[str, Field(min_length=1, max_length=MAX_STRING, description="words to look for")]
    limit: Annotated[int, Field(ge=1, le=10_000)] = 20


class BriefParams(Params):
    goal: Short | None = Field(None, description="what the next event is about")
    focus: Annotated[list[NodeName], Field(max_length=100)] = Field(
        default_factory=list, description="nodes the brief must include")
    pov: NodeName | None = Field(None, description="only what this character knows")
    budget: Annotated[int, Field(ge=1, le=1_000_000)] = Field(4000, description="tokens, about")
    at: At = None


class ThreadsParams(Params):
    all: bool = Field(False, description="resolved threads too")
    at: At = None


class AuditParams(Params):
    text: Annotated[str, Field(min_length=1, max_length=1_000_000, description="the chapter")]
    at: At = None
    budget: Annotated[float, Field(gt=0, le=3600)] | None = Field(
        None, description="seconds the audit may take (default 120)")


def run_status(wr: WorldRepo, p: NoParams) -> Status:
    from narrative.engine.status import status

    return status(wr)


def run_list_nodes(wr: WorldRepo, p: ListNodesParams) -> NodeList:
    from narrative.engine.nodes import list_nodes

    return list_nodes(wr, p.layer)


def run_get_node(wr: WorldRepo, p: GetNodeParams) -> NodeFile:
    from narrative.engine.nodes import get_node_file

    return get_node_file(wr, node_id(wr, p.node), p.at)


def run_get_value(wr: WorldRepo, p: GetValueParams) -> GetValueAnswer:
    from narrative.answer_models import GetValueAnswer
    from narrative.engine.nodes import get_value

    node = node_id(wr, p.node)
    return GetValueAnswer(node=node, field=p.field, value=get_value(wr, node, p.field, p.at))


def run_path(wr: WorldRepo, p: PathParams) -> PathAnswer:
    """Where a node's file is, or would be: a node that has ended has no file to be found."""
    from narrative.answer_models import PathAnswer
    from narrative.engine.naming import Names
    from narrative.engine.nodes import node_file_path

    node = Names(wr).resolve(p.node, must_exist=False, ended=False)
    return PathAnswer(id=node, path=node_file_path(wr, node, p.layer))


def run_log(wr: WorldRepo, p: LogParams) -> LogEntries:
    from narrative.engine.log import log_entries

    return log_entries(wr, p.rev, p.n, node=False)


def run_show(wr: WorldRepo, p: ShowParams) -> Shown:
    from narrative.engine.log import show_answer

    return show_answer(wr, p.rev)


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


def run_audit(wr: WorldRepo, p: AuditParams) -> AuditReport:
    from narrative.engine.audit import audit
    from narrative.engine.deadline import DEFAULT_BUDGET

    return audit(wr, p.text, p.at, budget=p.budget or DEFAULT_BUDGET)


E = "narrative.engine"
GET_VALUE = Operation(
    "get_value", "One field's value of a node, now or at a revision.",
    GetValueParams, run_get_value, "narrative.answer_models:GetValueAnswer", "GET",
    "/api/nodes/{node}/value", "get", positional=("node", "field"))
PATH = Operation(
    "path", "The path of a node's file, relative to the world's root (where a new node's would "
    "go, given its layer).",
    PathParams, run_path, "narrative.answer_models:PathAnswer", "GET", "/api/nodes/{node}/path",
    "path", positional=("node",))
ROWS = (
    Operation("status", "Where the story stands: branch, last event, hand edits not yet recorded.",
              NoParams, run_status, f"{E}.status:Status", "GET", "/api/status", "status"),
    Operation("list_nodes", "Every node of the world (hand edits included), sorted by id.",
              ListNodesParams, run_list_nodes, f"{E}.nodes:NodeList", "GET", "/api/nodes", "nodes"),
    Operation("get_node", "One node as its file holds it, now or at a revision.",
              GetNodeParams, run_get_node, f"{E}.nodes:NodeFile", "GET", "/api/nodes/{node}", "get",
              positional=("node",)),
    GET_VALUE,
    PATH,
    Operation("log", "Events newest first along the story line from rev.",
              LogParams, run_log, f"{E}.log:LogEntries", "GET", "/api/log", "log",
              positional=("rev",),
              cli_only={"as_node": "--node: REV read as a node, the events that touched it",
                        "chapters": "--chapters: the chapters instead (the answer chapters)"}),
    Operation("show", "One event: its words, its changes and what caused them.",
              ShowParams, run_show, f"{E}.log:ShownEvent | {E}.log:ShownCommit", "GET",
              "/api/show/{rev}", "show", positional=("rev",)),
    Operation("why", "Why a node's field holds its value: the events that set it and their causes.",
              WhyParams, run_why, f"{E}.why:WhyResult", "GET", "/api/why/{node}", "why",
              positional=("node", "field")),
    Operation("history", "What happened to a node, oldest first.",
              HistoryParams, run_history, f"{E}.history_of:NodeHistory", "GET",
              "/api/history/{node}", "history", positional=("node",)),
    Operation("search", "Nodes and events whose words match the query.",
              SearchParams, run_search, f"{E}.search:SearchResult", "GET", "/api/search", "search",
              positional=("q",)),
    Operation("brief", "The pack of world state to write or play the next event from.",
              BriefParams, run_brief, f"{E}.brief:Brief", "GET", "/api/brief", "brief",
              positional=("goal",), cli_only={"fmt": "--format: how the pack prints"}),
    Operation("threads", "Open story threads, stalest first, with what each waits for.",
              ThreadsParams, run_threads, f"{E}.threads:Threads", "GET", "/api/threads", "threads"),
    Operation("audit", "The actions in a chapter that the world contradicts; writes nothing.",
              AuditParams, run_audit, f"{E}.audit:AuditReport", "POST", "/api/audit", "audit",
              positional=("text",), cli_only={"file": "FILE: the chapter, read into text"}),
)
