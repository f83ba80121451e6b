"""The ``llm`` diffuser against a real HTTP server on loopback that speaks chat completions.

The server is scripted: each test lines up the answers it gives (good deltas,
invalid ones, slow ones, HTTP errors, refusals, garbage) and then checks what
narr sent, what it recorded, and that a failure changed nothing and kept the event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, edit_node, kept_events, read_node, snapshot
from llm_stubs import Answer, Stub, serving

from narrative.delta.request import EventRequest
from narrative.diffusers import chat
from narrative.diffusers.base import get_diffuser
from narrative.diffusers.chat import MAX_ATTEMPTS, bare_schema
from narrative.engine.event import EventResult, retry, run_event
from narrative.errors import DiffuserError, NarrError
from narrative.model import Delta
from narrative.store.worldrepo import WorldRepo

TIMEOUT = "0.3"  # for the tests of a server too slow; the others give it time, as a loaded machine needs
GOOD_OPS = [{"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "ferry"}]
GOOD = {"ops": GOOD_OPS}
MOVE = "Lin Yuan walks to the ferry"


def completion(content: str | None, *, finish: str = "stop", refusal: str | None = None) -> Answer:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    return Answer(body=json.dumps(body).encode())


def reply(obj: Any) -> Answer:
    return completion(json.dumps(obj, ensure_ascii=False))


def error(status: int, message: str) -> Answer:
    return Answer(status=status, body=json.dumps({"error": {"message": message}}).encode())


@pytest.fixture(autouse=True)
def no_user_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No NARR_* setting from the machine running the tests, and an empty config dir."""
    import os

    for key in list(os.environ):
        if key.startswith(("NARR_LLM_", "NARR_EXEC_")) or key == "NARR_CONFIG":
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    """A chat-completions server as OpenAI's API answers (no context told, no native endpoints)."""
    stub = Stub(dialect="openai", default=reply(GOOD))
    with serving(stub):
        monkeypatch.setattr(chat, "RETRY_WAIT", 0.0)  # retries at once: the tests stay fast
        monkeypatch.setenv("NARR_LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("NARR_LLM_MODEL", "test-model")
        monkeypatch.setenv("NARR_LLM_TIMEOUT", "5")
        yield stub


def event(root: Path, content: str = MOVE, **kwargs: Any) -> EventResult:
    wr = WorldRepo.open(root)
    try:
        request = EventRequest(content=content, diffuser="llm", **kwargs)
        return run_event(wr, request, diffuser=get_diffuser("llm", wr))
    finally:
        wr.close()


def failing_event(root: Path, content: str = MOVE, **kwargs: Any) -> NarrError:
    before = snapshot(root)
    with pytest.raises(NarrError) as info:
        event(root, content, **kwargs)
    assert snapshot(root) == before, "a failed event changed the world"
    return info.value


kept = kept_events


def retry_event(root: Path) -> EventResult:
    wr = WorldRepo.open(root)
    try:
        return retry(wr)
    finally:
        wr.close()


def assert_retry_succeeds(root: Path, fake: Stub) -> None:
    fake.script.clear()
    fake.default = reply(GOOD)
    result = retry_event(root)
    assert result.commit is not None and result.record.content == MOVE
    assert result.record.diffuser == "llm"
    assert read_node(root, "lin-yuan")["state"]["location"] == "ferry"
    assert kept(root) == []


# --- the good path -----------------------------------------------------------------------


def test_proposal_is_validated_and_recorded(world: Path, llm: Stub) -> None:
    result = event(world)
    assert result.record.diffuser == "llm"
    assert [d.model_dump(mode="json") for d in result.record.diffusions if d.target == "lin-yuan"] == [
        {"target": "lin-yuan", "field": "/state/location", "old_value": "qingyun-gate", "new_value": "ferry"}]
    assert read_node(world, "lin-yuan")["state"]["location"] == "ferry"
    assert result.proposal is not None
    assert result.proposal.notes == ["test-model proposed 1 operation(s)"]

    [request] = llm.requests
    assert request["path"] == "/v1/chat/completions"
    assert "Authorization" not in request["headers"]
    body = request["json"]
    assert body["model"] == "test-model" and body["stream"] is False
    assert body["max_tokens"] == 512  # always bounded
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == bare_schema(
        Delta.model_json_schema(mode="validation"))
    system, user = body["messages"]
    assert system["role"] == "system"
    assert '"title":"narr delta"' not in system["content"]  # the server holds the reply to it
    assert '{"op":"set","target":ID,"field":"/state/KEY","value":V}' in system["content"]
    sent = json.loads(user["content"])
    assert sent["event"] == MOVE
    assert list(sent["named"]) == ["lin-yuan", "ferry"]
    assert sent["named"]["lin-yuan"]["state"]["location"] == "qingyun-gate"
    assert sent["nearby"]["qingyun-gate"] == {"name": "Qingyun Gate", "layer": "background",
                                              "kind": "place", "state": {"guarded": True}}


def test_the_prompt_carries_the_brief_for_the_event(flat_world: Path, llm: Stub) -> None:
    """The model works from the pack narr brief gives for the event's words, hand edits first."""
    from narrative.diffusers.llm import BRIEF_BUDGET
    from narrative.engine.brief import brief

    edit_node(flat_world, "black-ring", warmth="warm")
    wr = WorldRepo.open(flat_world)
    try:
        expected = [(i["section"], i["text"], i.get("node"))
                    for i in brief(wr, MOVE, budget=BRIEF_BUDGET, include_failed=False).items]
    finally:
        wr.close()
    llm.answer(completion("not json"), completion("still not json"))
    failing_event(flat_world)  # the kept event does not keep the brief: it is derived
    assert "brief" not in json.loads(
        next((flat_world / ".git" / "narr" / "failed").glob("*.json")).read_text())["request"]
    event(flat_world)
    sent = json.loads(llm.bodies[-1]["messages"][1]["content"])
    shown = {*sent["named"], *sent["nearby"]}
    # the brief's items, less those about nodes the prompt shows whole, hand edits first
    assert sent["brief"] == [f"{section}: {text}" for section, text, node in expected
                             if section == "hand edits"] + [
        f"{section}: {text}" for section, text, node in expected
        if section in ("continuity", "open threads") and node not in shown]
    assert sent["brief"][0] == 'hand edits: black-ring /state/warmth: "cold" → "warm"'
    assert ("open threads: The Search for Xue (missing-sister): open; payoff: Lin Yuan finds Xue "
            "beneath the Library Pavilion") in sent["brief"]
    assert "continuity: Lin Yuan holds Black Ring, Xue's Letter" not in sent["brief"]  # shown
    assert sent["named"]["lin-yuan"]["relations"]["holds"] == ["black-ring", "sister-letter"]
    assert '"brief": what must stay consistent' in llm.bodies[-1]["messages"][0]["content"]


def test_explicit_changes_are_shown_to_the_model_and_win(flat_world: Path, llm: Stub) -> None:
    llm.answer(reply({"ops": [*GOOD_OPS, {"op": "set", "target": "lin-yuan", "field": "/state/mood",
                                          "value": "hopeful"}]}))
    explicit = Delta.model_validate({"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/mood",
                                              "value": "grim"}]})
    event(flat_world, delta=explicit)
    sent = json.loads(llm.bodies[0]["messages"][1]["content"])
    assert sent["explicit_changes"] == [{"op": "set", "target": "lin-yuan", "field": "/state/mood",
                                         "value": "grim"}]
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "grim"


