"""``narr doctor``: is this machine and this world fit for narr, and if not, what fixes each thing.

A writer whose event fails wants to know whether narr, the machine or the world
is at fault before reading a traceback. The doctor looks at each thing narr
depends on, in the order a failure would reach them: the libraries (pygit2 and
libgit2, SQLite with FTS5 trigram, facts from :mod:`narrative.store.environment`),
the git program, Python and the locale, the user's config file, then the world
found at the path (an interrupted write, the server, the history as ``narr check``
proves it, hand edits, a git or narr merge half done, events that failed) and the
llm diffuser's server, asked only when one is configured and only for a few seconds.

Each finding is ``ok``, a ``warning`` (worth knowing, nothing fails) or a
``problem``: a problem carries the kind of error (:mod:`narrative.errors`) the
command it breaks would raise, and the doctor's exit code is the first problem's.
When the libraries fall short the world is not opened at all: opening it is what
they would break. The doctor reads; the one write it may do is what every reader
does, finishing a write a crash interrupted, and it says so.
"""

from __future__ import annotations

import locale
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from narrative import __version__, errors
from narrative.answers import Answer, Shape

if TYPE_CHECKING:  # imported where it is used: opening the store checks pygit2, which may fail
    from narrative.store import ServerState, WorldRepo

Status = Literal["ok", "warning", "problem", "skipped"]
LLM_TIMEOUT = 30.0  # seconds: a served model answers a few tokens well within it, loaded or not


class DoctorFinding(Shape):
    name: str
    status: Status
    found: str | None
    problem: str | None
    fix: str | None
    kind: str | None
    exit_code: int


class DoctorAnswer(Answer):
    """The report as every door answers it. Kept here, not among the other answers, whose
    modules open the store: a doctor must answer where pygit2 itself is what is broken."""

    NAME: ClassVar[str] = "doctor"

    ok: bool
    exit_code: int
    path: str
    world: str | None
    findings: list[DoctorFinding]


@dataclass
class Finding:
    name: str
    status: Status
    found: str | None = None
    problem: str | None = None
    fix: str | None = None
    kind: str | None = None  # for a problem: the error class whose exit code it carries

    @property
    def exit_code(self) -> int:
        if self.status != "problem":
            return 0
        cls = getattr(errors, self.kind or "NarrError", errors.NarrError)
        return int(cls.exit_code)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "found": self.found, "problem": self.problem,
                "fix": self.fix, "kind": self.kind, "exit_code": self.exit_code}


@dataclass
class DoctorReport:
    path: str
    world: str | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "problem"]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def exit_code(self) -> int:
        return self.problems[0].exit_code if self.problems else 0

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "exit_code": self.exit_code, "path": self.path, "world": self.world,
                "findings": [f.to_json() for f in self.findings]}

    def error(self) -> errors.NarrError | None:
        """The first problem as the error its kind is (None: no problem), for a caller that raises."""
        return problem_error(self.findings)


def problem_error(findings: Sequence[Any]) -> errors.NarrError | None:
    """The first of ``findings`` (a report's, or its answer's) that is a problem, as the error its
    kind is, counting the others; None when none is."""
    problems = [f for f in findings if f.status == "problem"]
    if not problems:
        return None
    first = problems[0]
    cls = getattr(errors, first.kind or "NarrError", errors.NarrError)
    more = len(problems) - 1
    error: errors.NarrError = cls(
        f"doctor: {first.problem}" + (f" ({more} more problem{'s' if more > 1 else ''})" if more else ""),
        hint=first.fix)
    return error


def doctor(path: str | os.PathLike[str] = ".", *, llm_timeout: float = LLM_TIMEOUT) -> DoctorReport:
    """Look at everything narr depends on, from the libraries to the world at ``path``."""
    from narrative.store import git_library, git_program, sqlite_library

    report = DoctorReport(str(Path(path).resolve()))
    add = report.findings.append
    add(Finding("python", "ok", f"{sys.version.split()[0]} ({sys.executable})"))
    libraries = [*git_library(), *sqlite_library()]
    for fact in libraries:
        add(_from_fact(fact, "RequirementError"))
    git = git_program()
    add(_from_fact(git, None) if git.ok else Finding("git", "warning", git.found, git.problem, git.fix))
    add(_locale())
    settings = _user_config(add)
    if all(f.ok for f in libraries):
        _world(report, Path(path))
    else:
        add(Finding("world", "skipped", problem="not opened: the libraries above fall short, and "
                    "opening a world is what they would break", fix="fix those first"))
    if settings is not None:
        _llm(settings, add, llm_timeout)
    return report


