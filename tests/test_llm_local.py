"""The ``llm`` diffuser against local servers: a prompt that fits, replies that are bounded,
values that are checked, and no lock held while a model thinks.

Every server is a stub on loopback speaking one dialect as its documentation describes it
(:mod:`llm_stubs`): OpenAI's API, llama.cpp's ``llama-server``, llama-cpp-python, Ollama,
LM Studio and vLLM. No model runs: the stubs answer what each test lines up.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, edit_node, kept_events, read_node, snapshot
from llm_stubs import GOOD, Answer, Stub, reply, serving

from narrative.delta.request import EventRequest
from narrative.diffusers import chat, servers
from narrative.diffusers.base import get_diffuser
from narrative.diffusers.tokens import estimate_messages
from narrative.engine.doctor import doctor
from narrative.engine.event import EventResult, run_event
from narrative.errors import ConflictError, DiffuserError, NarrError
from narrative.store.worldrepo import WorldRepo

MOVE = "Lin Yuan walks to the ferry"
BUDGET = 1500  # prompt tokens for a one-sentence event, on the sample world and on 10k nodes
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def own_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No NARR_* setting from the machine, an empty config, and a cache of this test's own."""
    for key in list(os.environ):
        if key.startswith(("NARR_LLM_", "NARR_EXEC_")) or key == "NARR_CONFIG":
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.setattr(chat, "RETRY_WAIT", 0.0)


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Stub]:
    """A stub of the dialect the test is parametrised with (``openai`` unless it says)."""
    dialect = getattr(request, "param", "openai")
    stub = Stub(dialect=dialect, n_ctx=4096)
    with serving(stub):
        point_at(monkeypatch, stub)
        yield stub


def point_at(monkeypatch: pytest.MonkeyPatch, stub: Stub, timeout: str = "5") -> None:
    monkeypatch.setenv("NARR_LLM_BASE_URL", stub.base_url)
    monkeypatch.setenv("NARR_LLM_MODEL", stub.model_name)
    monkeypatch.setenv("NARR_LLM_TIMEOUT", timeout)


def event(root: Path, content: str = MOVE, *, dry_run: bool = False, **kwargs: Any) -> EventResult:
    wr = WorldRepo.open(root)
    try:
        return run_event(wr, EventRequest(content=content, diffuser="llm", **kwargs),
                         dry_run=dry_run, diffuser=get_diffuser("llm", wr))
    finally:
        wr.close()


def failing(root: Path, content: str = MOVE, **kwargs: Any) -> NarrError:
    before = snapshot(root)
    with pytest.raises(NarrError) as info:
        event(root, content, **kwargs)
    assert snapshot(root) == before, "a failed event changed the world"
    assert content in [k.request.content for k in kept(root)], "the failed event was not kept"
    return info.value


kept = kept_events


def prompt_size(body: dict[str, Any]) -> int:
    return estimate_messages(body["messages"])


def form(body: dict[str, Any]) -> str:
    """Which structured-output form a chat request used."""
    if "format" in body:
        return "ollama_format"
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_object":
        return "json_object_schema" if "schema" in rf else "json_object"
    return rf.get("type") or "none"


def sent_max_tokens(body: dict[str, Any]) -> int:
    return body["options"]["num_predict"] if "format" in body else body["max_tokens"]


# --- each dialect, end to end ------------------------------------------------------------------

FIRST_FORM = {"openai": "json_schema", "llama.cpp": "json_schema", "ollama": "json_schema",
              "lmstudio": "json_schema", "vllm": "json_schema",
              "llama-cpp-python": "json_object_schema"}


