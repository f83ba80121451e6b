"""What an LLM server says of itself: which server it is and how large the model's context is.

The chat-completions request is the same everywhere, but the context a prompt must
fit in is not, and no standard endpoint tells it. Each local server answers in its
own place, which is asked only where it exists:

- llama.cpp's ``llama-server``: ``GET /props``, ``default_generation_settings.n_ctx``
  (the context of one slot: ``-c`` divided among ``-np`` slots);
- Ollama: ``GET /api/ps`` gives the ``context_length`` of a loaded model; else
  ``POST /api/show`` gives a ``num_ctx`` the model file sets; else Ollama's default,
  4,096 tokens on a machine with less than 24 GiB of graphics memory (2,048 before
  Ollama 0.6), and a longer prompt is cut silently;
- LM Studio: ``GET /api/v1/models``, the ``context_length`` its loaded instance has;
- vLLM: ``GET /v1/models``, ``max_model_len``.

llama-cpp-python's server tells no context (its ``/v1/models`` names the model and
``owned_by: "me"``), nor does a hosted API; then ``[llm] context`` is what narr knows.

Each probe is a short request on its own small timeout, and a server that answers
none of them is simply one whose context narr does not know: nothing fails for it.

What worked is remembered per server (its address and model) in the user's cache
directory, ``$XDG_CACHE_HOME/narr/llm-servers.json`` (``~/.cache/narr/``): the kind of
server, so the next event asks one endpoint rather than four, and the structured-output
form it took (:mod:`narrative.diffusers.chat`), so the next event does not step down
through refusals again. It is the user's machine's knowledge of the user's servers,
never written into a world, whose files are tracked, shared and cloned.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from narrative import invocation, safejson

PROBE_TIMEOUT = 2.0
MAX_PROBE_BYTES = 4 << 20  # an /api/show can list a model's whole template and license
OLLAMA_DEFAULT_CONTEXT = 4096
MEMORY_FILE = "llm-servers.json"
MAX_REMEMBERED = 64


@dataclass
class ServerFacts:
    """Which server answers at an address, and the context its model has (None: not told)."""

    kind: str = "openai"
    context: int | None = None
    source: str = ""  # where the context was read ("/props n_ctx", ...), for a person
    model: str | None = None  # the model the server says it runs, where it says

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "context": self.context, "source": self.source, "model": self.model}


def root_of(url: str) -> str:
    """``http://h:8080/v1/chat/completions`` -> ``http://h:8080``: where native endpoints live."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    for tail in ("/chat/completions", "/v1"):
        path = path.removesuffix(tail)
    return urlunsplit(parts._replace(path=path, query="", fragment="")).rstrip("/")


def models_url(url: str) -> str:
    """The OpenAI-style model list beside a chat-completions URL."""
    return url.rstrip("/").removesuffix("/chat/completions") + "/models"


def probe(url: str, model: str | None, headers: dict[str, str], *, known: str | None = None,
          timeout: float = PROBE_TIMEOUT) -> ServerFacts:
    """Ask the server at ``url`` (its chat-completions URL) what it is; the kind ``known`` first.

    A server that does not answer at all (refused, timed out) is asked nothing more: the
    chat request that follows says what is wrong with it."""
    first = _PROBE_OF.get(known or "")
    for name in dict.fromkeys([p for p in (first, "llama.cpp", "ollama", "lmstudio", "list") if p]):
        try:
            facts = _PROBES[name](url, model, headers, timeout)
        except _NoAnswer:
            break
        if facts is not None:
            return facts
    return ServerFacts()


class _NoAnswer(Exception):
    """The server did not answer a probe at all."""


def _llama_cpp(url: str, model: str | None, headers: dict[str, str], timeout: float) -> ServerFacts | None:
    props = _ask(root_of(url) + "/props", headers, timeout)
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if n_ctx is None:
        n_ctx = props.get("n_ctx")
    if not isinstance(props.get("default_generation_settings"), dict) and n_ctx is None:
        return None  # some other server's /props
    alias = props.get("model_alias") or props.get("model_path")
    return ServerFacts("llama.cpp", _positive(n_ctx), "llama.cpp's /props (n_ctx of one slot)",
                       alias if isinstance(alias, str) else None)


def _ollama(url: str, model: str | None, headers: dict[str, str], timeout: float) -> ServerFacts | None:
    root = root_of(url)
    if not model:
        version = _ask(root + "/api/version", headers, timeout)
        if isinstance(version, dict) and "version" in version:
            return ServerFacts("ollama", None, "Ollama names no model: set [llm] model")
        return None
    shown = _ask(root + "/api/show", headers, timeout, {"model": model})
    if not isinstance(shown, dict) or not ({"model_info", "parameters", "modelfile"} & set(shown)):
        return None
    running = _ask(root + "/api/ps", headers, timeout)
    for entry in (running.get("models") if isinstance(running, dict) else None) or []:
        if isinstance(entry, dict) and model in (entry.get("name"), entry.get("model")):
            loaded = _positive(entry.get("context_length"))
            if loaded:
                return ServerFacts("ollama", loaded, "Ollama's /api/ps (the loaded model's context)",
                                   model)
    params = shown.get("parameters")
    found = re.search(r"(?m)^\s*num_ctx\s+(\d+)", params) if isinstance(params, str) else None
    if found:
        return ServerFacts("ollama", int(found.group(1)), "Ollama's /api/show (num_ctx of the model)",
                           model)
    return ServerFacts("ollama", OLLAMA_DEFAULT_CONTEXT,
                       "Ollama's default, as the model sets no num_ctx (4096 below 24 GiB of "
                       "graphics memory; OLLAMA_CONTEXT_LENGTH changes it)", model)


