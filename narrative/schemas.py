"""Writes ``schemas/*.json`` from the models: ``python -m narrative.schemas [DIR]``.

A test compares the files with the models, so a change to a model that is not
followed by this command fails the suite.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

from narrative.model import json_schemas


def render(schema: dict[str, object]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def answer_types() -> dict[str, Any]:
    """Every answer's type by its name: each operation's (its row's ``answer``), those only the
    CLI gives, the studio's reads, and the error every transport gives."""
    from narrative.answer_models import ANSWERS, CLI_ANSWERS, STUDIO_ANSWERS
    from narrative.operations import OPERATIONS

    rows = {op.answer_name: op.answer for op in OPERATIONS}
    return {**ANSWERS, **rows, **CLI_ANSWERS, **STUDIO_ANSWERS}


def answer_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the answer called ``name``: its ``schema`` field the one value it has."""
    import copy

    return copy.deepcopy(_answer_schema(name))


@functools.cache
def _answer_schema(name: str) -> dict[str, Any]:
    """Made once per process: an MCP client lists the tools, with these, at every connection."""
    from pydantic import TypeAdapter

    from narrative.answers import schema as versioned

    schema = TypeAdapter(answer_types()[name]).json_schema(mode="validation")
    defs = schema.get("$defs", {})
    shapes = [defs[branch["$ref"].rsplit("/", 1)[1]] for branch in schema.get("anyOf", [])] or [schema]
    for shape in shapes:  # an answer of more than one shape (show: a record or a plain commit)
        shape["properties"] = {"schema": {"const": versioned(name), "type": "string"},
                               **shape["properties"]}
        shape["required"] = ["schema", *shape.get("required", [])]
    schema["type"] = "object"  # every answer is an object (an MCP tool's output schema must say so)
    schema["title"] = versioned(name)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://narr.invalid/schemas/answers/{name}.schema.json"
    return schema


def answer_schemas() -> dict[str, dict[str, Any]]:
    """Every answer's schema, keyed by its file name under ``schemas/``."""
    return {f"answers/{name}.schema.json": answer_schema(name) for name in answer_types()}


def all_schemas() -> dict[str, dict[str, object]]:
    """Every published schema: the data model's, the exec diffuser's protocol, the rule file,
    and each operation's answer (``answers/NAME.schema.json``)."""
    from narrative.diffusers.exec_protocol import json_schemas as exec_schemas
    from narrative.diffusers.rulefile import json_schema as rules_schema

    return {**json_schemas(), **exec_schemas(), "rules.schema.json": rules_schema(),
            **answer_schemas()}


def write(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in sorted(all_schemas().items()):
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(schema), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "schemas"
    for path in write(target):
        print(path)