@pytest.mark.parametrize("served", list(FIRST_FORM), indirect=True)
def test_each_server_records_the_event_with_a_small_bounded_request(flat_world: Path,
                                                                     served: Stub) -> None:
    result = event(flat_world)
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert result.record.diffuser == "llm"
    bodies = served.chats
    assert sent_max_tokens(bodies[-1]) == 512  # every request is bounded
    assert prompt_size(bodies[-1]) <= BUDGET
    assert form(bodies[-1]) == FIRST_FORM[served.dialect]
    if served.dialect == "llama-cpp-python":  # it answers json_schema with HTTP 500
        assert [form(b) for b in bodies] == ["json_schema", "json_object_schema"]
    else:
        assert len(bodies) == 1
    # the form that worked is remembered for this server, outside the world
    remembered = json.loads(servers.memory_path().read_text(encoding="utf-8"))
    entry = remembered[f"{served.base_url}/chat/completions {served.model_name}"]
    assert entry["form"] == FIRST_FORM[served.dialect]
    assert not any("llm-servers" in path for path in snapshot(flat_world))
    served.received.clear()
    event(flat_world, "Lin Yuan waits at the ferry")
    assert [form(b) for b in served.chats] == [FIRST_FORM[served.dialect]]  # no refusal again


@pytest.mark.parametrize(("dialect", "context", "source"), [
    ("llama.cpp", 3000, "llama.cpp's /props"),
    ("ollama", 3000, "Ollama's /api/ps"),
    ("lmstudio", 3000, "LM Studio's /api/v1/models"),
    ("vllm", 3000, "vLLM's /v1/models"),
])
def test_the_context_a_server_tells_is_read(dialect: str, context: int, source: str) -> None:
    stub = Stub(dialect=dialect, n_ctx=context)
    with serving(stub):
        facts = servers.probe(f"{stub.base_url}/chat/completions", stub.model_name, {})
    assert (facts.kind, facts.context) == (dialect, context)
    assert facts.source.startswith(source)


def test_ollama_says_its_context_where_the_model_is_not_loaded() -> None:
    """Not in memory: the model file's num_ctx; without one, Ollama's default, said as such."""
    stub = Stub(dialect="ollama", n_ctx=8192, loaded=False)
    with serving(stub):
        url = f"{stub.base_url}/chat/completions"
        assert servers.probe(url, stub.model_name, {}).context == 8192
        stub.num_ctx_in_modelfile = False
        facts = servers.probe(url, stub.model_name, {})
    assert facts.context == servers.OLLAMA_DEFAULT_CONTEXT and "default" in facts.source


def test_llama_cpp_python_and_openai_tell_no_context() -> None:
    for dialect in ("llama-cpp-python", "openai"):
        stub = Stub(dialect=dialect)
        with serving(stub):
            facts = servers.probe(f"{stub.base_url}/chat/completions", stub.model_name, {})
        assert (facts.kind, facts.context) == (dialect, None)