def _from_fact(fact: Any, kind: str | None) -> Finding:
    if fact.ok:
        return Finding(fact.name, "ok", f"{fact.found} (needs {fact.needed})"
                       if fact.needed != "any" else fact.found)
    return Finding(fact.name, "problem", fact.found, fact.problem, fact.fix, kind)


def _locale() -> Finding:
    """Names and events in Chinese need a UTF-8 locale to print (files are UTF-8 whatever it is)."""
    encoding = locale.getpreferredencoding(False)
    setting = next((f"{k}={os.environ[k]}" for k in ("LC_ALL", "LC_CTYPE", "LANG") if os.environ.get(k)),
                   "no LC_ALL, LC_CTYPE or LANG")
    found = f"{encoding} ({setting})"
    if encoding.lower().replace("-", "") in ("utf8", "utf8mb4") or sys.flags.utf8_mode:
        return Finding("locale", "ok", found)
    return Finding("locale", "warning", found,
                   f"the locale's encoding is {encoding}, not UTF-8: names and text outside it (Chinese, "
                   "accents) may not print", "export LANG=C.UTF-8 (or another UTF-8 locale), or "
                   "PYTHONUTF8=1")


def _user_config(add: Callable[[Finding], None]) -> Any:
    from narrative.userconfig import config_path, load_user_config

    try:
        settings = load_user_config()
    except errors.NarrError as exc:
        add(Finding("config", "problem", str(config_path()), exc.message, exc.hint or
                    f"fix {config_path()}", type(exc).__name__))
        return None
    where = str(settings.path) if settings.path else f"none ({config_path()} does not exist)"
    add(Finding("config", "ok", where))
    return settings


def _world(report: DoctorReport, path: Path) -> None:
    from narrative.store import WorldRepo

    add = report.findings.append
    try:
        wr = WorldRepo.open(path)
    except errors.NotAWorldError as exc:
        add(Finding("world", "skipped", None, exc.message, exc.hint))
        return
    except errors.NarrError as exc:
        add(Finding("world", "problem", None, exc.message, exc.hint, type(exc).__name__))
        return
    with wr:
        report.world = str(wr.root)
        add(Finding("world", "ok", f"{wr.root} ({wr.config.layout}, branch {wr.branch() or 'detached'})"))
        _world_health(wr, add)


def _server_line(server: ServerState) -> str:
    """``running, pid 123, HTTP port 8765; started by a narr command, 74 MiB, idle 3 s``."""
    port = f", HTTP port {server.port}" if server.port else ""
    about = [f"started by {server.started_by}"] if server.started_by else []
    if server.memory_mib is not None:
        about.append(f"{server.memory_mib:.0f} MiB resident")
    if server.idle_s is not None:
        about.append(f"idle {server.idle_s:.0f} s" if server.idle_s < 120
                     else f"idle {server.idle_s / 60:.0f} minutes")
    return f"running, pid {server.pid}{port}" + (f"; {', '.join(about)}" if about else "")