def _lmstudio(url: str, model: str | None, headers: dict[str, str], timeout: float) -> ServerFacts | None:
    listed = _ask(root_of(url) + "/api/v1/models", headers, timeout)
    models = listed.get("models") if isinstance(listed, dict) else None
    if not isinstance(models, list):
        return None
    loaded: list[tuple[str, int | None]] = []
    for entry in models:
        if not isinstance(entry, dict):
            continue
        for instance in entry.get("loaded_instances") or []:
            config = instance.get("config") if isinstance(instance, dict) else None
            context = _positive(config.get("context_length")) if isinstance(config, dict) else None
            name = instance.get("id") or entry.get("key")
            loaded.append((str(name), context))
            if model and model in (entry.get("key"), instance.get("id")):
                return ServerFacts("lmstudio", context, "LM Studio's /api/v1/models (the loaded "
                                   "instance's context_length)", str(name))
    if not model and len(loaded) == 1:
        return ServerFacts("lmstudio", loaded[0][1], "LM Studio's /api/v1/models (the loaded "
                           "instance's context_length)", loaded[0][0])
    return ServerFacts("lmstudio", None, "LM Studio has not loaded the model yet: it loads it "
                       "with its own default context", model)


def _openai_list(url: str, model: str | None, headers: dict[str, str],
                 timeout: float) -> ServerFacts | None:
    listed = _ask(models_url(url), headers, timeout)
    data = listed.get("data") if isinstance(listed, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    mine = next((e for e in entries if model and e.get("id") == model), entries[0] if len(entries) == 1
                else None)
    if mine is not None and _positive(mine.get("max_model_len")):
        return ServerFacts("vllm", _positive(mine.get("max_model_len")),
                           "vLLM's /v1/models (max_model_len)", str(mine.get("id")))
    if mine is not None and mine.get("owned_by") == "me":
        return ServerFacts("llama-cpp-python", None, "llama-cpp-python tells no context size",
                           str(mine.get("id")))
    return ServerFacts("openai", None, "the server tells no context size",
                       str(mine.get("id")) if mine is not None else None)


_PROBES = {"llama.cpp": _llama_cpp, "ollama": _ollama, "lmstudio": _lmstudio, "list": _openai_list}
_PROBE_OF = {"llama.cpp": "llama.cpp", "ollama": "ollama", "lmstudio": "lmstudio", "vllm": "list",
             "llama-cpp-python": "list", "openai": "list"}


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _ask(url: str, headers: dict[str, str], timeout: float, body: Any = None) -> Any:
    """The JSON a GET (or, with ``body``, a POST) answers; None for anything else."""
    from narrative.diffusers.chat import opener

    data = json.dumps(body).encode("utf-8") if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET",
                                     headers={**headers, "Accept": "application/json",
                                              **({"Content-Type": "application/json"} if data else {})})
    try:
        with opener(url).open(request, timeout=timeout) as resp:
            raw = resp.read(MAX_PROBE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        exc.close()
        return None  # it answered: not this endpoint
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, OSError):
            raise _NoAnswer from None
        return None
    except (TimeoutError, ConnectionError):
        raise _NoAnswer from None
    except (OSError, ValueError, http.client.HTTPException):
        return None  # a server that speaks something else
    if len(raw) > MAX_PROBE_BYTES:
        return None
    try:
        return safejson.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


# --- what is remembered of each server -------------------------------------------------


def memory_path() -> Path:
    """``$XDG_CACHE_HOME/narr/llm-servers.json``, else ``~/.cache/narr/llm-servers.json``."""
    base = invocation.getenv("XDG_CACHE_HOME") or os.path.join(invocation.expanduser("~"), ".cache")
    return invocation.absolute(base) / "narr" / MEMORY_FILE


def _key(url: str, model: str | None) -> str:
    return f"{url} {model or ''}".strip()


def recall(url: str, model: str | None) -> dict[str, Any]:
    """What was remembered of the server at ``url`` with ``model`` ({} when nothing, or the file
    is unreadable: it is a cache, and a broken one is as good as none)."""
    try:
        data = safejson.loads(memory_path().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    entry = data.get(_key(url, model)) if isinstance(data, dict) else None
    return entry if isinstance(entry, dict) else {}


def _when(entry: dict[str, Any]) -> int:
    at = entry.get("at")
    return at if isinstance(at, int) else 0


def remember(url: str, model: str | None, **facts: Any) -> None:
    """Keep ``facts`` about the server (merged with what is kept), newest servers first."""
    path = memory_path()
    try:
        data = safejson.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    key = _key(url, model)
    old = data.pop(key, None)
    entry = {**(old if isinstance(old, dict) else {}), **facts, "at": int(time.time())}
    others = sorted(((k, v) for k, v in data.items() if isinstance(v, dict)),
                    key=lambda kv: _when(kv[1]), reverse=True)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".llm-servers.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({key: entry, **dict(others[:MAX_REMEMBERED - 1])}, f, ensure_ascii=False,
                      indent=1)
        os.replace(tmp, path)
    except OSError:  # a cache: the next event asks the server again
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