def test_ollama_s_own_format_is_tried_where_the_openai_forms_are_refused(
        flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An Ollama that takes no response_format on its OpenAI endpoint gets its own request:
    /api/chat with the schema as ``format`` and the reply bounded by ``num_predict``."""
    stub = Stub(dialect="ollama", accepts=("text",), default=reply(GOOD))
    with serving(stub):
        point_at(monkeypatch, stub)
        event(flat_world)
        bodies = stub.chats
        assert [form(b) for b in bodies] == ["json_schema", "json_object_schema", "ollama_format"]
        native = bodies[-1]
        assert native["format"]["properties"]["ops"]["type"] == "array"
        assert native["options"]["num_predict"] == 512 and native["stream"] is False
        assert [r.path for r in stub.received if r.method == "POST"][-1] == "/api/chat"
        assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
        stub.received.clear()
        event(flat_world, "Lin Yuan waits at the ferry")
        assert [form(b) for b in stub.chats] == ["ollama_format"]  # remembered


def test_a_form_the_user_sets_is_the_only_one(flat_world: Path, served: Stub,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_RESPONSE_FORMAT", "json_object_schema")
    event(flat_world)
    assert [form(b) for b in served.chats] == ["json_object_schema"]
    assert not servers.memory_path().exists() or "form" not in servers.memory_path().read_text()


# --- the prompt budget ---------------------------------------------------------------------


def test_the_prompt_is_small_and_says_what_a_small_model_needs(flat_world: Path, served: Stub) -> None:
    event(flat_world)
    [body] = served.chats
    system, user = (m["content"] for m in body["messages"])
    assert prompt_size(body) <= BUDGET
    assert len(system) + len(user) < 6000  # it was 28.8 KB
    assert "JSON Schema" not in system and '"$defs"' not in system
    sent = json.loads(user)
    assert sent["event"] == MOVE
    assert set(sent["named"]) == {"lin-yuan", "ferry"}
    assert "traits" not in sent["named"]["lin-yuan"]  # only a model asked for prose reads them
    assert "/state/location, /state/holder" in system


def test_a_chinese_event_fits_too(flat_world: Path, served: Stub) -> None:
    served.default = reply({"ops": []})
    event(flat_world, "苏晴冒雨走进了藏经阁，从老周手里接过了灯笼。")
    [body] = served.chats
    assert prompt_size(body) <= BUDGET
    assert {"su-qing", "library-pavilion", "old-zhou", "paper-lantern"} <= set(
        json.loads(body["messages"][1]["content"])["named"])


@pytest.mark.slow
def test_the_prompt_grows_with_what_the_event_names_not_with_the_world(tmp_path: Path,
                                                                     served: Stub) -> None:
    """On 10,000 nodes, an event naming a character and the node most others relate to."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from worldgen import WorldSpec, build_world
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    root = tmp_path / "big"
    build_world(root, WorldSpec(nodes=10_000, layout="sharded"))
    served.default = reply({"ops": []})
    nodes = [json.loads(p.read_text(encoding="utf-8")) for p in (root / "world").rglob("*.json")]
    pointed: dict[str, int] = {}
    for node in nodes:
        for targets in node["relations"].values():
            for target in targets:
                pointed[target] = pointed.get(target, 0) + 1
    by_id = {n["id"]: n for n in nodes}
    hub = max(pointed, key=lambda i: pointed[i])
    person = next(n for n in nodes if n["layer"] == "character" and n["lifecycle"] == "permanent"
                  and " " in n["name"] and n["id"] != hub)
    assert pointed[hub] > 8  # more around it than the prompt takes
    event(root, f"{person['name']} joins {by_id[hub]['name']}", dry_run=True)
    [body] = served.chats
    sent = json.loads(body["messages"][1]["content"])
    assert {person["id"], hub} <= set(sent["named"])
    assert len(sent["nearby"]) <= 8 * len(sent["named"])
    assert prompt_size(body) <= BUDGET


def test_a_context_too_small_is_refused_before_sending_with_the_fix(
        flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stub = Stub(dialect="llama.cpp", n_ctx=1024)
    with serving(stub):
        point_at(monkeypatch, stub)
        exc = failing(flat_world)
    assert isinstance(exc, DiffuserError)
    assert exc.message.startswith("the prompt for this event needs about ")
    assert "the model's context (1024 tokens, by llama.cpp's /props (n_ctx of one slot))" in exc.message
    assert exc.message.endswith("nothing was sent")
    assert exc.hint is not None and "llama-server -c 4096" in exc.hint and "[llm] max_tokens" in exc.hint
    assert stub.chats == []  # refused before sending


def test_ollama_s_silent_cut_is_prevented(flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ollama cuts a prompt past its context without a word; narr refuses it instead."""
    stub = Stub(dialect="ollama", n_ctx=1024, loaded=False)
    with serving(stub):
        point_at(monkeypatch, stub)
        exc = failing(flat_world)
    assert "Ollama's /api/show (num_ctx of the model)" in exc.message
    assert exc.hint is not None and "OLLAMA_CONTEXT_LENGTH" in exc.hint
    assert stub.chats == []


def test_the_context_setting_bounds_a_server_that_tells_none(flat_world: Path, served: Stub,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_CONTEXT", "1024")
    exc = failing(flat_world)
    assert "the model's context (1024 tokens, by [llm] context)" in exc.message
    assert served.chats == []


def test_a_tight_context_leaves_out_what_is_around_the_named_nodes(
        flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stub = Stub(dialect="llama.cpp", n_ctx=1500, default=reply(GOOD))
    with serving(stub):
        point_at(monkeypatch, stub)
        result = event(flat_world)
    [body] = stub.chats
    assert prompt_size(body) + 512 <= 1500
    assert set(json.loads(body["messages"][1]["content"])["named"]) == {"lin-yuan", "ferry"}
    assert result.proposal is not None
    assert any(n.startswith("left out of the prompt to fit the model's context: ")
               for n in result.proposal.notes)


def test_a_server_s_overflow_answer_gets_the_fix(flat_world: Path, served: Stub) -> None:
    served.default = Answer(status=400, body=json.dumps({"error": {
        "message": "This model's maximum context length is 2048 tokens. However, you requested 2600 "
                   "tokens", "type": "invalid_request_error", "code": "context_length_exceeded"}}).encode())
    exc = failing(flat_world)
    assert exc.message.startswith("the LLM server answered HTTP 400 Bad Request: This model's maximum")
    assert exc.hint is not None and exc.hint.startswith(
        "the prompt and the reply do not fit the model's context: give the model a larger context")


# --- bounded replies --------------------------------------------------------------------------


def test_max_tokens_comes_from_the_setting(flat_world: Path, served: Stub,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_MAX_TOKENS", "300")
    event(flat_world)
    assert served.chats[0]["max_tokens"] == 300


@pytest.mark.parametrize("served", ["openai", "ollama"], indirect=True)
def test_a_cut_off_reply_is_asked_again_with_more_room_not_repaired(flat_world: Path,
                                                                     served: Stub) -> None:
    served.accepts = ("text",) if served.dialect == "ollama" else None  # Ollama: its own endpoint
    served.answer(Answer(content='{"ops": [{"op": "set", "target": "lin-yu', finish="length"))
    served.default = reply(GOOD)
    result = event(flat_world)
    first, second = served.chats[-2:]
    assert [sent_max_tokens(first), sent_max_tokens(second)] == [512, 1024]
    assert second["messages"] == first["messages"]  # no repair turn: the same question again
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert result.proposal is not None
    assert "the reply was cut off at 512 tokens; asked again with room for 1024" in result.proposal.notes


def test_a_reply_cut_off_twice_is_reported_and_nothing_written(flat_world: Path, served: Stub) -> None:
    served.default = Answer(content='{"ops": [', finish="length")
    exc = failing(flat_world)
    assert exc.message == ("the model's reply was cut off at its token limit twice (512, then 1024 "
                           "tokens): nothing was written")
    assert exc.hint is not None and "[llm] max_tokens" in exc.hint
    assert [b["max_tokens"] for b in served.chats] == [512, 1024]  # never a repair turn
    assert kept(flat_world)[0].raw_reply is not None


def test_a_cut_with_no_room_left_in_the_context_is_reported_at_once(
        flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stub = Stub(dialect="llama.cpp", n_ctx=1800, default=Answer(content="{", finish="length"))
    with serving(stub):
        point_at(monkeypatch, stub)
        exc = failing(flat_world)
    assert exc.message.startswith("the model's reply was cut off at its token limit (512 tokens), "
                                  "and the model's context has no room for a longer one")
    assert len(stub.chats) == 1


def test_a_timeout_closes_the_request(flat_world: Path, served: Stub,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The server sees narr hang up as soon as narr gives up, not after it finished."""
    monkeypatch.setenv("NARR_LLM_TIMEOUT", "0.5")
    served.default = Answer(content=json.dumps(GOOD), delay=6)
    started = time.monotonic()
    exc = failing(flat_world)
    assert "did not answer within 0.5s" in exc.message
    deadline = time.monotonic() + 3
    while not served.disconnects and time.monotonic() < deadline:
        time.sleep(0.02)
    assert served.disconnects and served.disconnects[0] - started < 4


def test_ctrl_c_closes_the_request_and_keeps_the_event(flat_world: Path, served: Stub) -> None:
    served.default = Answer(content=json.dumps(GOOD), delay=20)
    before = snapshot(flat_world)
    env = {**os.environ, "NARR_NO_SERVER": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(flat_world), "event",
                             "--diffuser", "llm", MOVE], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not served.chats and time.monotonic() < deadline:
            time.sleep(0.05)
        assert served.chats, "narr never asked the model"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0, err
    deadline = time.monotonic() + 3
    while not served.disconnects and time.monotonic() < deadline:
        time.sleep(0.02)
    assert served.disconnects, "the server never saw narr hang up"
    assert snapshot(flat_world) == before
    assert [k.request.content for k in kept(flat_world)] == [MOVE]


# --- values checked like ids ---------------------------------------------------------------------


def test_a_location_that_names_no_node_gets_a_repair_with_the_candidates(flat_world: Path,
                                                                        served: Stub) -> None:
    served.answer(reply({"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/location",
                                  "value": "the Cold River landing"}]}))
    served.default = reply(GOOD)
    result = event(flat_world)
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    repair = served.chats[1]["messages"][-1]["content"]
    assert ('op 1 (set lin-yuan) /state/location: "the Cold River landing" names no node; '
            "/state/location holds a node's id; it could mean ferry (Cold River Ferry)") in repair
    assert result.proposal is not None
    assert any("the model repaired it" in n for n in result.proposal.notes)


def test_a_location_that_names_no_node_is_never_written(flat_world: Path, served: Stub) -> None:
    served.default = reply({"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/location",
                                     "value": "somewhere misty"}]})
    exc = failing(flat_world)
    assert exc.message.startswith("the model's reply is not a valid delta, even after one repair "
                                  'attempt: op 1 (set lin-yuan) /state/location: "somewhere misty" '
                                  "names no node")
    assert len(served.chats) == 2
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "qingyun-gate"