def _world_health(wr: WorldRepo, add: Callable[[Finding], None]) -> None:
    from narrative.engine import failed
    from narrative.engine.check import check
    from narrative.engine.status import status
    from narrative.store import finish_interrupted, is_damage

    note = finish_interrupted(wr)
    add(Finding("journal", "warning", note, f"a narr command was interrupted: {note}",
                "nothing to do: it is finished as any narr command would")
        if note else Finding("journal", "ok", "no interrupted write"))

    server = wr.private.server_state()
    if not server.running:
        add(Finding("server", "ok", "not running (narr serve --status says whether the next "
                                    "command starts one)"))
    elif not server.current:
        add(Finding("server", "warning", f"pid {server.pid}, narr {server.version}",
                    f"a server of other narr code (narr {server.version}, or another Python) "
                    f"runs for this world: narr {__version__} here does not use it",
                    "nothing to do: the next narr command replaces it (narr serve --stop "
                    "stops it now)"))
    elif server.stopped:
        add(Finding("server", "warning", f"pid {server.pid}, stopped",
                    "this world's server is stopped (SIGSTOP or Ctrl-Z): commands run without "
                    "it, slower", f"kill -CONT {server.pid}, or narr serve --stop"))
    else:
        add(Finding("server", "ok", _server_line(server)))

    if wr.read_only():
        add(Finding("writable", "warning", str(wr.private.path),
                    "the world is read-only: narr reads it but cannot record events",
                    "make the world's directory writable, or work in a clone (narr clone)"))

    try:
        wr.require_no_git_operation()
    except errors.ConflictError as exc:
        add(Finding("merge", "problem", None, exc.message, exc.hint, "ConflictError"))

    try:
        report = check(wr, worktree_too=False)
    except Exception as exc:
        if not is_damage(exc):
            raise
        add(Finding("history", "problem", None, f"the repository is damaged: {str(exc).strip(chr(34))}",
                    "git fsck names every damaged object; a clone or a backup has the history",
                    "RepositoryDamagedError"))
    else:
        for message in report.warnings:
            add(Finding("history", "warning", None, message))
        if report.problems:
            first = report.problems[0]
            more = len(report.problems) - 1
            add(Finding("history", "problem", f"{report.events} events, {report.nodes} nodes",
                        str(first) + (f" ({more} more: narr check lists them)" if more else ""),
                        " && ".join(first.fix) if first.fix else "narr check says more; narr adopt "
                        "turns plain git commits into hand edits", "CheckFailedError"))
        else:
            add(Finding("history", "ok", f"{report.events} events explain their commits, "
                        f"{report.nodes} nodes valid"))

    st = status(wr)
    for problem in st.problems:
        add(Finding("hand edits", "problem", None, problem,
                    "fix the file (narr edit NODE opens it); narr status names each problem",
                    "InvalidWorldError"))
    if not st.problems:
        n = len({e["target"] for e in st.edits})
        add(Finding("hand edits", "ok", f"{n} node{'' if n == 1 else 's'} edited by hand, which the "
                    "next event records" if n else "none"))

    kept = failed.load_all(wr)[::-1]
    for n, item in enumerate(kept, 1):
        add(Finding("failed events", "problem", f"{item.saved_at}",
                    f"event {n} of {len(kept)} could not be recorded and is kept: "
                    f"{item.request.content!r}: {item.error}",
                    f"fix what it says, then narr failed retry {n}; or narr failed drop {n}",
                    item.kind or "NarrError"))
    if not kept:
        add(Finding("failed events", "ok", "none"))


def _llm(settings: Any, add: Callable[[Finding], None], timeout: float) -> None:
    """The llm diffuser's server, asked only when a base_url is configured: one tiny real
    request (a few tokens), then whether narr's prompt and the reply fit the model's context."""
    llm = settings.llm
    if not llm.base_url:
        add(Finding("llm", "skipped", "no base_url configured (only the offline diffusers run)"))
        return
    import time

    from narrative.diffusers.chat import ChatClient

    try:
        client = ChatClient.from_settings(llm.model_copy(update={"timeout": timeout}))
    except errors.DiffuserError as exc:
        add(Finding("llm", "problem", None, exc.message, exc.hint, "DiffuserError"))
        return
    client.modes, client.auto = ["none"], False  # the plainest request: is a model there at all?
    started = time.monotonic()
    try:
        client.complete([{"role": "user", "content": "Answer with the one word: ready"}], {},
                        max_tokens=TINY_REPLY)
    except errors.DiffuserError as exc:
        add(Finding("llm", "problem", client.url, exc.message, exc.hint or LLM_FIX, "DiffuserError"))
        return
    facts = client.discover()
    model = client.model or facts.model
    model = f", model {model}" if model else ""
    add(Finding("llm", "ok", f"{client.url} ({facts.kind}{model}) answered a {TINY_REPLY}-token "
                f"request in {time.monotonic() - started:.1f}s"))
    _llm_context(client, add)


