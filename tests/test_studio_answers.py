"""The studio's reads answer typed JSON as the rest of the API does: each carries its
``"schema": "narr.studio_X/N"``, is valid against ``schemas/answers/studio_X.schema.json`` (closed:
no key it does not name) and against the OpenAPI document's 200 answer for its route, in a world
with hand edits, a problem, set-aside edits and a merge stopped on a conflict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, check_answer, edit_node
from test_http_api import client

STUDIO_READS = {  # route in the OpenAPI document: a request the page makes
    "/api/graph/world": ["/api/graph/world", "/api/graph/world?around=lin-yuan&depth=2",
                         "/api/graph/world?q=lin&layer=character&limit=2&draw=1",
                         "/api/graph/world?group=place&expand=place:ferry&draw=3"],
    "/api/graph/events": ["/api/graph/events"],
    "/api/studio/lines": ["/api/studio/lines"],
    "/api/studio/diffusers": ["/api/studio/diffusers"],
    "/api/studio/node/{node_id}": ["/api/studio/node/lin-yuan", "/api/studio/node/black-ring?at=HEAD~1"],
    "/api/studio/names": ["/api/studio/names?id=lin-yuan,su-qing,nobody,schema"],
    "/api/studio/problems": ["/api/studio/problems"],
    "/api/studio/where": ["/api/studio/where"],
    "/api/studio/manuscript": ["/api/studio/manuscript", "/api/studio/manuscript?limit=1"],
    "/api/studio/mentions/{node_id}": ["/api/studio/mentions/lin-yuan", "/api/studio/mentions/林远"],
}


def _validator(doc: dict[str, Any], path: str) -> Any:
    import jsonschema
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    registry = Registry().with_resource("urn:narr-openapi", DRAFT202012.create_resource(doc))
    ref = doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    return jsonschema.Draft202012Validator({"$ref": "urn:narr-openapi" + ref["$ref"]}, registry=registry)


def test_every_studio_read_answers_its_typed_schema(flat_world: Path) -> None:
    from narrative.serve.http import openapi

    root = flat_world
    narr = CLI(root)
    narr("branch", "alt")
    narr("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.mood=calm",
         "--diffuser", "explicit")
    narr("switch", "alt")
    narr("event", "Lin Yuan sulks", "--set", "lin-yuan.state.mood=sullen", "--diffuser", "explicit")
    narr("switch", "main")
    edit_node(root, "su-qing", mood="wary")
    narr("switch", "alt", "--set-aside")  # the hand edit kept aside
    narr("switch", "main")
    narr("merge", "alt", expect=14)  # stops on the mood both lines set
    edit_node(root, "elder-mo", relations={"knows": {"nobody-at-all": {}}})  # a relation to nothing
    doc = openapi()
    http = client(root)
    seen = set()
    for route, requests in STUDIO_READS.items():
        validator = _validator(doc, route)
        for request in requests:
            answer = http.get(request)
            assert answer.status_code == 200, (request, answer.text)
            body = answer.json()
            check_answer(body)
            validator.validate(body)
            seen.add(body["schema"])
    from narrative.answer_models import STUDIO_ANSWERS
    from narrative.answers import schema

    assert seen == {schema(name) for name in STUDIO_ANSWERS}
    lines = http.get("/api/studio/lines").json()
    assert lines["merge"] is not None and lines["set_aside"]
    assert [p["node"] for p in http.get("/api/studio/problems").json()["problems"]] == ["elder-mo"]
    names = http.get("/api/studio/names?id=lin-yuan,nobody,schema").json()
    assert set(names["names"]) == {"lin-yuan"}  # the ids that are nodes, under their own key


def test_a_studio_answer_with_a_key_its_schema_does_not_name_is_refused(flat_world: Path) -> None:
    answer = client(flat_world).get("/api/graph/world").json()
    check_answer(answer)
    with pytest.raises(AssertionError, match="Additional properties"):
        check_answer({**answer, "graph": {**answer["graph"], "layout": "ring"}})
    row = answer["nodes"][0]
    with pytest.raises(AssertionError, match="Additional properties"):
        check_answer({**answer, "nodes": [{**row, "colour": "red"}]})
    assert json.loads(json.dumps(answer))["schema"] == "narr.studio_world/2"
