"""``exec``: an external program of the user's proposes the delta.

The program reads one JSON request on stdin (:class:`~narrative.diffusers.
exec_protocol.ExecRequest`) and prints one JSON answer on stdout: a delta, or a
proposal with a ``"delta"`` key. It can be written in any language and needs no
part of narr. Its answer goes through the same validation as every diffuser's.

The command comes only from the user's own configuration or command line, never
from the world: a world is tracked and cloned, and cloning someone's world must
never run their code. So a relative command (``./x.sh``) names a file next to the
user's config file, never one in narr's working directory, which may be the
world's root (:func:`~narrative.userconfig.resolve_command`). It runs without a
shell, in its own process group so a timeout stops it and anything it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from narrative import invocation, safejson
from narrative.diffusers.base import Proposal, register
from narrative.diffusers.context import build_context
from narrative.diffusers.exec_protocol import PROTOCOL_VERSION, ExecProposal
from narrative.errors import DiffuserError
from narrative.model import Delta
from narrative.nodefile import json_problem
from narrative.userconfig import ExecSettings, config_path, load_user_config, resolve_command

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.delta.world import World

MAX_KEPT_OUTPUT = 20_000
MAX_OUTPUT = 8 << 20  # bytes of stdout (or stderr) narr reads from the program
EXIT_GRACE = 0.5  # seconds for the pipes to drain once the program has exited
STDERR_NOTES = 5


class ExecDiffuser:
    """Runs the configured program; ``command`` (e.g. from a command-line flag) overrides it."""

    name = "exec"

    def __init__(self, settings: ExecSettings | None = None,
                 command: str | Sequence[str] | None = None) -> None:
        self._settings = settings
        self._command = command

    def settings(self) -> ExecSettings:
        base = self._settings if self._settings is not None else load_user_config().exec
        if self._command is not None:
            command = self._command if isinstance(self._command, str) else list(self._command)
            base = ExecSettings.model_validate({"command": command, "timeout": base.timeout})
            if base.command:
                base = base.model_copy(update={"command": resolve_command(
                    base.command, config_path().parent)})
        return base

    def propose(self, world: World, request: EventRequest) -> Proposal:
        settings = self.settings()
        if not settings.command:
            raise DiffuserError(
                "the exec diffuser has no command to run",
                hint="set NARR_EXEC_COMMAND or [exec] command in your narr config file; "
                     "a world's narr.toml cannot set it",
            )
        payload = request_json(world, request)
        out, err = run(settings.command, payload, settings.timeout,
                       env={"NARR_WORLD": str(world.root)})
        return read_answer(settings.command, out, err)


def request_json(world: World, request: EventRequest) -> dict[str, Any]:
    """The document the program reads (``schemas/exec-request.schema.json``)."""
    pack = build_context(world, request).to_json()
    return {"protocol": PROTOCOL_VERSION, "render": request.render,
            "explicit": request.delta.model_dump(mode="json"), **pack}


def run(command: list[str], payload: dict[str, Any], timeout: float,
        env: dict[str, str] | None = None) -> tuple[str, str]:
    """Run the program with ``payload`` on stdin; (stdout, stderr) of a clean exit, else an error.

    The program runs in its own process group, which is stopped when the program
    ends (or times out, or floods its output): a child it left running would
    otherwise hold the pipes open and outlive the event.
    """
    quoted = f'"{_prog(command)}"'
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**invocation.environ(), **(env or {})},
                                cwd=invocation.cwd(), start_new_session=True)
    except OSError as exc:
        raise DiffuserError(f"cannot run the exec command {quoted}: {exc.strerror or exc}",
                            hint="check NARR_EXEC_COMMAND or [exec] command in your narr config file",
                            ) from None
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = _Drain(proc.stdout, proc), _Drain(proc.stderr, proc)
    feeder = threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True)
    for thread in (feeder, out.thread, err.thread):
        thread.start()
    try:
        proc.wait(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    if not timed_out:
        out.thread.join(EXIT_GRACE)  # what the program printed just before it exited
        err.thread.join(EXIT_GRACE)
    _stop(proc)
    proc.wait()
    for drain in (out, err):
        drain.thread.join(EXIT_GRACE)
        if not drain.thread.is_alive():  # else a process that left the group holds it: let go
            drain.pipe.close()
    raw_out, stderr = out.data(), _shown(err.data())
    stdout = _shown(raw_out)  # for the errors below; a clean answer must be UTF-8 (at the end)
    if timed_out:
        raise DiffuserError(
            f"the exec command {quoted} did not finish within {timeout:g}s and was stopped",
            details=[f"stderr: {line}" for line in _tail(stderr)],
            hint="raise [exec] timeout or NARR_EXEC_TIMEOUT if it needs longer",
            raw_reply=stdout[:MAX_KEPT_OUTPUT] or None,
        )
    if out.overflow or err.overflow:
        raise DiffuserError(
            f"the exec command {quoted} printed more than {MAX_OUTPUT >> 20} MB and was stopped; "
            "a delta is never that large", raw_reply=stdout[:MAX_KEPT_OUTPUT] or None)
    if proc.returncode != 0:
        if proc.returncode < 0:
            how = f"was killed by signal {-proc.returncode}"
        else:
            how = f"failed with exit code {proc.returncode}"
        last = _tail(stderr)
        raise DiffuserError(f"the exec command {quoted} {how}" + (f": {last[-1]}" if last else ""),
                            details=[f"stderr: {line}" for line in last] if len(last) > 1 else [],
                            raw_reply=stdout[:MAX_KEPT_OUTPUT] or None)
    try:
        return raw_out.decode("utf-8"), stderr
    except UnicodeDecodeError as exc:
        raise DiffuserError(
            f"the exec command {quoted} printed output that is not UTF-8 text (byte {exc.start})",
            hint="it must print one JSON document, encoded as UTF-8, on stdout",
            raw_reply=stdout[:MAX_KEPT_OUTPUT] or None) from None


class _Drain:
    """Read a pipe to the end in a thread, keeping at most ``MAX_OUTPUT`` bytes."""

    def __init__(self, pipe: IO[bytes], proc: subprocess.Popen[bytes]) -> None:
        self.pipe, self.proc = pipe, proc
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflow = False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while chunk := self.pipe.read1(1 << 16):  # type: ignore[attr-defined]
                with self.lock:
                    if self.size + len(chunk) > MAX_OUTPUT:
                        self.overflow = True
                        _stop(self.proc)
                        return
                    self.chunks.append(chunk)
                    self.size += len(chunk)
        except (OSError, ValueError):
            return

    def data(self) -> bytes:
        with self.lock:
            return b"".join(self.chunks)


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError):
        pass  # the program did not read its request: its answer says the rest
    finally:
        with contextlib.suppress(OSError):
            pipe.close()


def read_answer(command: list[str], out: str, err: str) -> Proposal:
    """The program's stdout as a proposal; anything that is not one is refused with the reason."""
    prog = _prog(command)
    quoted = f'"{prog}"'
    kept = out[:MAX_KEPT_OUTPUT] or None
    try:
        obj = safejson.loads(out)
    except (ValueError, RecursionError) as exc:
        what = "printed nothing" if not out.strip() else f"printed something that is not JSON ({exc})"
        raise DiffuserError(f"the exec command {quoted} {what}",
                            details=[f"stderr: {line}" for line in _tail(err)],
                            hint="it must print one JSON delta on stdout (schemas/exec-response.schema.json)",
                            raw_reply=kept) from None
    problem = json_problem(obj)
    if problem:
        raise DiffuserError(f"the exec command {quoted} printed an invalid delta: {problem}",
                            raw_reply=kept, hint="see schemas/exec-response.schema.json")
    try:
        if isinstance(obj, dict) and "delta" in obj:
            answer = ExecProposal.model_validate(obj)
        else:
            answer = ExecProposal(delta=Delta.model_validate(obj))
    except ValidationError as exc:
        lines = [f"/{'/'.join(str(p) for p in e['loc'])}: {e['msg'].removeprefix('Value error, ')}"
                 for e in exc.errors(include_url=False)]
        raise DiffuserError(f"the exec command {quoted} printed an invalid delta: {lines[0]}"
                            + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""),
                            details=lines, raw_reply=kept,
                            hint="see schemas/exec-response.schema.json") from None
    notes = [f"{prog} proposed {len(answer.delta.ops)} operation(s)", *answer.notes,
             *(f"stderr: {line}" for line in _tail(err))]
    return Proposal(delta=answer.delta, narrative_text=answer.narrative_text, causes=answer.causes,
                    notes=notes, raw_reply=kept)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the program and whatever it started (its process group)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except ProcessLookupError:
        pass


def _prog(command: list[str]) -> str:
    return shlex.join(command)


def _shown(data: bytes | None) -> str:
    """Output as text for a person to read: bytes that are not UTF-8 show as ``\\xff``.

    Never U+FFFD, which would silently turn what the program printed into something else.
    """
    return (data or b"").decode("utf-8", "backslashreplace")


def _tail(text: str, n: int = STDERR_NOTES) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()[-n:] if line.strip()]


register("exec", lambda wr: ExecDiffuser())
