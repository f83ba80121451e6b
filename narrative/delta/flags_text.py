"""The ``narr event`` flags that make an operation: a change shown as the command that applies it.

``--set NODE/json/pointer=JSON`` names the field by its pointer and the value as JSON, so
the flags give back exactly the operation (a value that looks like a name stays text).
A node to create has no flag of its own: :func:`op_flags` gives ``[]`` for it.
"""

from __future__ import annotations

import json

from narrative.model import CreateOp, ExpireOp, Op, RelateOp, SetOp, UnrelateOp, UnsetOp


def op_flags(op: Op) -> list[str]:
    """The flags that make ``op`` (``[]`` for a node to create)."""
    if isinstance(op, SetOp):
        return ["--set", f"{op.target}{op.field}={json.dumps(op.value, ensure_ascii=False)}"]
    if isinstance(op, UnsetOp):
        return ["--unset", f"{op.target}{op.field}"]
    if isinstance(op, RelateOp):
        attrs = f"={json.dumps(op.attrs, ensure_ascii=False)}" if op.attrs else ""
        return ["--relate", f"{op.source}:{op.type}:{op.target}{attrs}"]
    if isinstance(op, UnrelateOp):
        return ["--unrelate", f"{op.source}:{op.type}:{op.target}"]
    if isinstance(op, ExpireOp):
        return ["--expire", op.target]
    assert isinstance(op, CreateOp)
    return []
