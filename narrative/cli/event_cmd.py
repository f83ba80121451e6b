"""``narr event``: advance the story by one event."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from narrative.cli.completion import complete_node
from narrative.cli.context import Context, pass_context
from narrative.cli.output import (
    emit_json,
    group_listing,
    json_option,
    local_time,
    one_line,
    record_lines,
    short,
    warn,
)
from narrative.cli.terminal import echo

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.engine.event import EventResult
    from narrative.store import WorldRepo


@click.command("event")
@click.argument("content", required=False)
@click.option("--set", "sets", multiple=True, metavar="NODE.FIELD=VALUE",
              help="Set a field (VALUE is JSON when it parses, else text). NODE is an id, a name "
                   "or an alias ('林远.state.mood=calm'); for a name holding dots the longest "
                   "part that names a node wins. In state.location and state.holder a node's "
                   "name or alias becomes its id. Repeatable.")
@click.option("--unset", "unsets", multiple=True, metavar="NODE.FIELD", help="Remove a field.")
@click.option("--relate", "relates", multiple=True, metavar="SRC:TYPE:DST[=ATTRS]",
              help="Add a relation (ATTRS: a JSON object).")
@click.option("--unrelate", "unrelates", multiple=True, metavar="SRC:TYPE:DST",
              help="Remove a relation.")
@click.option("--create", "creates", multiple=True, metavar="FILE.json",
              type=click.Path(dir_okay=False), help="Create a node from a whole node file.")
@click.option("--expire", "expires", multiple=True, metavar="NODE", shell_complete=complete_node,
              help="End a node.")
@click.option("--delta", "delta_file", metavar="FILE|-",
              help="A JSON delta (schemas/delta.schema.json); '-' reads standard input.")
@click.option("--text", "narrative_text", help="The narrative text of the event.")
@click.option("--at", "timestamp", metavar="STORY_TIME", help="When it happens in the story.")
@click.option("--close-scene", is_flag=True, help="This event ends the scene: scene nodes expire.")
@click.option("--dry-run", is_flag=True,
              help="Show what would change (the diffuser's proposal, its notes and refusals); "
                   "record nothing.")
@click.option("--retry", is_flag=True, help="Run the newest failed event again.")
@click.option("--diffuser", "diffuser_name", metavar="NAME",
              help="What turns CONTENT into changes for this event: rules, llm, exec, explicit "
                   "(only the flags' changes). Default: [diffuser] default in narr.toml.")
@click.option("--render", is_flag=True,
              help="Ask the diffuser to write the event's narrative text too (llm, exec).")
@click.option("--accept", "accept", multiple=True, type=click.IntRange(min=1, max=1_000_000),
              metavar="N",
              help="Apply held-back change N after all: the rules hold back what they find under a "
                   "structure they do not know and number it (a dry run lists them). Repeatable.")
@click.option("--large", is_flag=True,
              help="Let the rules read content beyond 256 KB at once (slower; split it if you can).")
@json_option
@pass_context
def event_cmd(ctx: Context, content: str | None, sets: tuple[str, ...], unsets: tuple[str, ...],
              relates: tuple[str, ...], unrelates: tuple[str, ...], creates: tuple[str, ...],
              expires: tuple[str, ...], delta_file: str | None, narrative_text: str | None,
              timestamp: str | None, close_scene: bool, dry_run: bool, retry: bool,
              diffuser_name: str | None, render: bool, accept: tuple[int, ...], large: bool,
              as_json: bool) -> None:
    """Record a story event: CONTENT says what happens; a diffuser and the flags say what it changes.

    CONTENT '-' reads it from standard input (a long passage, a whole scene).

    The world's diffuser (the offline rules by default) reads CONTENT and
    proposes changes; the flags' changes are added and win on the same field.
    Hand edits under world/ are picked up and recorded with the event. Nothing
    is written unless every explicit change is valid; a failed event is kept
    for --retry.

    \b
    Examples:
      narr event "Lin Yuan walks to the ferry"
      narr event "Dusk" --set "Lin Yuan.state.mood=wary" --relate 苏晴:suspects:林远
      narr event - < scene.txt
      narr event --accept 1 "Old Zhou snorts that Lin Yuan went to the ferry"
    """
    from narrative.diffusers.base import default_name, get_diffuser
    from narrative.engine import event as engine
    from narrative.errors import InvalidInputError

    wr = ctx.world
    if retry:
        if (content or sets or unsets or relates or unrelates or creates or expires or delta_file
                or timestamp is not None or narrative_text is not None or close_scene or render
                or accept or large):
            raise click.UsageError("--retry takes no content, changes, --at, --text, --close-scene, "
                                   "--render, --accept or --large: it reruns the kept event as it was "
                                   "asked")
        chosen = get_diffuser(diffuser_name, wr) if diffuser_name else None
        result = engine.retry(wr, dry_run=dry_run, diffuser=chosen)
    else:
        if content == "-":
            if delta_file == "-":
                raise click.UsageError("standard input can be the content or the --delta, not both")
            try:
                content = sys.stdin.buffer.read().decode("utf-8-sig").strip()
            except UnicodeDecodeError as exc:
                raise InvalidInputError(f"<stdin>: not UTF-8 text (byte {exc.start})") from None
        if not content:
            raise click.UsageError("say what happens: narr event \"Lin Yuan walks to the ferry\"")
        if timestamp is not None and not timestamp.strip():
            raise click.UsageError("--at needs a story time (\"Day 3, dusk\"); leave it out for none")
        name = diffuser_name or default_name(wr)
        diffuser = get_diffuser(name, wr)
        with engine.names_then_event(wr):
            try:
                request = _request(wr, content, sets, unsets, relates, unrelates, creates,
                                   expires, delta_file, narrative_text, timestamp, close_scene)
            except InvalidInputError as exc:
                if not dry_run and (delta_file not in (None, "-") or creates):
                    # a file named on the command line could not be read: the words are kept
                    from narrative.delta.request import EventRequest

                    typed = EventRequest(content=content, narrative_text=narrative_text,
                                         timestamp=timestamp, close_scene=close_scene,
                                         diffuser=name)
                    engine.keep_unread(wr, typed, exc, _typed_changes(
                        sets, unsets, relates, unrelates, creates, expires, delta_file))
                raise
            request.diffuser = name
            request.render = render
            request.accept = sorted(set(accept))
            request.large = large
            result = engine.run_event(wr, request, dry_run=dry_run, diffuser=diffuser)
    _print_result(wr, result, as_json)


def _typed_changes(sets: tuple[str, ...], unsets: tuple[str, ...], relates: tuple[str, ...],
                   unrelates: tuple[str, ...], creates: tuple[str, ...], expires: tuple[str, ...],
                   delta_file: str | None) -> list[str]:
    """The change flags as they were typed, to type them again."""
    out: list[str] = []
    for flag, values in (("--set", sets), ("--unset", unsets), ("--relate", relates),
                         ("--unrelate", unrelates), ("--create", creates), ("--expire", expires),
                         ("--delta", (delta_file,) if delta_file is not None else ())):
        for value in values:
            out += [flag, value]
    return out


def _print_result(wr: WorldRepo, result: EventResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_json(), "event")
        return
    for message in result.warnings:
        warn(message)
    rec = result.to_json()
    head = f"[{wr.branch()} {short(result.commit)}]" if result.commit else "[dry run: nothing recorded]"
    echo(f"{head} {one_line(rec['content'])}")
    for line in record_lines(rec, expired=result.expired):
        echo(line)
    for line in rendered_lines(rec, result.rendered_text):
        echo(line)
    for line in proposal_lines(rec.get("proposal")):
        echo(line)


def rendered_lines(rec: dict[str, Any], rendered: str | None) -> list[str]:
    """The narrative text the diffuser wrote (``--render``), when the event kept it.

    Text given with ``--text`` wins over a rendered one and is not echoed back.
    """
    text = rec.get("narrative_text")
    if not rendered or not text or text != rendered:
        return []
    return ["text:", *(f"  {line}" if line.strip() else "" for line in text.strip().splitlines())]


def proposal_lines(proposal: dict[str, Any] | None) -> list[str]:
    """The diffuser's side of the story: what fired, what the arbiter decided, what was refused,
    and the changes it held back, each with the command that applies it."""
    if not proposal:
        return []
    lines = []
    if proposal.get("notes"):
        lines += [f"{proposal['diffuser']}:", *(f"  {note}" for note in proposal["notes"])]
    held = proposal.get("held") or []
    if held:
        lines.append("held back (not written; narr is not sure the words say so):")
        for h in held:
            lines.append(f"  {h['n']}. {h['words']!r}: {h['reason']}")
            lines.append(f"     apply it: {h['command']}")
    return lines


def _request(wr: WorldRepo, content: str, sets: tuple[str, ...], unsets: tuple[str, ...],
             relates: tuple[str, ...], unrelates: tuple[str, ...], creates: tuple[str, ...],
             expires: tuple[str, ...], delta_file: str | None, narrative_text: str | None,
             timestamp: str | None, close_scene: bool) -> EventRequest:
    from narrative.delta import flags
    from narrative.delta.parse import read_delta
    from narrative.delta.request import EventRequest
    from narrative.errors import InvalidInputError
    from narrative.invocation import absolute

    delta = None
    if delta_file is not None:
        if delta_file == "-":
            data = sys.stdin.buffer.read()
            delta = read_delta("<stdin>", data)
        else:
            try:
                with open(absolute(delta_file), "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                raise InvalidInputError(f"--delta {delta_file}: cannot read ({exc.strerror})") from None
            delta = read_delta(delta_file, data)
    from narrative.engine.naming import Names

    create_ops = []
    for path in creates:
        try:
            data = absolute(path).read_bytes()
        except OSError as exc:
            raise InvalidInputError(f"--create {path}: cannot read ({exc.strerror})") from None
        create_ops.append(flags.node_file_op(path, data))
    _refuse_bad_escapes("--set", [spec.partition("=")[0] for spec in sets], sets)
    _refuse_bad_escapes("--unset", list(unsets), unsets)
    names = Names(wr) if (sets or unsets or relates or unrelates or expires) else None
    merged = flags.build_delta(delta=delta, creates=create_ops, sets=sets, unsets=unsets,
                               relates=relates, unrelates=unrelates, expires=expires, names=names,
                               references=set(wr.config.reference_labels))
    return EventRequest(content=content, delta=merged, narrative_text=narrative_text,
                        timestamp=timestamp, close_scene=close_scene)


def _refuse_bad_escapes(flag: str, targets: list[str], specs: Any) -> None:
    """``ID/a~2b`` is no JSON pointer (only ``~0`` and ``~1`` are escapes): say so.

    The dotted form (``ID.a~2b``) names keys literally, so only a path written
    with slashes is a pointer to check.
    """
    from narrative.errors import InvalidInputError
    from narrative.fields import escape_problem

    for target, spec in zip(targets, specs, strict=True):
        slash, dot = target.find("/"), target.find(".")
        if slash < 0 or 0 <= dot < slash:
            continue
        problem = escape_problem(target[slash:])
        if problem:
            raise InvalidInputError(f"{flag} {spec!r}: {problem}")


@click.group("failed", invoke_without_command=True)
@json_option
@click.pass_context
def failed_cmd(click_ctx: click.Context, as_json: bool) -> None:
    """Events that could not be recorded, kept with their error; newest first.

    \b
    Example:
      narr failed
    """
    from narrative.engine.failed import listing

    for item in group_listing(click_ctx, as_json, listing, "No failed events kept.", "failed"):
        via = f" (diffuser {item['diffuser']})" if item["diffuser"] else ""
        words = item["content"] if len(item["content"]) <= 70 else item["content"][:69] + "…"
        echo(f"{item['n']:>3}  {local_time(item['saved_at'])}  {words!r}{via}")
        echo(f"       {item['error']}")
        for line in [d for d in item["details"] if d not in item["error"]][:5]:
            echo(f"         {line}")
        if item["raw_reply"]:
            echo(f"       raw reply kept: {len(item['raw_reply'])} characters (--json shows it)")


@failed_cmd.command("retry")
@click.argument("which", default="1")
@click.option("--dry-run", is_flag=True, help="Show what it would change; record nothing.")
@click.option("--diffuser", "diffuser_name", metavar="NAME",
              help="Run it through this diffuser instead of the one it named.")
@json_option
@pass_context
def failed_retry_cmd(ctx: Context, which: str, dry_run: bool, diffuser_name: str | None,
                     as_json: bool) -> None:
    """Run failed event WHICH (number from 'narr failed', default 1: the newest) again.

    \b
    Examples:
      narr failed retry
      narr failed retry 2 --diffuser rules
    """
    from narrative.diffusers.base import get_diffuser
    from narrative.engine import event as engine

    wr = ctx.world
    chosen = get_diffuser(diffuser_name, wr) if diffuser_name else None
    _print_result(wr, engine.retry(wr, which, dry_run=dry_run, diffuser=chosen), as_json)


@failed_cmd.command("drop")
@click.argument("which")
@json_option
@pass_context
def failed_drop_cmd(ctx: Context, which: str, as_json: bool) -> None:
    """Forget failed event WHICH for good (its words are printed one last time).

    \b
    Example:
      narr failed drop 1
    """
    from narrative.engine import failed

    item = failed.pick(ctx.world, which)
    failed.discard(ctx.world, item.key)
    if as_json:
        emit_json({"dropped": failed.summary(item)}, "failed_dropped")
    else:
        echo(f"Dropped the failed event {item.request.content!r}")


COMMANDS = [event_cmd, failed_cmd]
