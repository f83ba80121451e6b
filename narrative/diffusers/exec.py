"""``exec``: an external program of the user's proposes the delta.

The program reads one JSON request on stdin (:class:`~narrative.diffusers.
exec_protocol.ExecRequest`) and prints one JSON answer on stdout: a delta, or a
proposal with a ``"delta"`` key. It can be written in any language and needs no
part of narr. Its answer goes through the same validation as every diffuser's.

The command comes only from the user's own configuration or command line, never
from the world: a world is tracked and cloned, and cloning someone's world must
never run their code. It runs without a shell, in narr's own working directory
(so a relative path can never name a script inside the world), in its own process
group so a timeout stops it and anything it started.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from narrative.diffusers.base import Proposal, register
from narrative.diffusers.context import build_context
from narrative.diffusers.exec_protocol import PROTOCOL_VERSION, ExecProposal
from narrative.errors import DiffuserError
from narrative.model import Delta
from narrative.nodefile import json_problem
from narrative.userconfig import ExecSettings, load_user_config

if TYPE_CHECKING:
    from narrative.engine.pending import EventRequest
    from narrative.world import WorldView

MAX_KEPT_OUTPUT = 20_000
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
        return base

    def propose(self, view: WorldView, request: EventRequest) -> Proposal:
        settings = self.settings()
        if not settings.command:
            raise DiffuserError(
                "the exec diffuser has no command to run",
                hint="set NARR_EXEC_COMMAND or [exec] command in your narr config file; "
                     "a world's narr.toml cannot set it",
            )
        payload = request_json(view, request)
        out, err = run(settings.command, payload, settings.timeout,
                       env={"NARR_WORLD": str(view.wr.root)})
        return read_answer(settings.command, out, err)


def request_json(view: WorldView, request: EventRequest) -> dict[str, Any]:
    """The document the program reads (``schemas/exec-request.schema.json``)."""
    pack = build_context(view, request).to_json()
    return {"protocol": PROTOCOL_VERSION, "render": request.render,
            "explicit": request.delta.model_dump(mode="json"), **pack}


def run(command: list[str], payload: dict[str, Any], timeout: float,
        env: dict[str, str] | None = None) -> tuple[str, str]:
    """Run the program with ``payload`` on stdin; (stdout, stderr) of a clean exit, else an error."""
    quoted = f'"{_prog(command)}"'
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
                                start_new_session=True)
    except OSError as exc:
        raise DiffuserError(f"cannot run the exec command {quoted}: {exc.strerror or exc}",
                            hint="check NARR_EXEC_COMMAND or [exec] command in your narr config file",
                            ) from None
    try:
        out_b, err_b = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        try:
            out_b, err_b = proc.communicate(timeout=1)
        except subprocess.TimeoutExpired:  # something escaped the group and holds the pipes
            out_b, err_b = b"", b""
        raise DiffuserError(
            f"the exec command {quoted} did not finish within {timeout:g}s and was stopped",
            details=[f"stderr: {line}" for line in _tail(_text(err_b))],
            hint="raise [exec] timeout or NARR_EXEC_TIMEOUT if it needs longer",
            raw_reply=_text(out_b)[:MAX_KEPT_OUTPUT] or None,
        ) from None
    out, err = _text(out_b), _text(err_b)
    if proc.returncode != 0:
        if proc.returncode < 0:
            how = f"was killed by signal {-proc.returncode}"
        else:
            how = f"failed with exit code {proc.returncode}"
        last = _tail(err)
        raise DiffuserError(f"the exec command {quoted} {how}" + (f": {last[-1]}" if last else ""),
                            details=[f"stderr: {line}" for line in last] if len(last) > 1 else [],
                            raw_reply=out[:MAX_KEPT_OUTPUT] or None)
    return out, err


def read_answer(command: list[str], out: str, err: str) -> Proposal:
    """The program's stdout as a proposal; anything that is not one is refused with the reason."""
    prog = _prog(command)
    quoted = f'"{prog}"'
    kept = out[:MAX_KEPT_OUTPUT] or None
    try:
        obj = json.loads(out)
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


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", "replace")


def _tail(text: str, n: int = STDERR_NOTES) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()[-n:] if line.strip()]


register("exec", lambda wr: ExecDiffuser())
