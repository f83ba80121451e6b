"""``narr event``: advance the story by one event."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from narrative.cli.completion import complete_node
from narrative.cli.context import Context, pass_context, typed_path
from narrative.cli.output import (
    emit_json,
    group_listing,
    json_option,
    local_time,
    one_line,
    page_options,
    record_lines,
    short,
    warn,
)
from narrative.cli.rows import answered
from narrative.cli.terminal import echo

if TYPE_CHECKING:
    from narrative.engine.event import EventResult
    from narrative.model import Delta
    from narrative.store import WorldRepo


@click.command("event")
@click.argument("content", required=False)
@click.option("--set", "set_", multiple=True, metavar="NODE.FIELD=VALUE",
              help="Set a field (VALUE is JSON when it parses, else text). NODE is an id, a name "
                   "or an alias ('林远.state.mood=calm'); for a name holding dots the longest "
                   "part that names a node wins. In state.location and state.holder a node's "
                   "name or alias becomes its id. Repeatable.")
@click.option("--unset", "unset", multiple=True, metavar="NODE.FIELD", help="Remove a field.")
@click.option("--relate", "relate", multiple=True, metavar="SRC:TYPE:DST[=ATTRS]",
              help="Add a relation (ATTRS: a JSON object).")
@click.option("--unrelate", "unrelate", multiple=True, metavar="SRC:TYPE:DST",
              help="Remove a relation.")
@click.option("--create", "creates", multiple=True, metavar="FILE.json",
              type=click.Path(dir_okay=False), help="Create a node from a whole node file.")
@click.option("--expire", "expire", multiple=True, metavar="NODE", shell_complete=complete_node,
              help="End a node.")
@click.option("--delta", "delta_file", metavar="FILE|-",
              help="A JSON delta (schemas/delta.schema.json); '-' reads standard input.")
@click.option("--text", "text", help="The narrative text of the event.")
@click.option("--story-time", "story_time", metavar="STORY_TIME",
              help="When it happens in the story (\"Day 3, dusk\"); left out: the time in force.")
@click.option("--at", "at", metavar="STORY_TIME", hidden=True,
              help="The old spelling of --story-time (--at names a revision everywhere else).")
@click.option("--close-scene", is_flag=True, help="This event ends the scene: scene nodes expire.")
@click.option("--cause", "causes", multiple=True, metavar="EVENT",
              help="An event this one follows from (its id), beside those the changes tell. Repeatable.")
@click.option("--dry-run", is_flag=True,
              help="Show what would change (the diffuser's proposal, its notes and refusals); "
                   "record nothing.")
@click.option("--retry", is_flag=True, help="Run the newest failed event again.")
@click.option("--diffuser", "diffuser", metavar="NAME",
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
def event_cmd(ctx: Context, content: str | None, set_: tuple[str, ...], unset: tuple[str, ...],
              relate: tuple[str, ...], unrelate: tuple[str, ...], creates: tuple[str, ...],
              expire: tuple[str, ...], delta_file: str | None, text: str | None,
              story_time: str | None, at: str | None, close_scene: bool, causes: tuple[str, ...],
              dry_run: bool, retry: bool, diffuser: str | None, render: bool,
              accept: tuple[int, ...], large: bool, as_json: bool) -> None:
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
    from narrative.errors import InvalidInputError
    from narrative.operations.story import EVENT, RETRY

    wr = ctx.world
    if at is not None:
        if story_time is not None:
            raise click.UsageError("--at is the old spelling of --story-time: give one of them")
        warn("narr event --at is now --story-time (--at names a revision everywhere else)")
        story_time = at
    if retry:
        if (content or set_ or unset or relate or unrelate or creates or expire or delta_file
                or story_time is not None or text is not None or close_scene or render
                or accept or large or causes):
            raise click.UsageError("--retry takes no content, changes, --story-time, --text, "
                                   "--close-scene, --render, --accept or --large: it reruns the "
                                   "kept event as it was asked")
        _print_result(wr, ctx.call(RETRY, dry_run=dry_run, diffuser=diffuser), as_json)
        return
    if content == "-":
        if delta_file == "-":
            raise click.UsageError("standard input can be the content or the --delta, not both")
        from narrative.store import MAX_TEXT, read_bounded_stream

        raw = read_bounded_stream(sys.stdin.buffer, MAX_TEXT, label="<stdin>")
        try:
            content = raw.decode("utf-8-sig").strip()
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"<stdin>: not UTF-8 text (byte {exc.start})") from None
    if not content:
        raise click.UsageError("say what happens: narr event \"Lin Yuan walks to the ferry\"")
    if story_time is not None and not story_time.strip():
        raise click.UsageError("--story-time needs a story time (\"Day 3, dusk\"); leave it out "
                               "for none")
    _refuse_bad_escapes("--set", [spec.partition("=")[0] for spec in set_], set_)
    _refuse_bad_escapes("--unset", list(unset), unset)
    try:
        delta = _read_changes(creates, delta_file)
    except InvalidInputError as exc:
        if not dry_run and (delta_file not in (None, "-") or creates):
            # a file named on the command line could not be read: the words are kept
            from narrative.delta.request import EventRequest
            from narrative.diffusers.base import default_name
            from narrative.engine import event as engine

            typed = EventRequest(content=content, narrative_text=text, timestamp=story_time,
                                 close_scene=close_scene, diffuser=diffuser or default_name(wr))
            engine.keep_unread(wr, typed, exc, _typed_changes(
                set_, unset, relate, unrelate, creates, expire, delta_file))
        raise
    arguments = {
        "content": content, "ops": [op.model_dump(mode="json") for op in delta.ops],
        "set": list(set_), "unset": list(unset), "relate": list(relate),
        "unrelate": list(unrelate), "expire": list(expire), "diffuser": diffuser,
        "story_time": story_time if story_time is not None else delta.timestamp,
        "text": text if text is not None else delta.narrative_text,
        "close_scene": close_scene or delta.close_scene,
        "causes": list(dict.fromkeys([*causes, *delta.causes])), "accept": list(accept),
        "render": render, "large": large, "dry_run": dry_run}
    given = {k: v for k, v in arguments.items() if v not in (None, False, [])}
    _print_result(wr, EVENT.answer_to(wr, EVENT.parse(given)), as_json)


def _read_changes(creates: tuple[str, ...], delta_file: str | None) -> Delta:
    """The changes the files named on the command line hold: a ``--delta`` (and what else it
    says: text, story time...) and each ``--create``'s node, in that order."""
    from narrative.delta import flags
    from narrative.delta.parse import read_delta
    from narrative.errors import InvalidInputError
    from narrative.model import Delta
    from narrative.nodefile import MAX_NODE_BYTES
    from narrative.store import MAX_TEXT, read_bounded, read_bounded_stream

    delta = Delta()
    if delta_file is not None:
        if delta_file == "-":
            delta = read_delta("<stdin>", read_bounded_stream(sys.stdin.buffer, MAX_TEXT,
                                                              label="--delta <stdin>"))
        else:
            try:
                data = read_bounded(typed_path(delta_file), MAX_TEXT,
                                    label=f"--delta {delta_file}")
            except OSError as exc:
                raise InvalidInputError(f"--delta {delta_file}: cannot read ({exc.strerror})") from None
            delta = read_delta(delta_file, data)
    made = []
    for path in creates:
        try:
            data = read_bounded(typed_path(path), MAX_NODE_BYTES, label=f"--create {path}")
        except OSError as exc:
            raise InvalidInputError(f"--create {path}: cannot read ({exc.strerror})") from None
        made.append(flags.node_file_op(path, data))
    return delta.model_copy(update={"ops": [*delta.ops, *made]})


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
        lines.append("held back (not written: narr is not sure the words say so, "
                     "or the world contradicts them):")
        for h in held:
            lines.append(f"  {h['n']}. {h['words']!r}: {h['reason']}")
            lines.append(f"     apply it: {h['command']}")
    return lines


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
@page_options
@json_option
@click.pass_context
def failed_cmd(click_ctx: click.Context, limit: int | None, cursor: str | None,
               as_json: bool) -> None:
    """Events that could not be recorded, kept with their error; newest first.

    \b
    Example:
      narr failed
    """
    from narrative.operations.story import FAILED

    paging = {k: v for k, v in (("limit", limit), ("cursor", cursor)) if v is not None}
    fetch = lambda wr: FAILED.answer_to(wr, FAILED.parse(paging))  # noqa: E731
    for item in group_listing(click_ctx, as_json, fetch, "No failed events kept.", "failed"):
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
@click.option("--diffuser", "diffuser", metavar="NAME",
              help="Run it through this diffuser instead of the one it named.")
@json_option
@pass_context
def failed_retry_cmd(ctx: Context, which: str, dry_run: bool, diffuser: str | None,
                     as_json: bool) -> None:
    """Run failed event WHICH (number from 'narr failed', default 1: the newest) again.

    \b
    Examples:
      narr failed retry
      narr failed retry 2 --diffuser rules
    """
    from narrative.operations.story import RETRY

    wr = ctx.world
    params = RETRY.parse({"which": which, "dry_run": dry_run, "diffuser": diffuser})
    _print_result(wr, RETRY.answer_to(wr, params), as_json)


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
    from narrative.operations.story import DROP_FAILED

    found = answered(ctx, DROP_FAILED, as_json, which=which)
    if found is not None:
        echo(f"Dropped the failed event {found.dropped.content!r}")


COMMANDS = [event_cmd, failed_cmd]