def test_an_exact_name_is_taken_for_its_node(flat_world: Path, served: Stub) -> None:
    served.default = reply({"ops": [
        {"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "Cold River Ferry"},
        {"op": "set", "target": "black-ring", "field": "/state", "value": {
            "holder": "Su Qing", "colour": "black", "warmth": "cold"}}]})
    result = event(flat_world, "Lin Yuan walks to the ferry and gives Su Qing the black ring")
    assert len(served.chats) == 1
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert read_node(flat_world, "black-ring")["state"]["holder"] == "su-qing"
    assert result.proposal is not None
    assert "op 1: took 'Cold River Ferry' in /state/location for ferry" in result.proposal.notes


def test_a_holder_in_a_created_node_and_a_field_the_world_declares(flat_world: Path,
                                                                   served: Stub) -> None:
    toml = flat_world / "narr.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[references]\n"state.home" = "lives at"\n',
                    encoding="utf-8")
    served.default = reply({"ops": [
        {"op": "create", "node": {"id": "oil-lamp", "name": "Oil Lamp", "layer": "item",
                                  "state": {"holder": "the boatman"}}},
        {"op": "set", "target": "old-zhou", "field": "/state/home", "value": "a hut by the river"}]})
    exc = failing(flat_world, "Old Zhou lights an oil lamp at home")
    details = " ".join(exc.details)
    assert 'op 1 (create oil-lamp) /state/holder: "the boatman" names no node' in details
    assert 'op 2 (set old-zhou) /state/home: "a hut by the river" names no node' in details


