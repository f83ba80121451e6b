"""Every operation's answer keeps the shape its version names: the keys of each answer (and of
a list's items), and a digest of its typed model's JSON Schema (every key, optional ones too, and
its type), are recorded in tests/data/answer_shapes.json beside the ``schema`` they carry. A change
of shape fails here until the answer's version is bumped in narrative/answers.py and the file
rewritten (``WRITE_ANSWER_SHAPES=1``), so an agent is never handed a new shape silently. The typed
answers only the CLI gives (CLI_ANSWERS) and the studio's reads (STUDIO_ANSWERS) are held to their
model's digest."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import narrative as narr

SHAPES = Path(__file__).resolve().parent / "data" / "answer_shapes.json"


def _digest(schema: Any) -> str:
    """The schema's shape only: words (titles, descriptions) and the order of keys and of
    required names are not shape, so rewording a docstring or reordering a model's fields
    leaves the digest alone."""

    def canonical(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: sorted(value) if key == "required" else canonical(value)
                    for key, value in node.items() if key not in ("title", "description")}
        if isinstance(node, list):
            return [canonical(item) for item in node]
        return node

    text = json.dumps(canonical(schema), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _shape(answer: dict[str, Any]) -> dict[str, Any]:
    shape: dict[str, Any] = {"keys": sorted(answer)}
    items = answer.get("items")
    if isinstance(items, list) and items and isinstance(items[0], dict):
        shape["item_keys"] = sorted(items[0])
    return shape


def test_every_answer_keeps_the_shape_its_version_names(tmp_path: Path) -> None:
    narr.init_world(tmp_path / "w", sample=True)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("status", {}), ("list_nodes", {}), ("get_node", {"node": "lin-yuan"}),
        ("event", {"content": "Lin Yuan walks to the ferry", "dry_run": True, "ops": [
            {"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "ferry"}]}),
        ("event", {"content": "Lin Yuan walks to the ferry", "diffuser": "rules"}),
        ("event", {"content": "Dusk", "ops": [{"op": "set", "target": "lin-yuan", "field": "state.mood",
                                               "value": "wary"}]}),
        ("log", {"n": 2}), ("show", {"rev": "HEAD"}), ("branches", {}),
        ("why", {"node": "lin-yuan", "field": "state.mood"}), ("history", {"node": "lin-yuan"}),
        ("search", {"q": "ring"}), ("brief", {"goal": "the ferry"}), ("threads", {}),
        ("audit", {"text": "Lin Yuan walks to the gate."}),
        ("chapter", {"text": "Lin Yuan walks to the gate.", "dry_run": True}),
        ("chapter", {"text": "Su Qing walks to the ferry.", "accept": "all"}),
        ("revert", {"rev": "HEAD"}), ("reset", {"rev": "HEAD~1"}), ("chains", {}),
        ("replay", {"chain": "1", "reuse": True}),
        ("event", {"content": "Nobody moves", "diffuser": "explicit", "ops": [
            {"op": "set", "target": "nobody", "field": "/state/mood", "value": "x"}]}),
        ("failed", {}), ("drop_failed", {"which": "1"}),
    ]
    node = json.loads((tmp_path / "w/world/character/lin-yuan.json").read_text("utf-8"))
    shapes: dict[str, Any] = {}
    with narr.open_world(tmp_path / "w") as world:
        for name, args in calls:
            op = narr.operation(name)
            try:
                answer = op.call(world, op.parse(args))
            except narr.InvalidInputError:
                assert args["content"] == "Nobody moves"  # kept as a failed event, for the next
                continue
            assert answer["schema"] == op.schema
            shapes.setdefault(op.schema, _shape(answer))
        edit = narr.operation("edit_node")
        shapes[edit.schema] = _shape(edit.call(world, edit.parse({"node": "lin-yuan", "file": node})))
    from narrative.schemas import answer_schema

    for op in narr.OPERATIONS:  # the others' answers are held by the contract test
        shapes.setdefault(op.schema, {})["model"] = _digest(answer_schema(op.answer_name))
    from narrative.answer_models import CLI_ANSWERS, STUDIO_ANSWERS
    from narrative.answers import schema as versioned

    for name in {**CLI_ANSWERS, **STUDIO_ANSWERS}:  # the CLI's own and the studio's: their model's digest
        shapes[versioned(name)] = {"model": _digest(answer_schema(name))}
    if os.environ.get("WRITE_ANSWER_SHAPES"):
        SHAPES.write_text(json.dumps(shapes, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    recorded = json.loads(SHAPES.read_text("utf-8"))
    assert set(recorded) == set(shapes), f"rewrite {SHAPES.name} (WRITE_ANSWER_SHAPES=1)"
    for schema, shape in shapes.items():
        assert recorded.get(schema) == shape, (
            f"the answer of {schema} changed shape: bump its version in narrative/answers.py "
            f"and rewrite {SHAPES.name} (WRITE_ANSWER_SHAPES=1)")
