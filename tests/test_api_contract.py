"""The one table of operations: the HTTP API and its OpenAPI document are generated from it,
every request is validated by the operation's model (a wrong type is a 400 naming the field,
nothing written), bodies are capped (413), and an error's HTTP status says whose fault it was."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, HTTP, snapshot

import narrative as narr
from narrative.serve.http import MAX_BODY, openapi


@pytest.fixture
def story(flat_world: Path) -> Path:
    CLI(flat_world)("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.mood=calm")
    return flat_world


def test_the_openapi_document_validates_and_types_every_route() -> None:
    from openapi_spec_validator import validate

    doc = openapi()
    validate(doc)  # raises on an unresolved parameter, a bad $ref, a malformed schema
    served = [op for op in narr.OPERATIONS if op.served]  # init and clone: no world to serve
    routes = {(op.method.lower(), op.path) for op in served}
    assert routes <= {(m, p) for p, ops in doc["paths"].items() for m in ops}
    for op in served:
        entry = doc["paths"][op.path][op.method.lower()]
        answer = entry["responses"]["200"]["content"]["application/json"]["schema"]
        typed = doc["components"]["schemas"][answer["$ref"].rsplit("/", 1)[1]]
        assert typed["title"] == op.schema and "#/$defs/" not in json.dumps(typed)
        if op.method == "GET":
            assert "requestBody" not in entry
            typed = {p["name"]: p["schema"] for p in entry.get("parameters", [])}
            assert set(typed) >= set(op.params.model_fields)
        else:
            body = entry["requestBody"]["content"]["application/json"]["schema"]
            assert body.get("$ref") or body.get("properties"), op.name
    event = doc["components"]["schemas"]["EventParams"]
    assert event["properties"]["dry_run"]["type"] == "boolean"
    assert event["additionalProperties"] is False and event["required"] == ["content"]


def test_the_openapi_document_types_each_answer_as_its_published_schema(story: Path) -> None:
    """A client generated from the document reads the answers the server gives: each real answer
    is valid against its 200 schema there, and a key that schema does not name is refused."""
    import jsonschema
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    doc = openapi()
    registry = Registry().with_resource("urn:narr-openapi", DRAFT202012.create_resource(doc))

    def validator(path: str, method: str = "get", status: str = "200") -> Any:
        ref = doc["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]
        return jsonschema.Draft202012Validator({"$ref": "urn:narr-openapi" + ref["$ref"]},
                                               registry=registry)

    http = HTTP(story)
    answers = [("/api/status", "get", http.get("/api/status")),
               ("/api/show/{rev}", "get", http.get("/api/show/HEAD")),
               ("/api/log", "get", http.get("/api/log")),
               ("/api/why/{node}", "get", http.get("/api/why/lin-yuan?field=state.mood")),
               ("/api/events", "post",
                http.post("/api/events", json={"content": "Dusk", "diffuser": "none"}))]
    for path, method, response in answers:
        assert response.status_code == 200, response.text
        validator(path, method).validate(response.json())
    status = http.get("/api/status").json()
    with pytest.raises(jsonschema.ValidationError, match="Additional properties"):
        validator("/api/status").validate({**status, "mood": "new key"})
    missing = http.get("/api/nodes/nobody")
    assert missing.status_code == 404
    validator("/api/nodes/{node}", "get", "404").validate(missing.json())
    with pytest.raises(jsonschema.ValidationError):
        validator("/api/nodes/{node}", "get", "404").validate({**missing.json(), "extra": 1})


# Each write route, with bodies a careless or hostile client sends, and the field the error names.
BAD_BODIES = [
    ("/api/events", {"content": "x", "at": 123}, "/at"),
    ("/api/events", {"content": "x", "text": ["a"]}, "/text"),
    ("/api/events", {"content": "x", "dry_run": "false"}, "/dry_run"),
    ("/api/events", {"content": "x", "close_scene": 1}, "/close_scene"),
    ("/api/events", {"content": 5}, "/content"),
    ("/api/events", {"content": "x", "colour": "red"}, "/colour: unknown field"),
    ("/api/events", {"content": "x", "ops": [{"op": "set", "target": "lin-yuan"}]}, "/ops/0"),
    ("/api/events", {"ops": []}, "/content"),
    ("/api/reset", {"rev": ["HEAD"]}, "/rev"),
    ("/api/reset", {"rev": "HEAD", "hard": "false"}, "/hard"),
    ("/api/reset", {"rev": "HEAD", "keep_edits": "yes"}, "/keep_edits"),
    ("/api/revert", {}, "/rev"),
    ("/api/revert", {"rev": 3}, "/rev"),
    ("/api/replay", {"chain": 1}, "/chain"),
    ("/api/replay", {"chain": "1", "reuse": "true"}, "/reuse"),
    ("/api/audit", {"text": None}, "/text"),
]


@pytest.mark.parametrize(("path", "body", "named"), BAD_BODIES)
def test_a_badly_typed_body_is_a_400_naming_the_field(story: Path, path: str, body: Any,
                                                      named: str) -> None:
    before = snapshot(story)
    response = HTTP(story).post(path, json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert (error["schema"], error["type"], error["exit_code"]) == ("narr.error/1", "InvalidInputError", 12)
    assert error["error"].startswith("the request body: ") and named in error["error"], error
    assert snapshot(story) == before


def test_a_hand_edit_that_is_not_an_object_is_refused(story: Path) -> None:
    before = snapshot(story)
    answer = HTTP(story).put("/api/nodes/lin-yuan", content=b"[1, 2]")
    assert answer.status_code == 400 and "/file" in answer.json()["error"]
    assert snapshot(story) == before


def test_query_arguments_are_typed_too(story: Path) -> None:
    http = HTTP(story)
    for path, named in (("/api/log?n=lots", "/n"), ("/api/search?q=ring&limit=0", "/limit"),
                        ("/api/brief?budget=-5", "/budget"), ("/api/status?verbose=1", "/verbose"),
                        ("/api/log?n=99999999999999999999", "/n")):
        answer = http.get(path)
        assert answer.status_code == 400, (path, answer.text)
        assert answer.json()["error"].startswith(f"the query: {named}"), answer.json()
    assert http.get("/api/log?n=1").json()["schema"] == "narr.log/2"


def test_a_body_over_the_cap_is_a_413_and_not_read(story: Path) -> None:
    before = snapshot(story)
    big = json.dumps({"content": "x" * (MAX_BODY + 10)}).encode()
    answer = HTTP(story).post("/api/events", content=big)
    assert answer.status_code == 413 and answer.json()["type"] == "BodyTooLargeError"
    # sent in pieces without a length: counted as it arrives
    answer = asyncio.run(HTTP(story).request(
        "POST", "/api/events", [b'{"content": "', b"y" * (MAX_BODY // 2)] * 3))
    assert answer.status_code == 413
    assert snapshot(story) == before


def test_error_statuses_say_whose_fault_it_was(story: Path, monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    http = HTTP(story)
    # a diffuser that fails is not the caller's fault: 502, with the error as the CLI gives it
    prog = tmp_path / "broken.py"
    prog.write_text("import sys\nsys.stdout.write('not json')\n", encoding="utf-8")
    monkeypatch.setenv("NARR_EXEC_COMMAND", f"{sys.executable} {prog}")
    before = snapshot(story)
    answer = http.post("/api/events", json={"content": "Lin Yuan rests", "diffuser": "exec"})
    assert (answer.status_code, answer.json()["type"]) == (502, "DiffuserError"), answer.text
    # a bug of ours is a 500 whose body carries no traceback; the log has it
    from narrative.engine import status as status_module

    def broken(wr: Any) -> Any:
        raise RuntimeError("the secret internals")

    monkeypatch.setattr(status_module, "status", broken)
    answer = http.get("/api/status")
    assert answer.status_code == 500 and answer.json()["type"] == "InternalError"
    assert "secret" not in answer.text and "Traceback" not in answer.text
    assert any("secret internals" in str(r.exc_info) for r in caplog.records)
    assert snapshot(story) == before


def test_every_error_kind_has_a_status_of_its_kind() -> None:
    from narrative import errors

    assert errors.NotFoundError("x").http_status == 404
    assert errors.InvalidInputError("x").http_status == 400
    assert errors.BusyError("x").http_status == 423
    assert errors.DiffuserError("x").http_status == 502
    assert errors.StorageError("x").http_status == 507
    assert errors.RepositoryDamagedError("x").http_status == 500
    for cls in (errors.NarrError, *errors.NarrError.__subclasses__()):
        assert 400 <= cls("x").http_status < 600
    assert errors.NotFoundError("gone", hint="h").to_json() == {
        "schema": "narr.error/1", "error": "gone", "type": "NotFoundError", "exit_code": 11,
        "details": [], "hint": "h"}


def test_a_hand_edit_goes_through_the_library(story: Path) -> None:
    node = json.loads((story / "world/character/lin-yuan.json").read_text("utf-8"))
    node["state"]["mood"] = "curious"
    answer = HTTP(story).put("/api/nodes/lin-yuan", content=json.dumps(node).encode())
    assert answer.status_code == 200 and answer.json()["schema"] == "narr.edit_node/1"
    assert CLI(story).json("get", "lin-yuan", "state.mood")["value"] == "curious"
    assert [e["target"] for e in CLI(story).json("status")["edits"]] == ["lin-yuan"]


class _SlowWriter:
    """A server whose writer thread is busy until told to go on."""

    def __init__(self, root: Path) -> None:
        import threading

        self.root = root
        self.started = threading.Event()
        self.go_on = threading.Event()

    def submit(self, work: Any) -> Any:
        self.started.set()
        assert self.go_on.wait(30), "the write was never let through"
        return work()


def test_reads_answer_while_a_write_waits(story: Path) -> None:
    """A write waiting for the writer never holds up the event loop: a read sent after it
    answers while it still waits (before, the write blocked the loop and the read with it)."""
    server = _SlowWriter(story)
    http = HTTP(story, server=server)

    async def call(method: str, path: str, body: bytes) -> int:
        return (await http.request(method, path, body)).status_code

    async def main() -> tuple[int, int, bool]:
        write = asyncio.create_task(call("POST", "/api/events", json.dumps({
            "content": "Lin Yuan waits", "ops": [{"op": "set", "target": "lin-yuan",
                                                  "field": "/state/mood", "value": "patient"}]}).encode()))
        while not server.started.is_set():
            await asyncio.sleep(0.01)
        read = await asyncio.wait_for(call("GET", "/api/status", b""), 30)
        still_waiting = not write.done()
        server.go_on.set()
        return read, await write, still_waiting

    read, write, still_waiting = asyncio.run(main())
    assert (read, write, still_waiting) == (200, 200, True)


def test_the_studios_own_writes_read_bodies_as_every_route_does(story: Path) -> None:
    """A studio write's body is capped as the table's routes' are (413, nothing written) and a
    body that is not JSON is a 400 naming it, never a traceback."""
    before = snapshot(story)
    http = HTTP(story)
    huge = json.dumps({"node": "lin-yuan", "type": "x" * (MAX_BODY + 10), "target": "su-qing"}).encode()
    answer = http.post("/api/studio/relation", content=huge)
    assert answer.status_code == 413 and answer.json()["type"] == "BodyTooLargeError"
    answer = http.put("/api/studio/save/lin-yuan", content=huge)
    assert answer.status_code == 413 and answer.json()["type"] == "BodyTooLargeError"
    answer = http.post("/api/studio/relation", content=b"{not json")
    assert answer.status_code == 400 and answer.json()["type"] == "InvalidInputError"
    assert snapshot(story) == before