# --- no lock held while a model thinks -----------------------------------------------------------


def _in_thread(target: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = target()
        except BaseException as exc:  # handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def _wait_for_chat(stub: Stub, n: int = 1) -> None:
    deadline = time.monotonic() + 20
    while len(stub.chats) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(stub.chats) >= n, "the model was never asked"


def test_other_commands_run_while_the_model_thinks(flat_world: Path, served: Stub) -> None:
    served.answer(Answer(content=json.dumps(GOOD), delay=2))
    thread, out = _in_thread(lambda: event(flat_world))
    _wait_for_chat(served)
    narr = CLI(flat_world)
    narr("event", "--diffuser", "explicit", "The spirit veins run thin",
         "--set", "spirit-veins.state.flow=thin")  # a write, not refused as busy
    narr("event", "--dry-run", "--diffuser", "explicit", "Dusk")  # a dry run too
    thread.join(30)
    assert "error" not in out, out.get("error")
    assert len(served.chats) == 1  # what the model read did not change: no second question
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert read_node(flat_world, "spirit-veins")["state"]["flow"] == "thin"
    assert [e["content"] for e in narr.json("log")["items"]][:2] == [MOVE, "The spirit veins run thin"]


def test_a_change_to_what_the_model_read_makes_it_ask_again(flat_world: Path, served: Stub) -> None:
    served.answer(Answer(content=json.dumps(GOOD), delay=1.5))
    served.default = reply({"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/mood",
                                     "value": "relieved"}]})
    thread, out = _in_thread(lambda: event(flat_world))
    _wait_for_chat(served)
    edit_node(flat_world, "lin-yuan", location="ferry")  # the writer moved him meanwhile
    thread.join(30)
    assert "error" not in out, out.get("error")
    result: EventResult = out["result"]
    assert len(served.chats) == 2
    second = json.loads(served.chats[1]["messages"][1]["content"])
    assert second["named"]["lin-yuan"]["state"]["location"] == "ferry"  # asked from the new state
    node = read_node(flat_world, "lin-yuan")
    assert node["state"]["location"] == "ferry" and node["state"]["mood"] == "relieved"
    assert {c.field for c in result.record.edits} == {"/state/location"}  # the edit is recorded
    assert "lin-yuan changed while the model was asked, so it was asked again from the world " \
           "as it then stood" in result.warnings


