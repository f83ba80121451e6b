"""A small client for OpenAI-compatible chat completions, on the standard library and tenacity.

One POST to ``{base_url}/chat/completions`` per call: that one request shape is
spoken by Ollama, llama.cpp's server, llama-cpp-python, LM Studio, vLLM and hosted
APIs alike, so narr needs no HTTP dependency and no vendor SDK. Every way the
exchange can fail becomes a :class:`~narrative.errors.DiffuserError` whose message
says which one it was (no answer in time, server unreachable, an HTTP error, an
answer that is not a chat completion, a prompt too long for the model's context),
because the fix differs for each.

Every request carries ``max_tokens``: with a JSON grammar a small model can
generate for many minutes, and the server keeps working on a request narr gave up.
Giving up closes the connection (on the timeout, and on Ctrl-C, which the standard
library's ``do_open`` and the response's ``with`` both close on), so a server that
stops a request whose client hung up (llama.cpp, Ollama) stops working on it.

Servers differ in how they constrain output to JSON, so the request asks for the
strictest form first and steps down through the forms narr knows (:data:`FORMS`)
when a server's error says it does not take that one:

1. ``json_schema``: OpenAI's ``response_format`` (llama.cpp, Ollama, LM Studio, vLLM);
2. ``json_object_schema``: ``{"type": "json_object", "schema": ...}``, llama-cpp-python's
   own form (it answers the first with HTTP 500);
3. ``ollama_format``: Ollama's native ``/api/chat`` with the schema as ``format``,
   only where the server is Ollama;
4. ``json_object``: any JSON, with the schema described in the prompt;
5. ``none``: plain instructions.

The form a server took is remembered for it (:mod:`narrative.diffusers.servers`), so
the next event starts there. Any other rejection (an unknown model, a bad parameter)
fails at once with the server's own message: asking again would not change the
answer. A rate limit (429), a server error (5xx) or a connection reset is asked
again, with growing waits and ``Retry-After`` honoured, but never past the timeout;
tenacity runs that loop, since backoff with jitter and a stop rule are easy to get
subtly wrong by hand.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import json
import random
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, overload
from urllib.parse import unquote, urlsplit, urlunsplit

import tenacity

from narrative import __version__, safejson
from narrative.diffusers import servers
from narrative.errors import DiffuserError
from narrative.userconfig import LLMSettings

FORMS = ("json_schema", "json_object_schema", "ollama_format", "json_object", "none")
ENFORCING = frozenset({"json_schema", "json_object_schema", "ollama_format"})
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
MAX_KEPT_BODY = 20_000
# What a server's complaint about the JSON mode says (OpenAI, LiteLLM, vLLM, llama.cpp,
# llama-cpp-python): only such a complaint makes narr step down; any other 400 is the user's to
# fix, at once.
_FORMAT_WORDS = ("response_format", "json_schema", "json schema", "json_object", "structured output",
                 "guided_json", "guided decoding", "grammar")
# What a server says when the prompt does not fit its context (OpenAI, vLLM, llama.cpp,
# llama-cpp-python, LM Studio).
_OVERFLOW = re.compile(r"context[ _-]?(length|size|window)|n_ctx|exceeds? the (available )?context|"
                       r"maximum context|too many tokens|prompt is too long|context overflow",
                       re.IGNORECASE)


@dataclass
class Reply:
    """The first choice of a chat completion, and the raw body it came in."""

    content: str | None
    refusal: str | None
    finish_reason: str | None
    body: str
    prompt_tokens: int | None = None  # as the server counted them, where it says
    completion_tokens: int | None = None

    @property
    def cut(self) -> bool:
        """Whether the reply stopped at the token limit, not at its end."""
        return self.finish_reason == "length"


@dataclass
class ChatClient:
    url: str
    model: str | None
    timeout: float
    api_key: str | None = None
    temperature: float | None = None
    modes: list[str] = field(default_factory=lambda: list(FORMS))
    notes: list[str] = field(default_factory=list)
    basic_auth: str | None = None  # "user:password" from base_url, sent as a header, never shown
    max_tokens: int = 512
    context: int | None = None  # [llm] context: set by the user, it wins over what the server says
    remembered: str | None = None  # the form this server took last time
    facts: servers.ServerFacts | None = None  # what the server said of itself, once asked
    token_field: str = "max_tokens"
    requests: int = 0
    auto: bool = False  # the forms are narr's to choose (and to remember), not the user's
    unenforced: str = ""  # added to the system message when the server holds the reply to no schema

    @classmethod
    def from_settings(cls, settings: LLMSettings) -> ChatClient:
        """A client for the configured server; a missing setting is a clear error here."""
        if not settings.base_url:
            raise DiffuserError(
                "the llm diffuser has no server configured",
                hint="set NARR_LLM_BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama) or [llm] "
                     "base_url in your narr config file; a world's narr.toml cannot set it",
            )
        api_key = None
        if settings.api_key_env:
            api_key = settings.api_key()
            if api_key is None:
                raise DiffuserError(
                    f"the API key variable {settings.api_key_env} is not set",
                    hint=f"export {settings.api_key_env}=..., or drop api_key_env for a local "
                         "server that needs no key",
                )
        url, userinfo = split_userinfo(endpoint(settings.base_url))
        modes: list[str] = list(FORMS)
        remembered = None
        if settings.response_format != "auto":
            modes = [settings.response_format]
        else:
            remembered = servers.recall(url, settings.model).get("form")
            if remembered in FORMS:
                modes = list(FORMS[FORMS.index(remembered):])
        client = cls(url=url, model=settings.model, timeout=settings.timeout, api_key=api_key,
                     temperature=settings.temperature, modes=modes, basic_auth=userinfo,
                     max_tokens=settings.max_tokens, context=settings.context,
                     remembered=remembered if isinstance(remembered, str) else None,
                     auto=settings.response_format == "auto")
        if userinfo and api_key:
            client.notes.append("the user:password in base_url is not sent: the API key is")
        return client

    @property
    def mode(self) -> str:
        return self.modes[0]

    @property
    def enforced(self) -> bool:
        """Whether the server holds the reply to the schema (else the prompt describes it)."""
        return self.mode in ENFORCING

    def headers(self) -> dict[str, str]:
        if self.api_key:
            return {"Authorization": f"Bearer {self.api_key}"}
        if self.basic_auth:
            return {"Authorization": f"Basic {_basic_token(self.basic_auth)}"}
        return {}

    def discover(self, timeout: float = servers.PROBE_TIMEOUT) -> servers.ServerFacts:
        """What the server says of itself (asked once; the kind is remembered for next time)."""
        if self.facts is None:
            known = servers.recall(self.url, self.model).get("kind")
            self.facts = servers.probe(self.url, self.model, self.headers(),
                                       known=known if isinstance(known, str) else None,
                                       timeout=min(timeout, self.timeout))
            if self.facts.kind != known:
                servers.remember(self.url, self.model, kind=self.facts.kind)
            if self.facts.kind != "ollama" and "ollama_format" in self.modes[1:]:
                self.modes.remove("ollama_format")  # Ollama's own endpoint, nowhere else
        return self.facts

    def context_size(self) -> tuple[int | None, str]:
        """The model's context in tokens and where narr has it from (None: nobody says)."""
        if self.context is not None:
            return self.context, "[llm] context"
        facts = self.discover()
        return facts.context, facts.source

    def complete(self, messages: list[dict[str, str]], schema: dict[str, Any], *,
                 max_tokens: int | None = None) -> Reply:
        """Send the conversation; step down the JSON forms while the server rejects them.

        Whatever comes back, reply or error, has the credentials taken out first: a
        server (or a proxy) that echoes the Authorization header must not get the key
        printed, nor kept with a failed event under ``.git/narr/failed/``.
        """
        try:
            reply = self._complete(messages, schema, max_tokens or self.max_tokens)
        except DiffuserError as exc:
            raise redacted(exc, self.secrets()) from None
        hide = self.secrets()
        return Reply(content=redact(reply.content, hide, story=True),
                     refusal=redact(reply.refusal, hide, story=True),
                     finish_reason=reply.finish_reason, body=redact(reply.body, hide),
                     prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens)

    def secrets(self) -> list[str]:
        """What must never be shown: the key, and base_url's user:password in every form."""
        out = [self.api_key or ""]
        if self.basic_auth:
            _user, _, password = self.basic_auth.partition(":")
            out += [self.basic_auth, password, _basic_token(self.basic_auth)]
        return [s for s in out if len(s) >= MIN_SECRET]

    def _complete(self, messages: list[dict[str, str]], schema: dict[str, Any],
                  max_tokens: int) -> Reply:
        deadline = time.monotonic() + self.timeout  # for the whole answer, retries included
        self._only_where_it_is_spoken()
        while True:
            try:
                reply = self._retrying(deadline)(
                    self._post, self._body(messages, schema, max_tokens), deadline)
            except _Broken as broken:
                raise broken.error from None
            except _HTTPFailure as failure:
                if len(self.modes) > 1 and failure.may_be_about_format():
                    self.notes.append(f"the server rejected response_format {self.mode} "
                                      f"(HTTP {failure.status}); using {self.modes[1]}")
                    self.modes.pop(0)
                    self._only_where_it_is_spoken()
                    continue
                if (self.token_field == "max_tokens" and failure.status == 400
                        and "max_completion_tokens" in failure.body):
                    self.token_field = "max_completion_tokens"  # OpenAI's reasoning models
                    continue
                raise failure.error(self.url, self.context_size if failure.overflow() else None) \
                    from None
            if self.auto and self.mode != self.remembered:
                servers.remember(self.url, self.model, form=self.mode)
                self.remembered = self.mode
            return reply

    def _only_where_it_is_spoken(self) -> None:
        """Ollama's own request goes to Ollama only (a form remembered for an address that
        another server answers now is passed over, as a form the user forces is not)."""
        if self.mode == "ollama_format" and len(self.modes) > 1 and self.discover().kind != "ollama":
            self.modes.pop(0)

    def _retrying(self, deadline: float) -> tenacity.Retrying:
        """Ask again after a 429, a 5xx or a connection reset, as long as the deadline allows.

        A rate limit or a server restarting behind a proxy passes within seconds, and
        failing the event for it would only make the user type ``--retry``. The waits
        grow (``RETRY_WAIT`` doubled, with jitter), a ``Retry-After`` the server sends
        is honoured, and no wait runs past the timeout: then the last error stands.
        """
        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, _Broken):
                return True
            if not isinstance(exc, _HTTPFailure) or not exc.transient():
                return False
            return not (len(self.modes) > 1 and exc.may_be_about_format())  # stepping down first

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            after = getattr(exc, "retry_after", None)
            if after is not None:
                return float(after)
            grown = RETRY_WAIT * 2.0 ** (state.attempt_number - 1)
            return min(grown, MAX_RETRY_WAIT) + random.uniform(0, RETRY_WAIT)

        def stop(state: tenacity.RetryCallState) -> bool:
            return (state.attempt_number >= MAX_ATTEMPTS
                    or time.monotonic() + state.upcoming_sleep >= deadline)

        def noted(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            what = f"HTTP {exc.status}" if isinstance(exc, _HTTPFailure) else "a broken connection"
            self.notes.append(f"asked the server again after {what} (waited {state.upcoming_sleep:.1f}s)")

        return tenacity.Retrying(
            retry=tenacity.retry_if_exception(retryable), wait=wait, before_sleep=noted,
            stop=stop, reraise=True)

    def _body(self, messages: list[dict[str, str]], schema: dict[str, Any],
              max_tokens: int) -> dict[str, Any]:
        if self.unenforced and not self.enforced and messages and messages[0]["role"] == "system":
            messages = [{**messages[0], "content": messages[0]["content"] + self.unenforced},
                        *messages[1:]]
        if self.mode == "ollama_format":  # Ollama's own chat request
            options: dict[str, Any] = {"num_predict": max_tokens}
            if self.temperature is not None:
                options["temperature"] = self.temperature
            if self.context is not None:
                options["num_ctx"] = self.context
            return {"model": self.model, "messages": messages, "stream": False,
                    "format": bare_schema(schema), "options": options}
        body: dict[str, Any] = {"messages": messages, "stream": False, self.token_field: max_tokens}
        if self.model:
            body["model"] = self.model
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.mode == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "narr_delta", "schema": bare_schema(schema), "strict": False}}
        elif self.mode == "json_object_schema":
            body["response_format"] = {"type": "json_object", "schema": bare_schema(schema)}
        elif self.mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _target(self) -> str:
        if self.mode == "ollama_format":
            return servers.root_of(self.url) + "/api/chat"
        return self.url

    def _post(self, body: dict[str, Any], deadline: float) -> Reply:
        url = self._target()
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": f"narr/{__version__}", **self.headers()}
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        req = urllib.request.Request(url, data=data, headers=headers, method="POST")
        left = deadline - time.monotonic()
        if left <= 0:
            raise self._timeout()
        self.requests += 1
        try:
            # Leaving this block in any way (the timeout, Ctrl-C, an error) closes the
            # connection: urllib closes it when no answer came, the ``with`` once one did.
            with opener(url).open(req, timeout=left) as resp:
                raw = self._read(resp, deadline)
        except urllib.error.HTTPError as exc:
            failure = _HTTPFailure(exc.code, str(exc.reason), _error_body(exc))
            failure.location = exc.headers.get("Location") if exc.headers else None
            failure.retry_after = retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            failure.keyed = bool(self.api_key)
            exc.close()
            raise failure from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise self._timeout() from None
            if isinstance(exc.reason, ConnectionResetError):
                raise self._broken(exc.reason) from None
            raise DiffuserError(
                f"cannot reach the LLM server at {self.url}: {_reason(exc.reason)}",
                hint="is the server running, and is base_url right? (Ollama: "
                     "http://127.0.0.1:11434/v1, llama.cpp: http://127.0.0.1:8080/v1)",
            ) from None
        except TimeoutError:
            raise self._timeout() from None
        except (OSError, http.client.HTTPException) as exc:
            raise self._broken(exc) from None
        if self.mode == "ollama_format":
            return parse_ollama_chat(raw, url)
        return parse_completion(raw, self.url)

    def _broken(self, exc: BaseException) -> _Broken:
        return _Broken(DiffuserError(
            f"the connection to the LLM server at {self.url} broke: {_reason(exc)}"))

    def _read(self, resp: Any, deadline: float) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() > deadline:
                raise self._timeout()
            chunk = resp.read1(1 << 16)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                raise DiffuserError(
                    f"the LLM server at {self.url} sent more than {MAX_REPLY_BYTES >> 20} MB; "
                    "a delta is never that large", hint="check base_url and the model")
            chunks.append(chunk)

    def _timeout(self) -> DiffuserError:
        return DiffuserError(
            f"the LLM server at {self.url} did not answer within {self.timeout:g}s",
            hint="a large model on a small machine needs longer: raise [llm] timeout "
                 "or NARR_LLM_TIMEOUT",
        )


