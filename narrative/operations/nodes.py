"""Rows that make and change nodes by hand: the edits the next event records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from narrative.operations import NodeName, Operation, Params

if TYPE_CHECKING:
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


E = "narrative.engine"
ROWS = (
    Operation("edit_node", "Write a node's file as a hand edit (validated first); the next event "
              "records it.", EditNodeParams, run_edit_node, f"{E}.nodes:EditedNodeFile", "PUT",
              "/api/nodes/{node}", "edit", writes=True, destructive=True, idempotent=True,
              body="file", positional=("node", "file")),
)