def test_a_world_that_moves_under_both_proposals_holds_the_event_back(flat_world: Path,
                                                                     served: Stub) -> None:
    served.default = Answer(content=json.dumps(GOOD), delay=1.5)
    thread, out = _in_thread(lambda: event(flat_world))
    _wait_for_chat(served, 1)
    edit_node(flat_world, "lin-yuan", mood="wary")
    _wait_for_chat(served, 2)
    edit_node(flat_world, "lin-yuan", mood="grim")
    thread.join(30)
    exc = out.get("error")
    assert isinstance(exc, ConflictError)
    assert exc.message.startswith("the world changed while the model was asked, and again while "
                                  "it was asked once more (lin-yuan changed): nothing was written")
    node = read_node(flat_world, "lin-yuan")
    assert node["state"]["location"] == "qingyun-gate" and node["state"]["mood"] == "grim"
    assert [k.request.content for k in kept(flat_world)] == [MOVE]
    assert exc.hint is not None and "narr event --retry" in exc.hint


# --- bad input from a server ---------------------------------------------------------------------


def test_a_ten_megabyte_answer(flat_world: Path, served: Stub) -> None:
    served.default = Answer(body=b'{"choices": [{"message": {"content": "' + b"x" * (10 << 20) + b'"}}]}')
    exc = failing(flat_world)
    assert exc.message == f"the LLM server at {served.base_url}/chat/completions sent more than 8 MB; " \
                          "a delta is never that large"