def test_api_key_comes_from_the_variable_named(flat_world: Path, llm: Stub,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_API_KEY_ENV", "MY_LLM_KEY")
    exc = failing_event(flat_world)
    assert isinstance(exc, DiffuserError)
    assert exc.message == "the API key variable MY_LLM_KEY is not set"
    assert llm.requests == []
    monkeypatch.setenv("MY_LLM_KEY", "sekrit")
    retry_event(flat_world)
    assert llm.requests[0]["headers"]["Authorization"] == "Bearer sekrit"


def test_reply_wrapped_in_fences_and_thinking_is_read(flat_world: Path, llm: Stub) -> None:
    llm.answer(completion("<think>He wants the ferry.</think>\n```json\n" + json.dumps(GOOD) + "\n```"))
    event(flat_world)
    assert len(llm.requests) == 1
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"


def test_server_without_json_schema_steps_down_through_the_forms(flat_world: Path, llm: Stub) -> None:
    llm.answer(error(400, "response_format type json_schema is not supported"),
               error(400, "response_format: unknown field schema"),
               error(400, "unknown field response_format"))
    result = event(flat_world)
    forms = [(b.get("response_format", {}).get("type"), "schema" in b.get("response_format", {}))
             for b in llm.bodies]
    assert forms == [("json_schema", False), ("json_object", True), ("json_object", False),
                     (None, False)]  # Ollama's own form only where the server is Ollama
    assert "/api/chat" not in [r["path"] for r in llm.requests]
    assert result.proposal is not None
    assert "the server rejected response_format json_schema (HTTP 400); using json_object_schema" \
        in result.proposal.notes
    plain = "Answer with the bare JSON object"  # said once the server holds it to no schema
    assert [plain in b["messages"][0]["content"] for b in llm.bodies] == [False, False, True, True]
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"


def test_render_asks_for_narrative_text(flat_world: Path, llm: Stub) -> None:
    prose = "Rain followed Lin Yuan down to the water."
    llm.default = reply({**GOOD, "narrative_text": prose})
    assert event(flat_world).record.narrative_text is None  # not asked: the model's prose is dropped
    assert "Leave \"narrative_text\" null" in llm.bodies[0]["messages"][0]["content"]
    result = event(flat_world, "Lin Yuan waits at the ferry", render=True)
    assert result.record.narrative_text == prose
    assert 'in the language "en"' in llm.bodies[1]["messages"][0]["content"]


def test_causes_must_be_recent_events(flat_world: Path, llm: Stub) -> None:
    first = event(flat_world)
    llm.default = reply({"ops": [], "causes": [first.record.id, "made-up-event"]})
    result = event(flat_world, "Lin Yuan remembers the road")
    assert result.record.causes == [first.record.id]
    assert result.proposal is not None
    assert "dropped causes that are not recent events: made-up-event" in result.proposal.notes


# --- one repair attempt ------------------------------------------------------------------


@pytest.mark.parametrize(("first", "problem"), [
    (completion("Lin Yuan goes to the ferry."), "the reply is not JSON: Expecting value: line 1 column 1"),
    (reply({"ops": [{"op": "teleport", "target": "lin-yuan"}]}), "/ops/0: Input tag 'teleport'"),
    (reply({"ops": [{**GOOD_OPS[0], "target": "lin-yaun"}]}),
     "op 1 (set): no node 'lin-yaun' in the world"),
])
def test_invalid_reply_is_repaired_on_the_second_try(flat_world: Path, llm: Stub,
                                                     first: Answer, problem: str) -> None:
    llm.answer(first)
    result = event(flat_world)
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert len(llm.requests) == 2
    messages = llm.bodies[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == json.loads(first.body)["choices"][0]["message"]["content"]
    assert problem in messages[3]["content"]
    assert result.proposal is not None
    assert any("the model repaired it" in n for n in result.proposal.notes)


def test_still_invalid_after_repair_fails_cleanly_and_keeps_the_event(world: Path, llm: Stub) -> None:
    bad = json.dumps({"ops": [{**GOOD_OPS[0], "target": "lin-yaun"}]})
    llm.default = completion(bad)
    exc = failing_event(world)
    assert isinstance(exc, DiffuserError) and exc.exit_code == 18
    assert exc.message == ("the model's reply is not a valid delta, even after one repair attempt: "
                           "op 1 (set): no node 'lin-yaun' in the world")
    assert exc.details == ["first reply: op 1 (set): no node 'lin-yaun' in the world",
                           "repaired reply: op 1 (set): no node 'lin-yaun' in the world"]
    assert exc.hint is not None and "narr event --retry" in exc.hint
    assert len(llm.requests) == 2
    [item] = kept(world)
    assert item.request.content == MOVE and item.request.diffuser == "llm"
    assert item.raw_reply == f"{bad}\n\n--- the first reply, before the repair ---\n{bad}"
    assert item.error == exc.message
    assert_retry_succeeds(world, llm)


def test_garbage_twice_fails_as_not_json(flat_world: Path, llm: Stub) -> None:
    llm.answer(completion("Once upon a time."))
    llm.default = completion("Here is what happens: he walks.")
    exc = failing_event(flat_world)
    assert exc.message == ("the model's reply is not JSON, even after one repair attempt: "
                           "the reply is not JSON: Expecting value: line 1 column 1 (char 0)")
    assert kept(flat_world)[0].raw_reply == (
        "Here is what happens: he walks.\n\n--- the first reply, before the repair ---\n"
        "Once upon a time.")
    assert_retry_succeeds(flat_world, llm)


def test_empty_reply_twice(flat_world: Path, llm: Stub) -> None:
    llm.default = completion(None)
    exc = failing_event(flat_world)
    assert exc.message == "the model's reply is empty, even after one repair attempt: the reply is empty"


# --- failures that end the exchange at once ----------------------------------------------


def test_slow_server_times_out(flat_world: Path, llm: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_TIMEOUT", TIMEOUT)
    llm.answer(Answer(body=b"{}", delay=5))
    exc = failing_event(flat_world)
    assert isinstance(exc, DiffuserError)
    assert exc.message == f"the LLM server at {llm.base_url}/chat/completions did not answer within 0.3s"
    assert exc.hint is not None and "NARR_LLM_TIMEOUT" in exc.hint
    [item] = kept(flat_world)
    assert item.raw_reply is None and item.error == exc.message
    assert_retry_succeeds(flat_world, llm)


@pytest.mark.parametrize(("status", "message", "hint"), [
    (500, "the LLM server answered HTTP 500 Internal Server Error: model crashed",
     "the server failed; its own log may say why"),
    (401, "the LLM server answered HTTP 401 Unauthorized: model crashed",
     "the server wants a key: set [llm] api_key_env to the name of the variable holding it"),
    (404, "the LLM server answered HTTP 404 Not Found: model crashed",
     "check base_url (it usually ends in /v1) and the model name"),
    (429, "the LLM server answered HTTP 429 Too Many Requests: model crashed",
     "the server is rate limiting or out of quota; try again later"),
])
def test_http_errors(flat_world: Path, llm: Stub, status: int, message: str, hint: str) -> None:
    llm.default = error(status, "model crashed")
    exc = failing_event(flat_world)
    assert isinstance(exc, DiffuserError)
    assert exc.message == message
    assert exc.hint is not None and exc.hint.startswith(hint)
    assert len(llm.requests) == (MAX_ATTEMPTS if status in (429, 500) else 1)  # asked again
    assert kept(flat_world)[0].raw_reply == '{"error": {"message": "model crashed"}}'
    assert_retry_succeeds(flat_world, llm)


@pytest.mark.parametrize(("status", "reason"), [(400, "Bad Request"), (422, "Unprocessable Entity")])
def test_a_bad_request_not_about_the_format_fails_at_once(flat_world: Path, llm: Stub,
                                                          status: int, reason: str) -> None:
    llm.default = error(status, "model 'test-model' not found")
    exc = failing_event(flat_world)
    assert exc.message == f"the LLM server answered HTTP {status} {reason}: model 'test-model' not found"
    assert len(llm.requests) == 1


@pytest.mark.parametrize("message", [
    "litellm.UnsupportedParamsError: openai does not support parameters: ['response_format']",
    "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
    "Structured output is not supported by this backend",
    "JSON schema conversion failed: unsupported keyword",
])
def test_a_complaint_about_the_format_steps_down(flat_world: Path, llm: Stub, message: str) -> None:
    llm.answer(error(400, message))
    event(flat_world)
    assert [b.get("response_format", {}).get("type") for b in llm.bodies] == ["json_schema", "json_object"]


@pytest.mark.parametrize(("answer", "message"), [
    (completion(None, refusal="I can't help with that."), "the model refused: I can't help with that."),
    (completion("I'm sorry, but I cannot assist with that request."),
     "the model refused: I'm sorry, but I cannot assist with that request."),
    (completion("抱歉，我无法处理这个请求。"), "the model refused: 抱歉，我无法处理这个请求。"),
    (completion("", finish="content_filter"),
     "the model refused: (the server's content filter stopped the reply)"),
])
def test_refusal_is_not_retried(flat_world: Path, llm: Stub, answer: Answer, message: str) -> None:
    llm.answer(answer)
    exc = failing_event(flat_world)
    assert isinstance(exc, DiffuserError)
    assert exc.message == message
    assert len(llm.requests) == 1
    assert kept(flat_world)[0].raw_reply is not None
    assert_retry_succeeds(flat_world, llm)


@pytest.mark.parametrize(("answer", "message"), [
    (Answer(body=b"<html><body>Welcome to nginx!</body></html>", content_type="text/html"),
     "the LLM server's answer is not a chat completion: it is not JSON "
     "('<html><body>Welcome to nginx!</body></html>')"),
    (Answer(body=b'{"models": []}'), "the LLM server's answer is not a chat completion: it has no choices"),
    (Answer(body=b'{"choices": [{"text": "hi"}]}'),
     "the LLM server's answer is not a chat completion: its first choice has no message"),
    (Answer(body=b'{"error": "out of memory"}'), "the LLM server reported an error: out of memory"),
])
def test_garbage_from_the_server(flat_world: Path, llm: Stub, answer: Answer, message: str) -> None:
    llm.answer(answer)
    exc = failing_event(flat_world)
    assert isinstance(exc, DiffuserError)
    assert exc.message == message
    assert kept(flat_world)[0].raw_reply == answer.body.decode()
    assert_retry_succeeds(flat_world, llm)


def test_server_hangs_up(flat_world: Path, llm: Stub) -> None:
    llm.default = Answer(status=0)
    exc = failing_event(flat_world)
    assert exc.message == (f"the connection to the LLM server at {llm.base_url}/chat/completions broke: "
                           "Remote end closed connection without response")
    assert len(llm.requests) == MAX_ATTEMPTS
    assert_retry_succeeds(flat_world, llm)


def test_unreachable_server(flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("NARR_LLM_BASE_URL", f"http://127.0.0.1:{port}/v1")
    exc = failing_event(flat_world)
    assert exc.message == (f"cannot reach the LLM server at http://127.0.0.1:{port}/v1/chat/completions: "
                           "Connection refused")
    assert exc.hint is not None and "is the server running" in exc.hint


# --- configuration -----------------------------------------------------------------------


def test_not_configured_is_kept_until_configured(flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exc = failing_event(flat_world)
    assert isinstance(exc, DiffuserError)
    assert exc.message == "the llm diffuser has no server configured"
    assert exc.hint is not None and "NARR_LLM_BASE_URL" in exc.hint
    assert [k.request.content for k in kept(flat_world)] == [MOVE]


def test_user_config_file_is_used(flat_world: Path, llm: Stub, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("NARR_LLM_BASE_URL", "NARR_LLM_MODEL", "NARR_LLM_TIMEOUT"):
        monkeypatch.delenv(key)
    config = tmp_path / "user-config" / "narr" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[llm]\nbase_url = "{llm.base_url}"\nmodel = "from-file"\n'
                      'response_format = "json_object"\n', encoding="utf-8")
    event(flat_world)
    assert llm.bodies[0]["model"] == "from-file"
    assert llm.bodies[0]["response_format"] == {"type": "json_object"}


def test_world_cannot_configure_the_endpoint(flat_world: Path, llm: Stub,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A cloned world's narr.toml naming a server must not make narr send it anything."""
    monkeypatch.delenv("NARR_LLM_BASE_URL")
    monkeypatch.delenv("NARR_LLM_MODEL")
    toml = flat_world / "narr.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + (
        f'\n[llm]\nbase_url = "{llm.base_url}"\nmodel = "evil"\napi_key_env = "HOME"\n'
        f'[narr.llm]\nbase_url = "{llm.base_url}"\n'), encoding="utf-8")
    setting = f'[llm]\nbase_url = "{llm.base_url}"\n'
    (flat_world / "config.toml").write_text(setting, encoding="utf-8")
    (flat_world / ".narr").mkdir()
    (flat_world / ".narr" / "config.toml").write_text(setting, encoding="utf-8")
    monkeypatch.chdir(flat_world)
    exc = failing_event(flat_world)
    assert exc.message == "the llm diffuser has no server configured"
    assert llm.requests == []


# --- the command line --------------------------------------------------------------------


@pytest.mark.parametrize(("answers", "first_line"), [
    ([completion("no idea")] * 2,
     "the model's reply is not JSON, even after one repair attempt: "
     "the reply is not JSON: Expecting value: line 1 column 1 (char 0)"),
    ([reply({"ops": [{**GOOD_OPS[0], "target": "lin-yaun"}]})] * 2,
     "the model's reply is not a valid delta, even after one repair attempt: "
     "op 1 (set): no node 'lin-yaun' in the world"),
    ([Answer(body=b"{}", delay=5)], "the LLM server at {url}/chat/completions did not answer within 0.3s"),
    ([error(503, "loading model")] * MAX_ATTEMPTS,
     "the LLM server answered HTTP 503 Service Unavailable: loading model"),
    ([completion(None, refusal="No.")], "the model refused: No."),
    ([Answer(body=b"<html></html>")],
     "the LLM server's answer is not a chat completion: it is not JSON ('<html></html>')"),
])
def test_cli_failures_change_nothing_and_retry_works(flat_world: Path, llm: Stub,
                                                     answers: list[Answer], first_line: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    narr = CLI(flat_world)
    if any(a.delay for a in answers):
        monkeypatch.setenv("NARR_LLM_TIMEOUT", TIMEOUT)
    llm.answer(*answers)
    before = snapshot(flat_world)
    result = narr("event", "--diffuser", "llm", MOVE, expect=18)
    lines = result.stderr.splitlines()
    assert lines[0] == "narr: error: " + first_line.format(url=llm.base_url)
    assert lines[-1].startswith("hint: ") and lines[-1].endswith(
        "the event is kept: fix the problem and run narr event --retry")
    assert result.stdout == ""
    assert snapshot(flat_world) == before
    assert narr.json("event", "--retry", "--dry-run")["dry_run"] is True
    assert snapshot(flat_world) == before
    rec = narr.json("event", "--retry")
    assert rec["content"] == MOVE and rec["diffuser"] == "llm"
    assert {"target": "lin-yuan", "field": "/state/location", "old_value": "qingyun-gate",
            "new_value": "ferry"} in rec["diffusions"]
    narr("event", "--retry", expect=16)  # nothing left to retry


def test_cli_json_error_and_text_output(flat_world: Path, llm: Stub) -> None:
    narr = CLI(flat_world)
    llm.answer(*[error(500, "boom")] * MAX_ATTEMPTS)
    result = narr("event", "--diffuser", "llm", MOVE, "--json", expect=18)
    err = json.loads(result.stderr)
    assert err["type"] == "DiffuserError" and err["exit_code"] == 18
    assert err["error"] == "the LLM server answered HTTP 500 Internal Server Error: boom"
    out = narr("event", "--diffuser", "llm", "--render", "Lin Yuan waits").stdout
    assert "llm:\n  test-model proposed 1 operation(s)\n" in out
    system = llm.bodies[-1]["messages"][0]["content"]
    assert "Also write \"narrative_text\"" in system


def test_cli_not_configured(flat_world: Path) -> None:
    narr = CLI(flat_world)
    before = snapshot(flat_world)
    result = narr("event", "--diffuser", "llm", MOVE, expect=18)
    assert result.stderr.splitlines()[0] == "narr: error: the llm diffuser has no server configured"
    assert snapshot(flat_world) == before


# --- a server that misbehaves on purpose ---------------------------------------------------


def test_a_redirect_is_reported_and_never_followed_with_the_key(
        flat_world: Path, llm: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_API_KEY_ENV", "TEST_KEY")
    monkeypatch.setenv("TEST_KEY", "sk-secret")
    llm.answer(Answer(status=302, headers={"Location": f"{llm.base_url}/elsewhere"}))
    err = failing_event(flat_world)
    assert err.message.startswith("the LLM server answered HTTP 302")
    assert err.hint is not None and "does not follow redirects" in err.hint
    assert [r["path"] for r in llm.requests] == ["/v1/chat/completions"]  # no GET to elsewhere


def test_a_server_dripping_bytes_is_cut_off_at_the_timeout(flat_world: Path, llm: Stub,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_TIMEOUT", TIMEOUT)
    llm.answer(Answer(body=reply(GOOD).body, drip=0.05))  # each read is quick; the whole is not
    err = failing_event(flat_world)
    assert "did not answer within 0.3s" in err.message
    assert [k.request.content for k in kept(flat_world)] == [MOVE]


def test_a_huge_reply_is_refused(flat_world: Path, llm: Stub) -> None:
    from narrative.diffusers.chat import MAX_REPLY_BYTES

    llm.answer(Answer(body=b"x" * (MAX_REPLY_BYTES + 1)))
    err = failing_event(flat_world)
    assert "sent more than 8 MB" in err.message


# --- answers narr must not store altered ---------------------------------------------------


def test_an_answer_that_is_not_utf8_is_refused(flat_world: Path, llm: Stub) -> None:
    """Bytes that are not UTF-8 are refused, never turned into U+FFFD in the world."""
    body = reply({"ops": [{**GOOD_OPS[0], "value": "FERRY"}]}).body.replace(b"FERRY", b"\xff\xfe")
    llm.answer(Answer(body=body))
    err = failing_event(flat_world)
    at = body.index(b"\xff")
    assert err.message == f"the LLM server's answer is not UTF-8 text (byte {at})"
    [item] = kept(flat_world)
    assert item.raw_reply is not None and "\\xff\\xfe" in item.raw_reply
    assert "\ufffd" not in item.raw_reply
    assert_retry_succeeds(flat_world, llm)


# --- what strict structured-output backends accept ------------------------------------------


def _keywords(schema: Any, found: set[str]) -> set[str]:
    """Every keyword used in a JSON Schema, not counting the names of its properties."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            found.add(key)
            if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
                for sub in value.values():
                    _keywords(sub, found)
            else:
                _keywords(value, found)
    elif isinstance(schema, list):
        for sub in schema:
            _keywords(sub, found)
    return found


def test_the_schema_sent_as_response_format_has_no_title_or_description(flat_world: Path,
                                                                         llm: Stub) -> None:
    """outlines-core (vLLM's structured output) refuses ``title`` and ``description``."""
    event(flat_world)
    sent = llm.bodies[0]["response_format"]["json_schema"]["schema"]
    assert "title" not in json.dumps(sent) and "description" not in json.dumps(sent)
    full = Delta.model_json_schema(mode="validation")
    assert _keywords(full, set()) - _keywords(sent, set()) == {"title", "description"}


def test_bare_schema_keeps_properties_named_like_annotations() -> None:
    schema = {"title": "T", "type": "object", "properties": {
        "title": {"type": "string", "title": "Title", "default": "x"},
        "description": {"const": {"title": "data"}, "description": "d"}},
        "anyOf": [{"description": "a", "type": "object"}]}
    assert bare_schema(schema) == {"type": "object", "properties": {
        "title": {"type": "string", "default": "x"}, "description": {"const": {"title": "data"}}},
        "anyOf": [{"type": "object"}]}


def test_temperature_omit_sends_none(flat_world: Path, llm: Stub,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """o-series models reject any temperature, so it can be left out of the request."""
    event(flat_world)
    assert llm.bodies[0]["temperature"] == 0.2
    monkeypatch.setenv("NARR_LLM_TEMPERATURE", "omit")
    event(flat_world, "Lin Yuan waits at the ferry")
    assert "temperature" not in llm.bodies[1]


def test_an_op_on_traits_is_dropped_and_the_rest_kept(flat_world: Path, llm: Stub) -> None:
    """As for exec: the review drops the one bad operation with a note; no repair, no failure."""
    speech = read_node(flat_world, "lin-yuan")["traits"]["speech"]
    llm.answer(reply({"ops": [{"op": "set", "target": "lin-yuan", "field": "/traits/speech",
                               "value": "loud"}, *GOOD_OPS]}))
    result = event(flat_world)
    assert len(llm.requests) == 1
    node = read_node(flat_world, "lin-yuan")
    assert node["traits"]["speech"] == speech and node["state"]["location"] == "ferry"
    assert result.proposal is not None
    assert result.proposal.notes[1].startswith(
        "refused proposed op 1 (set lin-yuan /traits/speech): lin-yuan /traits/speech: traits are "
        "the node's baseline")


# --- credentials are sent, never shown or kept ----------------------------------------------

KEY = "sk-test-0123456789/abcdef"


def _kept_files(root: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in (root / ".git" / "narr" / "failed").glob("*.json"))


def _echo(status: int, authorization: str) -> Answer:
    """What a proxy that echoes the request's headers in its error might send."""
    return Answer(status=status, body=json.dumps({"error": {
        "message": f"invalid credentials: Authorization: {authorization}",
        "request": {"headers": {"authorization": authorization}}}}).encode())


def test_user_and_password_in_base_url_are_sent_as_basic_auth_and_never_shown(
        flat_world: Path, llm: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    host = llm.base_url.removeprefix("http://")
    monkeypatch.setenv("NARR_LLM_BASE_URL", f"http://narr%40user:pa55-w0rd@{host}")
    event(flat_world)
    token = base64.b64encode(b"narr@user:pa55-w0rd").decode()
    assert llm.requests[0]["headers"]["Authorization"] == f"Basic {token}"
    assert llm.requests[0]["path"] == "/v1/chat/completions"

    llm.default = _echo(400, f"Basic {token}")
    narr = CLI(flat_world)
    result = narr("event", "--diffuser", "llm", "Lin Yuan waits", expect=18)
    err = result.stderr
    assert err.splitlines()[0] == ("narr: error: the LLM server answered HTTP 400 Bad Request: "
                                   "invalid credentials: Authorization: Basic ***")
    kept_text = _kept_files(flat_world) + narr("failed", "--json").stdout
    for secret in ("pa55-w0rd", token, "narr@user:"):
        assert secret not in err and secret not in kept_text
    assert f"POST {llm.base_url}/chat/completions" in kept_text  # the address stays, without the password


def test_unreachable_server_with_credentials_in_the_url(flat_world: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("NARR_LLM_BASE_URL", f"http://me:hunter2-pw@127.0.0.1:{port}/v1")
    exc = failing_event(flat_world)
    assert exc.message == (f"cannot reach the LLM server at http://127.0.0.1:{port}/v1/chat/completions: "
                           "Connection refused")
    assert "hunter2-pw" not in _kept_files(flat_world)
    monkeypatch.setenv("NARR_LLM_BASE_URL", "ftp://me:hunter2-pw@example.invalid/v1")
    exc = failing_event(flat_world)
    assert exc.message == "the llm base_url 'ftp://example.invalid/v1' is not an http:// or https:// URL"


def test_a_server_echoing_the_key_does_not_get_it_shown_or_kept(
        flat_world: Path, llm: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_API_KEY_ENV", "TEST_KEY")
    monkeypatch.setenv("TEST_KEY", KEY)
    llm.default = _echo(401, f"Bearer {KEY}")
    exc = failing_event(flat_world)
    assert exc.message == ("the LLM server answered HTTP 401 Unauthorized: "
                           "invalid credentials: Authorization: Bearer ***")
    [item] = kept(flat_world)
    assert item.raw_reply is not None and "Bearer ***" in item.raw_reply
    assert "0123456789" not in _kept_files(flat_world)

    llm.default = completion(f"your key is {KEY}, I will not help")  # a model that echoes it
    exc = failing_event(flat_world)
    assert "0123456789" not in exc.message + " ".join(exc.details)
    assert "your key is ***" in (kept(flat_world)[0].raw_reply or "")
    assert "0123456789" not in _kept_files(flat_world)


# --- asking again after a rate limit, a failing server or a broken connection -----------------


@pytest.mark.parametrize("first", [
    error(429, "slow down"), error(502, "bad gateway"), error(503, "loading model"), Answer(status=0)])
def test_a_passing_failure_is_asked_again(flat_world: Path, llm: Stub, first: Answer) -> None:
    llm.answer(first)
    result = event(flat_world)
    assert len(llm.requests) == 2
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert result.proposal is not None
    what = f"HTTP {first.status}" if first.status else "a broken connection"
    assert f"asked the server again after {what} (waited 0.0s)" in result.proposal.notes


def test_a_format_complaint_in_a_5xx_steps_down_instead(flat_world: Path, llm: Stub) -> None:
    llm.answer(error(500, "grammar compilation failed for json_schema"))
    event(flat_world)
    assert [b.get("response_format", {}).get("type") for b in llm.bodies] == ["json_schema", "json_object"]


def test_retries_stay_within_the_timeout(flat_world: Path, llm: Stub,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A Retry-After longer than the time left is not waited for: the event fails at once."""
    import time

    llm.default = Answer(status=429, body=b'{"error": {"message": "quota"}}', headers={"Retry-After": "30"})
    start = time.monotonic()
    exc = failing_event(flat_world)
    assert time.monotonic() - start < 2
    assert len(llm.requests) == 1
    assert exc.hint is not None and exc.hint.endswith("(it asked to wait 30s); the event is kept: "
                                                      "fix the problem and run narr event --retry")
    monkeypatch.setattr(chat, "RETRY_WAIT", 10.0)  # a backoff past the deadline: no retry either
    llm.default = error(503, "busy")
    failing_event(flat_world)
    assert len(llm.requests) == 2


def test_retry_after_is_honoured(flat_world: Path, llm: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_TIMEOUT", "5")
    llm.answer(Answer(status=429, body=b"{}", headers={"Retry-After": "0.2"}))
    result = event(flat_world)
    assert len(llm.requests) == 2
    assert result.proposal is not None
    assert "asked the server again after HTTP 429 (waited 0.2s)" in result.proposal.notes


def test_retry_after_header_forms() -> None:
    from email.utils import format_datetime

    from narrative.diffusers.chat import retry_after

    assert retry_after("7") == 7 and retry_after(" 0 ") == 0 and retry_after("-3") == 0
    assert retry_after(None) is None and retry_after("soon") is None and retry_after("nan") is None
    assert retry_after("99999999") == 3600
    import datetime as dt

    later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=120)
    assert 100 < (retry_after(format_datetime(later, usegmt=True)) or 0) <= 120
