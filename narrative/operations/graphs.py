"""Rows of the graphs: the world graph and the event graph as text a drawing tool reads, their
sizes, and the chains of relations between two nodes.

A graph answers its data (dot, mermaid, graphml, or networkx's node-link JSON, as text) through
every door: drawing it (``dot -Tsvg``) is left to the caller's own tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from narrative.operations import MAX_STRING, At, NodeName, NoParams, Operation, Params, node_id

if TYPE_CHECKING:
    from narrative.answer_models import ConnectAnswer, GraphAnswer, GraphSizesAnswer
    from narrative.store import WorldRepo

Format = Literal["dot", "mermaid", "graphml", "json"]
Depth = Annotated[int, Field(ge=0, le=1000, description="with around: how many steps away to keep")]


class WorldGraphParams(Params):
    format: Format = "dot"
    around: NodeName | None = Field(None, description="only the nodes near this one")
    depth: Depth = 1
    at: At = None


class EventGraphParams(Params):
    format: Format = "dot"
    around: Annotated[str, Field(min_length=1, max_length=MAX_STRING)] | None = Field(
        None, description="only the events causally near this one (a revision)")
    depth: Depth = 1


class ConnectParams(Params):
    source: NodeName
    target: NodeName


def run_world_graph(wr: WorldRepo, p: WorldGraphParams) -> GraphAnswer:
    from narrative.answer_models import GraphAnswer
    from narrative.engine.graphs import export_graph

    around = None
    if p.around is not None:  # a node that has ended is near others at an earlier revision
        around = node_id(wr, p.around, must_exist=p.at is None, context="around")
    return GraphAnswer.model_validate(
        export_graph(wr, "world", p.format, around, p.depth, p.at).to_json())


def run_event_graph(wr: WorldRepo, p: EventGraphParams) -> GraphAnswer:
    from narrative.answer_models import GraphAnswer
    from narrative.engine.graphs import export_graph

    return GraphAnswer.model_validate(
        export_graph(wr, "events", p.format, p.around, p.depth).to_json())


def run_graph_sizes(wr: WorldRepo, p: NoParams) -> GraphSizesAnswer:
    from narrative.answer_models import GraphSizesAnswer
    from narrative.engine.graphs import sizes

    return GraphSizesAnswer.model_validate(sizes(wr))


def run_connect(wr: WorldRepo, p: ConnectParams) -> ConnectAnswer:
    from narrative.answer_models import ConnectAnswer
    from narrative.engine.graphs import connect

    return ConnectAnswer.model_validate(
        connect(wr, node_id(wr, p.source, must_exist=True),
                node_id(wr, p.target, must_exist=True)).to_json())


A = "narrative.answer_models"
WORLD_GRAPH = Operation(
    "world_graph", "The world graph (nodes, their relations and reference fields) as dot, "
    "mermaid, graphml or node-link JSON text, now or at a revision.",
    WorldGraphParams, run_world_graph, f"{A}:GraphAnswer", "GET", "/api/graphs/world",
    "graph world")
EVENT_GRAPH = Operation(
    "event_graph", "The event graph of the story line (which event depends on which) as dot, "
    "mermaid, graphml or node-link JSON text.",
    EventGraphParams, run_event_graph, f"{A}:GraphAnswer", "GET", "/api/graphs/events",
    "graph events")
GRAPH_SIZES = Operation(
    "graph_sizes", "How many nodes and edges the world graph and the event graph hold.",
    NoParams, run_graph_sizes, f"{A}:GraphSizesAnswer", "GET", "/api/graphs", "graph",
    cli_only={"format": "--format: the world graph in this format (as graph world)",
              "around": "--around: the world graph near this node (as graph world)",
              "depth": "--depth: with --around (as graph world)",
              "at": "--at: the world graph at a revision (as graph world)"})
CONNECT = Operation(
    "connect", "The shortest chains of relations between two nodes, either way round.",
    ConnectParams, run_connect, f"{A}:ConnectAnswer", "GET",
    "/api/graphs/connect/{source}/{target}", "graph connect", positional=("source", "target"))
ROWS = (WORLD_GRAPH, EVENT_GRAPH, GRAPH_SIZES, CONNECT)
