"""Delta operations name themselves: no ``op=`` in Python, ``op`` still required in JSON."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from narrative.errors import InvalidInputError
from narrative.model import (
    CreateOp,
    Delta,
    ExpireOp,
    Node,
    RelateOp,
    SetOp,
    UnrelateOp,
    UnsetOp,
    json_schemas,
)


def test_each_op_knows_its_name() -> None:
    ops = [SetOp(target="a", field="/state/x", value=1), UnsetOp(target="a", field="/state/x"),
           RelateOp(source="a", type="knows", target="b"),
           UnrelateOp(source="a", type="knows", target="b"),
           CreateOp(node=Node.model_validate({"id": "c", "name": "C", "layer": "item"})),
           ExpireOp(target="a")]
    assert [op.op for op in ops] == ["set", "unset", "relate", "unrelate", "create", "expire"]
    back = Delta.model_validate_json(Delta(ops=ops).model_dump_json())
    assert back.ops == ops  # the name is written, so the delta reads back the same


def test_json_must_still_say_which_op() -> None:
    with pytest.raises(ValidationError):
        Delta.model_validate({"ops": [{"target": "a", "field": "/state/x", "value": 1}]})
    with pytest.raises(InvalidInputError, match=r"^SetOp: /op: Input should be 'set'"):
        SetOp(op="unset", target="a", field="/state/x", value=1)  # type: ignore[arg-type]
    schema = json_schemas()["delta.schema.json"]
    for name, definition in schema["$defs"].items():
        if name.endswith("Op"):
            assert definition["required"][0] == "op" and "default" not in definition[
                "properties"]["op"], name
