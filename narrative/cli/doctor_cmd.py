"""``narr doctor``: what narr depends on, the world's health, and the fix for each problem."""

from __future__ import annotations

from typing import Any

import click

from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_answer, json_option
from narrative.cli.terminal import echo, paint

_MARK = {"ok": "ok", "warning": "warning", "problem": "PROBLEM", "skipped": "skipped"}
_COLOUR = {"warning": "warning", "problem": "old"}


@click.command("doctor")
@click.option("--llm-timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="Seconds to wait for the llm diffuser's server to answer a few tokens (asked only "
                   "when configured; a server may load its model first).")
@json_option
@pass_context
def doctor_cmd(ctx: Context, llm_timeout: float, as_json: bool) -> None:
    """Check the libraries narr needs, the machine and the world here; name each problem's fix.

    git, libgit2 and pygit2, SQLite with FTS5 trigram, Python, the locale, the
    server, the world's history, hand edits and failed events, and the llm
    server when one is configured. Works outside a world and with libraries too
    old to open one. Exits with the exit code of the first problem's kind.

    \b
    Examples:
      narr doctor
      narr doctor --json --llm-timeout 10
    """
    from narrative.engine.doctor import problem_error
    from narrative.operations.upkeep import DOCTOR

    report = ctx.call(DOCTOR, llm_timeout=llm_timeout)
    if as_json:
        emit_answer(report)
    else:
        echo(render(report.to_json()))
    error = problem_error(report.findings)
    if error is not None:
        raise error


def render(data: dict[str, Any]) -> str:
    """The report as text, from its JSON."""
    problems = sum(f["status"] == "problem" for f in data["findings"])
    warnings = sum(f["status"] == "warning" for f in data["findings"])
    head = "narr doctor: " + ("all well" if not problems and not warnings else ", ".join(
        p for p in (f"{problems} problem{'s' * (problems != 1)}" if problems else "",
                    f"{warnings} warning{'s' * (warnings != 1)}" if warnings else "") if p))
    width = max(len(f["name"]) for f in data["findings"])
    lines = [head]
    for f in data["findings"]:
        mark = _MARK[f["status"]]
        if f["status"] in _COLOUR:
            mark = paint(mark, _COLOUR[f["status"]])
        text = f["problem"] if f["status"] in ("problem", "warning") and f["problem"] else (
            f["found"] or f["problem"] or "")
        lines.append(f"  {mark}{' ' * (8 - len(_MARK[f['status']]))} {f['name']:<{width}}  {text}")
        if f["status"] in ("problem", "warning", "skipped") and f["fix"]:
            lines.append(f"  {'':8} {'':<{width}}  fix: {f['fix']}")
    return "\n".join(lines)


COMMANDS = [doctor_cmd]
