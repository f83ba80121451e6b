"""Writes ``schemas/*.json`` from the models: ``python -m narrative.schemas [DIR]``.

A test compares the files with the models, so a change to a model that is not
followed by this command fails the suite.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from narrative.model import json_schemas


def render(schema: dict[str, object]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def all_schemas() -> dict[str, dict[str, object]]:
    """Every published schema: the data model's, the exec diffuser's protocol, the rule file,
    and each operation's answer (``answers/NAME.schema.json``)."""
    from narrative.answer_models import json_schemas as answer_schemas
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