def test_an_endless_stream(flat_world: Path, served: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_TIMEOUT", "1")
    served.default = Answer(endless=True)
    exc = failing(flat_world)
    assert exc.message in (f"the LLM server at {served.base_url}/chat/completions did not answer "
                           "within 1s",
                           f"the LLM server at {served.base_url}/chat/completions sent more than "
                           "8 MB; a delta is never that large")


def test_an_answer_that_is_not_utf8(flat_world: Path, served: Stub) -> None:
    body = b'{"choices": [{"message": {"content": "\xff\xfe"}}]}'
    served.default = Answer(body=body)
    exc = failing(flat_world)
    at = body.index(b"\xff")
    assert exc.message == f"the LLM server's answer is not UTF-8 text (byte {at})"


def test_a_reply_nested_ten_thousand_deep(flat_world: Path, served: Stub) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    served.default = Answer(content='{"ops": ' + deep + "}")
    exc = failing(flat_world)
    assert exc.message == ("the model's reply is not JSON, even after one repair attempt: the reply "
                           "is not JSON: nested too deeply")


def test_an_answer_nested_ten_thousand_deep(flat_world: Path, served: Stub) -> None:
    served.default = Answer(body=("[" * 10_000 + "]" * 10_000).encode())
    exc = failing(flat_world)
    assert exc.message == ("the LLM server's answer is not a chat completion: its JSON nests "
                           "deeper than narr reads")


# --- narr doctor knows the model ------------------------------------------------------------------


def _llm_findings(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in report["findings"] if f["name"].startswith("llm")}


@pytest.mark.parametrize(("dialect", "context", "told"), [
    ("llama.cpp", 4096, "4096 tokens (llama.cpp's /props (n_ctx of one slot))"),
    ("ollama", 4096, "4096 tokens (Ollama's /api/ps (the loaded model's context))"),
    ("lmstudio", 4096, "4096 tokens (LM Studio's /api/v1/models (the loaded instance's "
                       "context_length))"),
    ("vllm", 4096, "4096 tokens (vLLM's /v1/models (max_model_len))"),
])
def test_doctor_reports_the_context_and_the_prompt(flat_world: Path, monkeypatch: pytest.MonkeyPatch,
                                                   dialect: str, context: int, told: str) -> None:
    stub = Stub(dialect=dialect, n_ctx=context, default=Answer(content="ready"))
    with serving(stub):
        point_at(monkeypatch, stub)
        report = doctor(flat_world, llm_timeout=5).to_json()
    found = _llm_findings(report)
    assert found["llm"]["status"] == "ok"
    assert found["llm"]["found"].startswith(f"{stub.base_url}/chat/completions ({dialect}, model "
                                            "test-model) answered a 8-token request in ")
    [tiny] = stub.chats
    assert tiny["max_tokens"] == 8 and "response_format" not in tiny
    assert found["llm context"]["status"] == "ok"
    assert found["llm context"]["found"].startswith(
        f"{told}; narr's prompt for a one-sentence event on the sample world: about ")
    whole = int(found["llm context"]["found"].split("about ")[1].split()[0])
    assert 600 < whole <= BUDGET


def test_doctor_names_the_fix_when_the_context_is_too_small(flat_world: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    stub = Stub(dialect="llama.cpp", n_ctx=1024, default=Answer(content="ready"))
    with serving(stub):
        point_at(monkeypatch, stub)
        narr = CLI(flat_world)
        result = narr("doctor", "--json", "--llm-timeout", "5", expect=DiffuserError.exit_code)
    found = _llm_findings(json.loads(result.stdout))["llm context"]
    assert found["status"] == "problem" and found["kind"] == "DiffuserError"
    assert found["problem"].endswith("do not fit the model's context of 1024 tokens: every event is "
                                     "refused before it is sent")
    assert "llama-server -c 4096" in found["fix"]


@pytest.mark.parametrize("dialect", ["llama-cpp-python", "openai"])
def test_doctor_warns_where_the_server_tells_no_context(flat_world: Path, dialect: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    stub = Stub(dialect=dialect, default=Answer(content="ready"))
    with serving(stub):
        point_at(monkeypatch, stub)
        found = _llm_findings(doctor(flat_world, llm_timeout=5).to_json())
    assert found["llm"]["status"] == "ok" and f"({dialect}, model test-model)" in found["llm"]["found"]
    assert found["llm context"]["status"] == "warning"
    assert found["llm context"]["fix"] == ("set [llm] context (NARR_LLM_CONTEXT) to the context the "
                                           "model is served with")
    monkeypatch.setenv("NARR_LLM_CONTEXT", "8192")
    with serving(stub := Stub(dialect=dialect, default=Answer(content="ready"))):
        point_at(monkeypatch, stub)
        found = _llm_findings(doctor(flat_world, llm_timeout=5).to_json())
    assert found["llm context"]["status"] == "ok"
    assert found["llm context"]["found"].startswith("8192 tokens ([llm] context)")


def test_doctor_reports_a_server_that_does_not_answer_a_chat(flat_world: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    stub = Stub(dialect="llama.cpp", default=Answer(status=404, body=b'{"error": {"message": '
                                                                    b'"model not found"}}'))
    with serving(stub):
        point_at(monkeypatch, stub)
        found = _llm_findings(doctor(flat_world, llm_timeout=5).to_json())
    assert found["llm"]["status"] == "problem"
    assert found["llm"]["problem"] == "the LLM server answered HTTP 404 Not Found: model not found"
    assert "llm context" not in found


# --- the benchmark's llm mode ---------------------------------------------------------------------


def test_the_diffusion_benchmark_runs_a_set_through_a_served_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"text": MOVE, "lang": "en", "category": "plain",
             "expect": [{"target": "lin-yuan", "field": "/state/location", "value": "ferry"}]},
            {"text": "Su Qing frowns.", "lang": "en", "category": "none", "expect": []}]
    labelled = tmp_path / "set.jsonl"
    labelled.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import diffusion
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    stub = Stub(dialect="llama.cpp", default=reply(GOOD))
    stub.script.extend([reply(GOOD), reply({"ops": []})])
    with serving(stub):
        assert diffusion.main(["--only", "repo", "--set", str(labelled), "--quiet", "--diffuser", "llm",
                               "--base-url", stub.base_url, "--model", "test-model"]) == 0
    out = capsys.readouterr().out
    summary = next(line for line in out.splitlines() if line.startswith("repository set"))
    assert summary.startswith("repository set (sample world), through the llm diffuser (test-model): "
                              "2 sentences, 2 exact (100.0%), 0 wrong writes, 0 misses")
    assert "; prompt tokens median " in summary and "(the server's count)" in summary
    assert [form(b) for b in stub.chats] == ["json_schema", "json_schema"]


# --- the manual's settings for each server ------------------------------------------------------


def documented_settings() -> dict[str, str]:
    """The ``[llm]`` settings docs/diffusers.md gives for each server, by dialect."""
    text = (REPO / "docs" / "diffusers.md").read_text(encoding="utf-8")
    found = re.findall(r"<!-- llm-settings: (\S+) -->\n```toml\n(.*?)```", text, flags=re.DOTALL)
    return dict(found)


def test_the_manual_gives_settings_for_each_local_server() -> None:
    assert set(documented_settings()) == {"ollama", "llama.cpp", "llama-cpp-python", "lmstudio"}


@pytest.mark.parametrize("dialect", ["ollama", "llama.cpp", "llama-cpp-python", "lmstudio"])
def test_the_manual_s_settings_work_with_each_server(flat_world: Path, tmp_path: Path,
                                                     dialect: str) -> None:
    import tomllib

    settings = tomllib.loads(documented_settings()[dialect])["llm"]
    stub = Stub(dialect=dialect, n_ctx=4096, model_name=settings.get("model", "served-model"),
                default=reply(GOOD))
    with serving(stub):
        port = stub.url.rsplit(":", 1)[1]
        toml = documented_settings()[dialect]
        toml = re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{port}", toml)
        config = tmp_path / "user-config" / "narr" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(toml, encoding="utf-8")
        narr = CLI(flat_world)
        doctor_report = _llm_findings(narr.json("doctor"))
        narr("event", "--diffuser", "llm", MOVE)
    assert doctor_report["llm context"]["status"] == "ok", doctor_report
    assert doctor_report["llm context"]["found"].startswith("4096 tokens (")
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert sent_max_tokens(stub.chats[-1]) == 512


def test_narr_event_on_the_command_line_leaves_the_world_open_while_the_model_thinks(
        flat_world: Path, served: Stub) -> None:
    """``narr event --diffuser llm`` as a writer runs it, with another ``narr`` writing meanwhile."""
    served.default = Answer(content=json.dumps(GOOD), delay=2)
    env = {**os.environ, "NARR_NO_SERVER": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(flat_world), "event",
                             "--diffuser", "llm", MOVE], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90  # a Python start on a loaded machine, then the ask
        while not served.chats and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        if not served.chats:
            if proc.poll() is None:
                proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"narr never asked the model (exit {proc.returncode}):\n{err}")
        narr = CLI(flat_world)
        narr("event", "--diffuser", "explicit", "The spirit veins run thin",
             "--set", "spirit-veins.state.flow=thin")
        narr("new", "character", "Ferryman Wu")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "lin-yuan /state/location" in out
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert [e["content"] for e in CLI(flat_world).json("log")["items"]][:2] == [
        MOVE, "The spirit veins run thin"]