def endpoint(base_url: str) -> str:
    """``http://host:port/v1`` -> ``http://host:port/v1/chat/completions`` (a full URL is kept)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        shown = split_userinfo(base_url)[0] if "@" in parts.netloc else base_url
        raise DiffuserError(f"the llm base_url {shown!r} is not an http:// or https:// URL",
                            hint="e.g. http://127.0.0.1:11434/v1")
    url = base_url.rstrip("/")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


_ANNOTATIONS = frozenset({"title", "description"})
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems", "items"})
_SCHEMA_ONE = frozenset({"items", "additionalProperties", "propertyNames", "not", "if", "then", "else",
                         "contains", "additionalItems", "unevaluatedItems", "unevaluatedProperties"})


def bare_schema(schema: Any) -> Any:
    """The schema without ``title`` and ``description``, at every depth, for ``response_format``.

    Some structured-output backends (outlines-core, behind vLLM) refuse a schema
    that carries them, and they constrain nothing. Only keywords are dropped: a
    property *named* ``title`` stays, and ``const``, ``enum`` and ``default``
    values are data, left as they are. The model still reads the whole schema,
    annotations included, in the system prompt.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            value = {name: bare_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            value = [bare_schema(sub) for sub in value]
        elif key in _SCHEMA_ONE:
            value = bare_schema(value)
        out[key] = value
    return out


MIN_SECRET = 4  # a shorter "secret" would blank out ordinary words wherever it occurs
_AUTH_VALUE = re.compile(r"\b(Bearer|Basic)(\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)


def split_userinfo(url: str) -> tuple[str, str | None]:
    """``http://user:pw@host/v1`` -> (``http://host/v1``, ``"user:pw"``), percent-decoded.

    urllib would take ``user:pw@host`` for the host name; and the URL is printed in
    errors, which must not show the password. So it is sent as a Basic header instead.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, sep, password = userinfo.partition(":")
    creds = unquote(user) + (":" + unquote(password) if sep else "")
    return urlunsplit(parts._replace(netloc=hostport)), creds or None


def _basic_token(userinfo: str) -> str:
    if ":" not in userinfo:
        userinfo += ":"
    return base64.b64encode(userinfo.encode("utf-8")).decode("ascii")


@overload
def redact(text: str, secrets: list[str], *, story: bool = False) -> str: ...


@overload
def redact(text: None, secrets: list[str], *, story: bool = False) -> None: ...


def redact(text: str | None, secrets: list[str], *, story: bool = False) -> str | None:
    """``text`` with every secret (and any ``Bearer ...``/``Basic ...`` value) as ``***``.

    Secrets are also looked for as JSON writes them (``/`` may be ``\\/``), since an
    echo usually arrives inside a JSON error body. In a model's answer (``story``),
    which may become the world, only the secrets themselves are replaced: "Bearer
    of the seal" is prose there, not a header.
    """
    if not text:
        return text
    for secret in sorted(secrets, key=len, reverse=True):
        for form in {secret, json.dumps(secret)[1:-1], json.dumps(secret)[1:-1].replace("/", "\\/")}:
            text = text.replace(form, "***")
    return text if story else _AUTH_VALUE.sub(r"\1\2***", text)


def redacted(exc: DiffuserError, secrets: list[str]) -> DiffuserError:
    """The same error with every secret taken out of what it shows and what is kept of it."""
    def clean(text: str) -> str:
        return redact(text, secrets)

    return DiffuserError(clean(exc.message), hint=clean(exc.hint) if exc.hint else None,
                         details=[clean(d) for d in exc.details],
                         raw_reply=clean(exc.raw_reply) if exc.raw_reply else None)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is reported, never followed: it would carry the key to another address."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:
        return None


def opener(url: str) -> urllib.request.OpenerDirector:
    # A server on this machine is never reached through a proxy, whatever http_proxy says.
    host = urlsplit(url).hostname or ""
    if host in LOOPBACK_HOSTS or host.startswith("127."):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)
    return urllib.request.build_opener(_NoRedirect)


def _reason(reason: object) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__


def _error_body(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read().decode("utf-8", "backslashreplace")  # an error message, for a person
    except (OSError, http.client.HTTPException):
        return ""


def server_message(body: str) -> str:
    """The human part of an error body: ``{"error": {"message": ...}}`` and friends."""
    try:
        obj = safejson.loads(body)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail", obj.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if isinstance(err, str):
            return _clip(err)
    return _clip(" ".join(body.split()))


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


MAX_REPLY_BYTES = 8 << 20

_HINTS = {
    401: "the server wants a key: set [llm] api_key_env to the name of the variable holding it",
    403: "the key was refused: check the variable api_key_env names",
    404: "check base_url (it usually ends in /v1) and the model name",
    429: "the server is rate limiting or out of quota; try again later",
}


RETRY_WAIT = 0.5  # seconds before the first retry, doubled each time (tests set it to 0)
MAX_RETRY_WAIT = 8.0
MAX_ATTEMPTS = 4  # one request and up to three retries, all within the timeout
MAX_RETRY_AFTER = 3600.0


def retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds: delta-seconds or an HTTP date; None if neither."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class _Broken(Exception):
    """The connection broke mid-exchange (a reset, a hang-up): worth asking again."""

    def __init__(self, error: DiffuserError) -> None:
        super().__init__(error.message)
        self.error = error


class _HTTPFailure(Exception):
    def __init__(self, status: int, reason: str, body: str) -> None:
        super().__init__(status)
        self.status = status
        self.reason = reason
        self.body = body
        self.location: str | None = None
        self.retry_after: float | None = None
        self.keyed = False

    def transient(self) -> bool:
        """A rate limit or a server-side failure, which asking again later may get past."""
        return self.status == 429 or self.status >= 500

    def may_be_about_format(self) -> bool:
        """A 400, 422 or 5xx whose body names the JSON mode; asking again without it may work."""
        if self.status not in (400, 422) and self.status < 500:
            return False
        return any(w in self.body.lower() for w in _FORMAT_WORDS)

    def overflow(self) -> bool:
        """A 4xx whose body says the prompt does not fit the model's context."""
        return 400 <= self.status < 500 and bool(_OVERFLOW.search(self.body))

    def error(self, url: str,
              context: Callable[[], tuple[int | None, str]] | None = None) -> DiffuserError:
        detail = server_message(self.body)
        hint = _HINTS.get(self.status)
        if self.status == 401 and self.keyed:
            hint = _HINTS[403]
        if 300 <= self.status < 400:
            hint = (f"the server redirects to {self.location or 'another address'}; narr does not "
                    "follow redirects (they would carry your key): put the final URL in base_url")
        if context is not None:
            size, source = context()
            told = f" (it has {size} tokens, by {source})" if size else ""
            hint = (f"the prompt and the reply do not fit the model's context{told}: "
                    f"{CONTEXT_FIX}")
        if hint is None and self.status >= 500:
            hint = "the server failed; its own log may say why"
        if self.retry_after and hint:
            hint += f" (it asked to wait {self.retry_after:g}s)"
        return DiffuserError(
            f"the LLM server answered HTTP {self.status} {self.reason}" + (f": {detail}" if detail else ""),
            hint=hint, details=[f"POST {url}"], raw_reply=self.body[:MAX_KEPT_BODY] or None,
        )


CONTEXT_FIX = ("give the model a larger context (llama-server -c 4096; Ollama: "
               "OLLAMA_CONTEXT_LENGTH=4096 or PARAMETER num_ctx 4096; LM Studio: the model's "
               "context length when it loads), or lower [llm] max_tokens; [llm] context tells "
               "narr the size where the server does not")


def _usage(obj: dict[str, Any], prompt: str, completion: str) -> tuple[int | None, int | None]:
    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    return count(obj.get(prompt)), count(obj.get(completion))


def parse_completion(raw: bytes, url: str) -> Reply:
    """The first choice of a chat-completions answer; anything else is called garbage, clearly."""
    text = _utf8(raw, url)

    def garbage(why: str) -> DiffuserError:
        return DiffuserError(
            f"the LLM server's answer is not a chat completion: {why}",
            hint=f"is {url} an OpenAI-compatible chat-completions endpoint? (base_url usually ends in /v1)",
            raw_reply=text[:MAX_KEPT_BODY] or None,
        )

    try:
        obj = safejson.loads(text)
    except safejson.JSONLimitError:
        raise garbage("its JSON nests deeper than narr reads") from None
    except ValueError:
        raise garbage(f"it is not JSON ({_clip(' '.join(text.split()), 80)!r})") from None
    if not isinstance(obj, dict):
        raise garbage("it is not a JSON object")
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        if "error" in obj:
            raise DiffuserError(f"the LLM server reported an error: {server_message(text)}",
                                raw_reply=text[:MAX_KEPT_BODY])
        raise garbage("it has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise garbage("its first choice has no message")
    content = message.get("content")
    if isinstance(content, list):  # content parts, as some servers send them
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    refusal = message.get("refusal")
    finish = choice.get("finish_reason")
    usage = obj.get("usage")
    prompt_tokens, completion_tokens = _usage(usage, "prompt_tokens", "completion_tokens") \
        if isinstance(usage, dict) else (None, None)
    return Reply(content=content if isinstance(content, str) else None,
                 refusal=refusal if isinstance(refusal, str) and refusal.strip() else None,
                 finish_reason=finish if isinstance(finish, str) else None,
                 body=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def parse_ollama_chat(raw: bytes, url: str) -> Reply:
    """Ollama's own chat answer (``message``, ``done_reason``, ``prompt_eval_count``) as a Reply."""
    text = _utf8(raw, url)
    try:
        obj = safejson.loads(text)
    except ValueError:
        obj = None
    message = obj.get("message") if isinstance(obj, dict) else None
    if not isinstance(obj, dict) or not isinstance(message, dict):
        if isinstance(obj, dict) and "error" in obj:
            raise DiffuserError(f"the LLM server reported an error: {server_message(text)}",
                                raw_reply=text[:MAX_KEPT_BODY])
        raise DiffuserError(
            "the LLM server's answer is not an Ollama chat answer: it has no message",
            hint=f"is {url} Ollama's /api/chat? response_format = \"json_schema\" uses the "
                 "OpenAI-compatible endpoint instead", raw_reply=text[:MAX_KEPT_BODY] or None)
    content = message.get("content")
    reason = obj.get("done_reason")
    prompt_tokens, completion_tokens = _usage(obj, "prompt_eval_count", "eval_count")
    return Reply(content=content if isinstance(content, str) else None, refusal=None,
                 finish_reason=reason if isinstance(reason, str) else None, body=text,
                 prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def _utf8(raw: bytes, url: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DiffuserError(
            f"the LLM server's answer is not UTF-8 text (byte {exc.start})",
            hint=f"is {url} an OpenAI-compatible chat-completions endpoint? They answer in UTF-8",
            raw_reply=raw.decode("utf-8", "backslashreplace")[:MAX_KEPT_BODY],
        ) from None
