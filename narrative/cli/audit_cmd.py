"""``narr audit``: check a chapter draft against the world before it becomes events."""

from __future__ import annotations

from typing import Any

import click

from narrative.cli.context import Context, InputFile, pass_context
from narrative.cli.output import emit_answer, json_option, short, value_text, warn
from narrative.cli.terminal import echo


def finding_lines(f: dict[str, Any]) -> list[str]:
    from narrative.engine.audit import CHECKS

    value = value_text(f["value"]) if f["present"] else "(absent)"
    if f["check"] == "require":
        why = f"(rule {f['rule']}, {f['source']}) needs {f['requirement']}"
    else:
        why = f"({CHECKS[f['check']]})"
    lines = [f"sentence {f['number']}: {f['sentence']}", f"  {f['words']!r} {why}",
             f"  {f['node']} {f['field'] or '(the whole node)'} = {value}"]
    if f["fact"]:
        lines.append(f"  {f['fact']}")
    return lines


def draft_name(file: Any) -> str:
    name = getattr(file, "name", "-")
    return "stdin" if name in ("-", "<stdin>") else str(name)


def read_draft(file: Any) -> str:
    """A chapter draft's text from FILE or standard input, refused from its size before it is
    read whole when it is beyond what narr reads in one."""
    from narrative.engine.audit import read_chapter
    from narrative.store import MAX_TEXT, read_bounded_stream

    name = draft_name(file)
    return read_chapter(read_bounded_stream(file, MAX_TEXT, label=name, what="chapter"),
                        name)


@click.command("audit")
@click.argument("file", type=InputFile("rb"))
@click.option("--at", "at", metavar="REV",
              help="Check against the world as it stood at a revision or event.")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Stop past this many seconds (default 120), naming how far it read.")
@json_option
@pass_context
def audit_cmd(ctx: Context, file: Any, at: str | None, budget: float | None, as_json: bool) -> None:
    """Check a chapter draft (FILE, or - for stdin) for continuity with the world.

    Each sentence is simulated, in order, as a dry-run rules event on a copy of the
    world (the world as it stands, or --at REV), and every action the world
    contradicts at that point is listed with the fact behind it: a rule's
    precondition (require) the world does not meet, a dead character acting or
    speaking, an ended thing used or present, a thing passed between two people in
    different places, a secret told by someone who does not know it. A secret
    learnt by someone who knew it already is a note. Nothing is written. Exits 20
    when something contradicts the world, 0 when the chapter is consistent with it,
    22 when it runs past its time budget (--budget).

    \b
    Examples:
      narr audit chapter-21.md
      narr audit - --at HEAD~2 < draft.md
    """
    from narrative.cli.rows import row
    from narrative.errors import ContinuityError

    report = ctx.call(row("reads", "audit"), text=read_draft(file), at=at, budget=budget)
    for message in report.warnings:
        warn(message)
    d = report.to_json()
    if as_json:
        emit_answer(report)
    else:
        for f in d["findings"]:
            for line in finding_lines(f):
                echo(line)
        for f in d["notes"]:
            echo(f"note: sentence {f['number']}: {f['message']}: {f['fact']}")
        where = f"{at} ({short(d['commit'])})" if at else short(d["commit"])
        n, s = len(d["findings"]), d["sentences"]
        if n:
            echo(f"{n} contradiction{'' if n == 1 else 's'} in {s} sentence"
                       f"{'' if s == 1 else 's'}, against the world at {where}")
        else:
            echo(f"ok: {s} sentence{'' if s == 1 else 's'}, nothing contradicts the world "
                       f"at {where}")
    if not report.ok:
        first = report.findings[0]
        raise ContinuityError(
            f"the chapter contradicts the world {len(report.findings)} time(s); first in "
            f"sentence {first['number']}: {first['message']}")


COMMANDS = [audit_cmd]
