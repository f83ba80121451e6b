"""Rows that make and change nodes by hand: the edits the next event records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from narrative.operations import MAX_STRING, NodeName, Operation, Params, Short

if TYPE_CHECKING:
    from narrative.answer_models import NewAnswer
    from narrative.engine.nodes import EditedNodeFile
    from narrative.store import WorldRepo


class EditNodeParams(Params):
    node: NodeName
    file: dict[str, Any] = Field(description="the node, as in its file")


def run_edit_node(wr: WorldRepo, p: EditNodeParams) -> EditedNodeFile:
    from narrative.engine.handedit import write_hand_edit
    from narrative.engine.nodes import EditedNodeFile

    edit = write_hand_edit(wr, p.file, node_id=p.node)
    return EditedNodeFile.model_validate({"path": edit.path, "node": edit.node})


class NewNodeParams(Params):
    layer: Literal["character", "item", "ambient", "background"] = Field(description="the node's layer")
    name: Annotated[str, Field(max_length=MAX_STRING, description="its name")]
    kind: Short = Field("", description="what it is within its layer: place, weapon, secret, sect ...")
    aliases: Annotated[list[Short], Field(max_length=1000)] = Field(
        default_factory=list, description="other names it goes by")
    lifecycle: Literal["permanent", "scene", "event"] = Field(
        "permanent", description="how long it lasts: for good, to the scene's end, for one event")
    summary: Annotated[str, Field(max_length=MAX_STRING)] = Field("", description="one line about it")
    force: bool = Field(False, description=(
        "make it even when its id is taken by a node of the same words (it gets -2)"))
    pronouns: Short | None = Field(None, description=(
        "a character's pronouns (she, he, they, it): what \"he\", \"her\" and 他 bind by"))


def run_new_node(wr: WorldRepo, p: NewNodeParams) -> NewAnswer:
    from narrative.answer_models import NewAnswer
    from narrative.engine.new import new_node

    made = new_node(wr, p.layer, p.name, kind=p.kind, aliases=list(p.aliases),
                    lifecycle=p.lifecycle, summary=p.summary, force=p.force, pronouns=p.pronouns)
    return NewAnswer.model_validate(made.to_json())


E = "narrative.engine"
NEW_NODE = Operation(
    "new_node", "Make a node as a hand edit, its id made from its name (the next event records "
    "it); a name the world already uses is refused.", NewNodeParams, run_new_node,
    "narrative.answer_models:NewAnswer", "POST", "/api/nodes", "new", writes=True,
    idempotent=False, positional=("layer", "name"))
ROWS = (
    Operation("edit_node", "Write a node's file as a hand edit (validated first); the next event "
              "records it.", EditNodeParams, run_edit_node, f"{E}.nodes:EditedNodeFile", "PUT",
              "/api/nodes/{node}", "edit", writes=True, destructive=True, idempotent=True,
              body="file", positional=("node", "file"),
              cli_only={"node_id": "NODE: the node the editor opens",
                        "layer": "--layer: where a node not yet made goes"}),
    NEW_NODE,
)