TINY_REPLY = 8
LLM_FIX = ("start it (ollama serve, llama-server ...) or fix [llm] base_url in your narr config "
           "(NARR_LLM_BASE_URL)")
SAMPLE_EVENT = "Lin Yuan walks to the ferry"


def _llm_context(client: Any, add: Callable[[Finding], None]) -> None:
    """Whether narr's prompt for a one-sentence event on the sample world, and the reply's room,
    fit the model's context; the fix when they do not."""
    from narrative.diffusers.chat import CONTEXT_FIX
    from narrative.diffusers.llm import MARGIN

    context, source = client.context_size()
    whole, core = sample_prompt_tokens()
    reply = client.max_tokens
    sizes = (f"narr's prompt for a one-sentence event on the sample world: about {whole} tokens "
             f"({core} for the words and the nodes they name), and {reply} for the reply "
             "([llm] max_tokens)")
    if context is None:
        add(Finding("llm context", "warning", sizes,
                    f"the server does not say how large the model's context is ({source}): narr "
                    "cannot refuse a prompt that does not fit before it sends it",
                    "set [llm] context (NARR_LLM_CONTEXT) to the context the model is served with"))
    elif whole + reply + MARGIN <= context:
        add(Finding("llm context", "ok", f"{context} tokens ({source}); {sizes}"))
    elif core + reply + MARGIN <= context:
        add(Finding("llm context", "warning", f"{context} tokens ({source}); {sizes}",
                    f"the model's context ({context} tokens) holds the event and the nodes it names "
                    "but not all around them: narr leaves out what does not fit", CONTEXT_FIX))
    else:
        add(Finding("llm context", "problem", f"{context} tokens ({source}); {sizes}",
                    f"narr's prompt for a one-sentence event (about {core} tokens at the least) and "
                    f"the reply's {reply} do not fit the model's context of {context} tokens: "
                    "every event is refused before it is sent", CONTEXT_FIX, "DiffuserError"))


def sample_prompt_tokens(content: str = SAMPLE_EVENT) -> tuple[int, int]:
    """Tokens narr's prompt for ``content`` on the sample world costs: whole, and its core (the
    words and the nodes they name, which no budget leaves out). Made once per process, on a
    sample world in a temporary directory."""
    if content not in _SAMPLE_PROMPTS:
        _SAMPLE_PROMPTS[content] = _sample_prompt(content)
    return _SAMPLE_PROMPTS[content]


_SAMPLE_PROMPTS: dict[str, tuple[int, int]] = {}


def _sample_prompt(content: str) -> tuple[int, int]:
    import tempfile

    from narrative.delta.request import EventRequest
    from narrative.diffusers import prompt as prompts
    from narrative.diffusers.llm import BRIEF_BUDGET
    from narrative.engine.brief import brief
    from narrative.engine.init import init_world
    from narrative.fields import REFERENCE_LABELS
    from narrative.store import WorldRepo, WorldView, scan_edits

    with tempfile.TemporaryDirectory(prefix="narr-doctor-") as tmp:
        init_world(Path(tmp) / "sample", sample=True)
        wr = WorldRepo.open(Path(tmp) / "sample")
        with wr:
            head = wr.head_commit()
            view = WorldView(wr, head.tree if head else None,
                             scan_edits(wr, head.tree if head else None))
            request = EventRequest(content=content, diffuser="llm")
            request.brief = brief(wr, content, budget=BRIEF_BUDGET, view=view,
                                  include_failed=False).to_json()
            references = list(REFERENCE_LABELS)
            gathered = prompts.gather(view, request, references)
            whole = prompts.build(gathered, request, language=wr.config.language, render=False,
                                  references=references, budget=None)
            core = prompts.build(prompts.Gathered(gathered.named, {}, [], []), request,
                                 language=wr.config.language, render=False, references=references,
                                 budget=None)
    return whole.tokens, core.tokens
