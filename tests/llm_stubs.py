"""Stub LLM servers on loopback, each speaking one server's dialect field by field.

No model runs here: a stub answers with what a test lines up (or with what a small
``model`` function makes of the prompt), but every endpoint narr may touch answers
as that server's public documentation describes it:

- ``openai``: ``POST /v1/chat/completions`` (``response_format`` ``json_schema``,
  ``max_tokens``, ``finish_reason``, ``usage``), ``GET /v1/models``; nothing else
  (404 as the API answers it);
- ``llama.cpp`` (``llama-server``): ``GET /props`` with
  ``default_generation_settings.n_ctx``, ``GET /health``, ``GET /v1/models`` (with
  ``meta.n_ctx_train``), chat completions taking ``json_schema`` and
  ``{"type": "json_object", "schema": ...}``, and a prompt past the context refused
  with HTTP 400 ``exceed_context_size_error``;
- ``llama-cpp-python``: chat completions whose ``response_format`` may only be
  ``text`` or ``json_object`` (with an optional ``schema``): ``json_schema`` fails
  validation, which its server answers with HTTP 500 and the validation's text;
  ``GET /v1/models`` with ``owned_by: "me"``; a prompt past the context refused with
  HTTP 400 ``context_length_exceeded``;
- ``ollama``: ``GET /api/version``, ``POST /api/show`` (``parameters`` with ``num_ctx``,
  ``model_info`` with ``<arch>.context_length``), ``GET /api/ps`` (``context_length``
  of a loaded model), ``POST /api/chat`` (``format`` a schema, ``options.num_predict``,
  ``done_reason``, ``prompt_eval_count``), and the OpenAI-compatible chat completions;
  a prompt past the context is cut from its start, silently, as Ollama does;
- ``lmstudio``: ``GET /api/v1/models`` (``loaded_instances[].config.context_length``,
  ``max_context_length``) and chat completions with ``json_schema``;
- ``vllm``: ``GET /v1/models`` with ``max_model_len``.

The stub counts tokens with its own crude tokenizer (words and marks), not narr's
estimate, as a real server counts with the model's. It notices a client that hangs up
while it "thinks" (``disconnects``), as a server that cancels on disconnect does.

Run as a script it serves until interrupted, with a toy model that moves the first
named character to the first named place when the words say someone goes somewhere
(for ``benchmarks/diffusion.py --diffuser llm`` without a model)::

    python tests/llm_stubs.py --dialect llama.cpp --port 8080 --n-ctx 4096
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIALECTS = ("openai", "llama.cpp", "llama-cpp-python", "ollama", "lmstudio", "vllm")
GOOD = {"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "ferry"}]}


def count_tokens(text: str) -> int:
    """The stub's tokenizer: a word or a mark is a token, a CJK character is one."""
    return len(re.findall(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]", text))


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(4 + count_tokens(str(m.get("content") or "")) for m in messages)


@dataclass
class Answer:
    """One scripted answer: a chat reply's content, or a whole HTTP answer."""

    content: str | None = None
    finish: str = "stop"
    status: int = 200
    body: bytes | None = None  # sent as it is, instead of a chat answer
    delay: float = 0.0  # seconds "thinking" before the answer
    drip: float = 0.0  # seconds between the body's bytes
    endless: bool = False  # a body that never ends (a byte at a time, until the client goes)
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    refusal: str | None = None


def reply(obj: Any, finish: str = "stop") -> Answer:
    return Answer(content=json.dumps(obj, ensure_ascii=False), finish=finish)


@dataclass
class Received:
    method: str
    path: str
    json: Any
    headers: dict[str, str]
    at: float


@dataclass
class Stub:
    """A server of one dialect; ``script`` answers chat requests first, then ``model``."""

    dialect: str = "openai"
    model_name: str = "test-model"
    n_ctx: int | None = 4096  # the context the server gives the model (None: it tells none)
    loaded: bool = True  # Ollama / LM Studio: the model is in memory (its context is told)
    num_ctx_in_modelfile: bool = True  # Ollama: the model file sets num_ctx
    accepts: tuple[str, ...] | None = None  # response_format types taken (None: the dialect's)
    model: Callable[[dict[str, Any]], Answer] = field(default_factory=lambda: lambda body: reply(GOOD))
    script: deque[Answer] = field(default_factory=deque)
    default: Answer | None = None  # answers every chat request the script does not
    received: list[Received] = field(default_factory=list)
    disconnects: list[float] = field(default_factory=list)
    url: str = ""
    stop: threading.Event = field(default_factory=threading.Event)

    def answer(self, *answers: Answer) -> None:
        self.script.extend(answers)

    @property
    def chats(self) -> list[dict[str, Any]]:
        """The bodies of the chat requests (either endpoint), in order."""
        return [r.json for r in self.received
                if r.path in ("/v1/chat/completions", "/api/chat") and isinstance(r.json, dict)]

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The chat requests: path, headers and JSON body of each."""
        return [{"path": r.path, "headers": r.headers, "json": r.json} for r in self.received
                if r.path in ("/v1/chat/completions", "/api/chat")]

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return self.chats

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def formats(self) -> tuple[str, ...]:
        if self.accepts is not None:
            return self.accepts
        return {"llama-cpp-python": ("text", "json_object"),
                }.get(self.dialect, ("text", "json_object", "json_schema"))


def _chat_answer(stub: Stub, body: dict[str, Any], ans: Answer, native: bool) -> dict[str, Any]:
    tokens = prompt_tokens(body.get("messages") or [])
    completion = count_tokens(ans.content or "")
    if native:  # Ollama's /api/chat
        return {"model": stub.model_name, "created_at": "2026-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": ans.content or ""},
                "done_reason": "length" if ans.finish == "length" else ans.finish, "done": True,
                "total_duration": 1000, "load_duration": 10, "prompt_eval_count": tokens,
                "prompt_eval_duration": 100, "eval_count": completion, "eval_duration": 100}
    message: dict[str, Any] = {"role": "assistant", "content": ans.content}
    if ans.refusal is not None:
        message["refusal"] = ans.refusal
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 1767225600,
            "model": stub.model_name,
            "choices": [{"index": 0, "message": message, "finish_reason": ans.finish}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": completion,
                      "total_tokens": tokens + completion}}


def _format_error(stub: Stub, kind: str) -> tuple[int, dict[str, Any]]:
    if stub.dialect == "llama-cpp-python":  # a pydantic validation error, wrapped as a 500
        return 500, {"error": {
            "message": "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  "
                       f"Input should be 'text' or 'json_object' [type=literal_error, "
                       f"input_value='{kind}', input_type=str]",
            "type": "internal_server_error", "param": None, "code": None}}
    return 400, {"error": {"message": f"response_format type {kind!r} is not supported",
                           "type": "invalid_request_error", "param": "response_format", "code": None}}


def _overflow(stub: Stub, needed: int, asked: int) -> tuple[int, dict[str, Any]] | None:
    """The dialect's refusal of a prompt past its context (None: it takes it, or cuts it)."""
    if stub.n_ctx is None or stub.dialect in ("ollama",):
        return None
    if stub.dialect == "llama.cpp":  # the prompt must fit; the reply stops at the context's end
        if needed < stub.n_ctx:
            return None
        return 400, {"error": {"code": 400, "message": "the request exceeds the available context "
                               "size, try increasing it", "type": "exceed_context_size_error",
                               "n_prompt_tokens": needed, "n_ctx": stub.n_ctx}}
    if needed + asked <= stub.n_ctx:
        return None
    return 400, {"error": {"message": f"This model's maximum context length is {stub.n_ctx} tokens. "
                           f"However, you requested {needed + asked} tokens ({needed} in the "
                           f"messages, {asked} in the completion). Please reduce the length of the "
                           "messages or completion.", "type": "invalid_request_error",
                           "param": "messages", "code": "context_length_exceeded"}}


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, obj: Any = None, raw: bytes | None = None,
                  content_type: str = "application/json", headers: dict[str, str] | None = None) -> None:
            data = raw if raw is not None else json.dumps(obj, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _not_found(self) -> None:
            if stub.dialect in ("ollama",):
                self._send(404, raw=b"404 page not found", content_type="text/plain")
            elif stub.dialect == "llama-cpp-python":
                self._send(404, {"detail": "Not Found"})
            else:
                self._send(404, {"error": {"code": 404, "message": "File Not Found",
                                           "type": "not_found_error"}})

        def _record(self, body: Any) -> None:
            stub.received.append(Received(self.command, self.path, body, dict(self.headers),
                                          time.monotonic()))

        def _think(self, seconds: float) -> bool:
            """Wait ``seconds``; False (and noted) when the client hangs up meanwhile."""
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if stub.stop.is_set():
                    return False
                ready, _, _ = select.select([self.connection], [], [], 0.02)
                if ready:
                    try:
                        gone = self.connection.recv(1, socket.MSG_PEEK) == b""
                    except OSError:
                        gone = True
                    if gone:
                        stub.disconnects.append(time.monotonic())
                        self.close_connection = True
                        return False
            return True

        def do_GET(self) -> None:
            self._record(None)
            d, path = stub.dialect, self.path.split("?")[0]
            if path == "/v1/models":
                entry: dict[str, Any] = {"id": stub.model_name, "object": "model", "created": 1767225600,
                                         "owned_by": {"llama-cpp-python": "me", "vllm": "vllm",
                                                      "llama.cpp": "llamacpp"}.get(d, "organization")}
                if d == "llama.cpp":
                    entry["meta"] = {"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": 32768,
                                     "n_embd": 896, "n_params": 494032768, "size": 491400032}
                if d == "llama-cpp-python":
                    entry["permissions"] = []
                if d == "vllm" and stub.n_ctx:
                    entry["max_model_len"] = stub.n_ctx
                self._send(200, {"object": "list", "data": [entry]})
            elif d == "llama.cpp" and path == "/props":
                self._send(200, {"default_generation_settings": {
                    "id": 0, "id_task": -1, "n_ctx": stub.n_ctx, "speculative": False,
                    "is_processing": False, "params": {"n_predict": -1, "temperature": 0.8}},
                    "total_slots": 1, "model_path": f"/models/{stub.model_name}.gguf",
                    "chat_template": "{{ messages }}", "build_info": "b5000-stub",
                    "modalities": {"vision": False, "audio": False}})
            elif d == "llama.cpp" and path == "/health":
                self._send(200, {"status": "ok"})
            elif d == "ollama" and path == "/api/version":
                self._send(200, {"version": "0.6.2"})
            elif d == "ollama" and path == "/api/ps":
                models = [{"name": stub.model_name, "model": stub.model_name, "size": 1_000_000,
                           "digest": "0" * 64, "details": {"format": "gguf", "family": "qwen2"},
                           "expires_at": "2026-01-01T00:05:00Z", "size_vram": 0,
                           "context_length": stub.n_ctx}] if stub.loaded else []
                self._send(200, {"models": models})
            elif d == "ollama" and path == "/":
                self._send(200, raw=b"Ollama is running", content_type="text/plain")
            elif d == "lmstudio" and path == "/api/v1/models":
                instances = [{"id": stub.model_name, "config": {
                    "context_length": stub.n_ctx, "eval_batch_size": 512, "parallel": 4,
                    "flash_attention": True}}] if stub.loaded else []
                self._send(200, {"models": [{
                    "type": "llm", "publisher": "lmstudio-community", "key": stub.model_name,
                    "display_name": "Stub Model", "architecture": "qwen2",
                    "quantization": {"name": "Q4_K_M", "bits_per_weight": 4},
                    "size_bytes": 1_000_000, "params_string": "0.5B", "loaded_instances": instances,
                    "max_context_length": 32768, "format": "gguf",
                    "capabilities": {"vision": False, "trained_for_tool_use": False}}]})
            else:
                self._not_found()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            self._record(body)
            d, path = stub.dialect, self.path.split("?")[0]
            if d == "ollama" and path == "/api/show":
                if not isinstance(body, dict) or body.get("model") != stub.model_name:
                    self._send(404, {"error": f"model '{(body or {}).get('model')}' not found"})
                    return
                params = 'stop                           "<|im_end|>"'
                if stub.num_ctx_in_modelfile and stub.n_ctx:
                    params = f"num_ctx                        {stub.n_ctx}\n" + params
                self._send(200, {"modelfile": f"FROM {stub.model_name}\n", "parameters": params,
                                 "template": "{{ .Prompt }}", "details": {
                                     "parent_model": "", "format": "gguf", "family": "qwen2",
                                     "families": ["qwen2"], "parameter_size": "494.03M",
                                     "quantization_level": "Q4_K_M"},
                                 "model_info": {"general.architecture": "qwen2",
                                                "qwen2.context_length": 32768},
                                 "capabilities": ["completion"]})
                return
            native = d == "ollama" and path == "/api/chat"
            if path != "/v1/chat/completions" and not native:
                self._not_found()
                return
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                self._send(400, {"error": {"message": "messages is required"}})
                return
            if not native:
                rf = body.get("response_format")
                kind = rf.get("type") if isinstance(rf, dict) else None
                if kind is not None and kind not in stub.formats():
                    status, err = _format_error(stub, kind)
                    self._send(status, err)
                    return
                asked = body.get("max_tokens") or body.get("max_completion_tokens") or 0
            else:
                asked = (body.get("options") or {}).get("num_predict") or 0
            needed = prompt_tokens(body["messages"])
            over = _overflow(stub, needed, int(asked))
            if over is not None:
                self._send(*over)
                return
            ans = (stub.script.popleft() if stub.script else
                   stub.default if stub.default is not None else stub.model(body))
            if ans.delay and not self._think(ans.delay):
                return
            if ans.status == 0:  # hang up without answering
                self.close_connection = True
                return
            try:
                if ans.endless:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"choices": [{"message": {"content": "')
                    while not stub.stop.is_set():
                        self.wfile.write(b"a" * 1024)
                        self.wfile.flush()
                        time.sleep(0.01)
                    return
                if ans.body is not None:
                    data = ans.body
                else:
                    data = json.dumps(_chat_answer(stub, body, ans, native), ensure_ascii=False).encode()
                if ans.drip:
                    self.send_response(ans.status)
                    self.send_header("Content-Type", ans.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        if stub.stop.wait(ans.drip):
                            return
                    return
                self._send(ans.status, raw=data, content_type=ans.content_type, headers=ans.headers)
            except OSError:
                stub.disconnects.append(time.monotonic())  # the client gave up mid-answer

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@contextmanager
def serving(stub: Stub, port: int = 0) -> Iterator[Stub]:
    server = _Server(("127.0.0.1", port), _handler(stub))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield stub
    finally:
        stub.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(2)


# --- a toy model, for running narr's benchmark against a stub -------------------------------

_GOING = re.compile(r"\b(walk|go|goes|went|come|came|arriv|run|ran|hurr|climb|slip|head|return|"
                    r"enter|reach|step)|来到|走进|去了|到了|回到|进了|赶到", re.IGNORECASE)


def toy_model(body: dict[str, Any]) -> Answer:
    """Moves the first named character to the first named place when the words say someone
    goes somewhere; otherwise proposes nothing. No model: a stand-in that answers in shape."""
    try:
        user = json.loads(body["messages"][-1]["content"])
    except (ValueError, KeyError, IndexError, TypeError):
        return reply({"ops": []})
    if not isinstance(user, dict):
        return reply({"ops": []})
    named = user.get("named") or {}
    people = [i for i, n in named.items() if n.get("layer") == "character"]
    places = [i for i, n in named.items() if n.get("kind") in ("place", "building", "room", "city")
              or (n.get("layer") == "background" and "place" in str(n.get("kind")))]
    if people and places and _GOING.search(str(user.get("event", ""))):
        return reply({"ops": [{"op": "set", "target": people[0], "field": "/state/location",
                               "value": places[0]}]})
    return reply({"ops": []})


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialect", choices=DIALECTS, default="llama.cpp")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--model", default="stub-model")
    args = parser.parse_args()
    stub = Stub(dialect=args.dialect, n_ctx=args.n_ctx, model_name=args.model, model=toy_model)
    with serving(stub, args.port):
        print(f"{args.dialect} stub at {stub.base_url} (n_ctx {args.n_ctx}); Ctrl-C stops it",
              flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
