"""The published JSON Schemas under schemas/ are exactly what the models generate."""

from __future__ import annotations

from pathlib import Path

import pytest

from narrative.schemas import all_schemas, render

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_schema_file_matches_the_models(name: str) -> None:
    path = SCHEMAS / name
    assert path.is_file(), f"{name} is missing: run python -m narrative.schemas"
    assert path.read_text(encoding="utf-8") == render(all_schemas()[name]), (
        f"{name} is out of date: run python -m narrative.schemas")


def test_exec_protocol_schemas_are_published() -> None:
    assert {"exec-request.schema.json", "exec-response.schema.json"} <= set(all_schemas())
    response = all_schemas()["exec-response.schema.json"]
    assert [ref["$ref"] for ref in response["anyOf"]] == ["#/$defs/Delta", "#/$defs/ExecProposal"]


def test_the_readers_record_fields_follow_the_model() -> None:
    """Readers show records without pydantic; their field list must be the model's."""
    from narrative.model import EventRecord
    from narrative.store.records import RECORD_FIELDS

    assert list(RECORD_FIELDS) == list(EventRecord.model_fields)
    for name, info in EventRecord.model_fields.items():
        if not info.is_required():
            assert RECORD_FIELDS[name] == info.get_default(call_default_factory=True), name
