"""The ``exec`` diffuser's protocol: what a program reads on stdin and may print on stdout.

These models exist so the protocol is a published contract
(``schemas/exec-request.schema.json``, ``schemas/exec-response.schema.json``)
rather than whatever the code happens to send; a test checks that the request
narr really sends validates against them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from narrative.model import Change, Delta, Node, NodeId, RelationType

PROTOCOL_VERSION: Literal[1] = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorldInfo(_Strict):
    name: str
    language: str


class Mention(_Strict):
    """A span of the event text (``content[start:end]``, in characters) naming one or more nodes."""

    start: int
    end: int
    text: str
    ids: list[NodeId]


class Edge(_Strict):
    source: NodeId
    type: RelationType
    target: NodeId


class RecentEvent(_Strict):
    id: str
    content: str
    timestamp: str | None
    diffusions: list[Change]


class ExecRequest(_Strict):
    """Written as one JSON document to the program's standard input (UTF-8)."""

    model_config = ConfigDict(title="narr exec request")

    protocol: Literal[1] = Field(default=PROTOCOL_VERSION, description="Protocol version.")
    content: str = Field(description="The event, as the user wrote it.")
    timestamp: str | None = Field(description="Story time given with the event, if any.")
    render: bool = Field(default=False, description="Whether the user asked for narrative text.")
    world: WorldInfo
    mentions: list[Mention] = Field(description="Nodes the text names, by name or alias, in order.")
    nodes: dict[NodeId, Node] = Field(
        description="The named nodes and their graph neighbourhood, by id, as the world holds them now."
    )
    edges: list[Edge] = Field(description="Relations among those nodes.")
    recent_events: list[RecentEvent] = Field(description="The last few events, newest first.")
    explicit: Delta = Field(
        description="The user's own changes for this event; they are applied after the program's."
    )


class ExecProposal(_Strict):
    """The long form of an answer: a delta plus what a reader of the decision needs."""

    model_config = ConfigDict(title="narr exec proposal")

    delta: Delta = Field(default_factory=Delta)
    narrative_text: str | None = None
    causes: list[str] = Field(default_factory=list, description="Ids of earlier events.")
    notes: list[str] = Field(default_factory=list, description="Shown to the user with the event.")


ExecResponse = Annotated[
    Delta | ExecProposal,
    Field(title="narr exec response",
          description="Printed as one JSON document on standard output: a bare delta, or a "
                      "proposal object with a \"delta\" key."),
]


def json_schemas() -> dict[str, dict[str, Any]]:
    """The protocol's JSON Schemas, keyed by file name under ``schemas/``."""
    out: dict[str, dict[str, Any]] = {}
    for name, schema in (
        ("exec-request", ExecRequest.model_json_schema(mode="validation")),
        ("exec-response", TypeAdapter(ExecResponse).json_schema(mode="validation")),
    ):
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = f"https://narr.invalid/schemas/{name}.schema.json"
        out[f"{name}.schema.json"] = schema
    return out
