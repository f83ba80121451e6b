"""``narr chapter``: review a chapter draft change by change, then record it as one unit."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

import click

from narrative.cli.context import Context, InputFile, pass_context
from narrative.cli.output import change_line, emit_json, json_option, one_line, short, warn
from narrative.cli.terminal import echo, paint

if TYPE_CHECKING:
    from narrative.engine.chapter import AddedChange, ChapterResult, ChapterReview
    from narrative.store import WorldRepo

_AT_SENTENCE = re.compile(r"^\s*(\d{1,7})\s*:(.*)$", re.DOTALL)
HELP = """y - record this change
n - leave it out
e - edit the value it sets (the new value is recorded at the same sentence)
a - record this change and every one after it
d - leave out this change and every one after it
q - quit: record nothing (the review stays for next time)
? - this help"""


@click.command("chapter")
@click.argument("file", type=InputFile("rb"), required=False)
@click.option("--accept", "accept", metavar="all|LIST",
              help="Record the chapter with these changes of the review: all, or numbers and "
                   "ranges (1,3-7).")
@click.option("--reject", "reject", metavar="LIST",
              help="Leave these changes out (with --accept all: all but these).")
@click.option("--set", "sets", multiple=True, metavar="S:NODE.FIELD=VALUE",
              help="Add a change by hand at sentence S, as narr event's --set. Repeatable.")
@click.option("--unset", "unsets", multiple=True, metavar="S:NODE.FIELD",
              help="Remove a field at sentence S. Repeatable.")
@click.option("--relate", "relates", multiple=True, metavar="S:SRC:TYPE:DST[=ATTRS]",
              help="Add a relation at sentence S. Repeatable.")
@click.option("--unrelate", "unrelates", multiple=True, metavar="S:SRC:TYPE:DST",
              help="Remove a relation at sentence S. Repeatable.")
@click.option("--number", type=click.IntRange(min=1, max=1_000_000), metavar="N",
              help="The chapter's number (default: what its heading says, else the next one).")
@click.option("--title", metavar="TEXT", help="The chapter's title (default: its first heading).")
@click.option("--story-time", "story_time", metavar="STORY_TIME",
              help="When the chapter begins in the story.")
@click.option("--at", "at", metavar="STORY_TIME", hidden=True,
              help="The old spelling of --story-time (--at names a revision everywhere else).")
@click.option("--diffuser", "diffuser_name", metavar="NAME",
              help="What turns each sentence into changes (default: the world's).")
@click.option("--dry-run", is_flag=True, help="Show the review; record nothing.")
@click.option("--key", metavar="KEY",
              help="An idempotency key: a chapter recorded with it on this story line is not "
                   "recorded again.")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Stop the review past this many seconds (default 120).")
@click.option("--retry", is_flag=True,
              help="Record the chapter whose recording failed or was cut short, as decided.")
@json_option
@pass_context
def chapter_cmd(ctx: Context, file: Any, accept: str | None, reject: str | None,
                sets: tuple[str, ...], unsets: tuple[str, ...], relates: tuple[str, ...],
                unrelates: tuple[str, ...], number: int | None, title: str | None,
                story_time: str | None, at: str | None, diffuser_name: str | None,
                dry_run: bool, key: str | None, budget: float | None, retry: bool,
                as_json: bool) -> None:
    """Review a chapter draft (FILE, or - for stdin) sentence by sentence, then record it.

    The draft (plain text or Markdown, English or Chinese) is cut into scenes
    (headings, ***, ---, ornaments such as ◇◇◇, a scene's number alone on a line)
    and sentences, and each sentence is proposed as narr event would propose it,
    on the world as the chapter has changed it so far, with the checks of narr
    audit. The review numbers every change (old → new, the rule and the words
    that made it) and shows the contradictions and the changes held back.

    Nothing is written until you say so: --accept all (or a list, with
    --reject), the prompt on a terminal (y/n/e/a/d/q for each change), or
    --dry-run --json for a program. The chapter is then recorded as one unit:
    its own commit (number, title, text, scenes, summary), then one event per
    sentence that changes something. All of it or none: if it fails, the draft
    and your decisions are kept for --retry.

    \b
    Examples:
      narr chapter chapter-3.md --dry-run
      narr chapter chapter-3.md --accept all --reject 4
      narr chapter chapter-3.md --accept 1-6 --set 9:lin-yuan.state.mood=calm
      narr chapter - --accept all --key ch3-v2 < chapter-3.md
    """
    from narrative.cli.audit_cmd import draft_name, read_draft
    from narrative.engine import chapter as engine
    from narrative.engine.scenes import check_text

    if at is not None:
        if story_time is not None:
            raise click.UsageError("--at is the old spelling of --story-time: give one of them")
        warn("narr chapter --at is now --story-time (--at names a revision everywhere else)")
        story_time = at
    wr = ctx.world
    budget_s = budget if budget is not None else engine.DEFAULT_BUDGET
    if retry:
        if file is not None or accept or reject or sets or unsets or relates or unrelates \
                or number or title or story_time or dry_run or key:
            raise click.UsageError("--retry takes no FILE and no decisions: it records the "
                                   "kept chapter as it was decided")
        _show_result(wr, engine.retry(wr, budget=budget), as_json)
        return
    if file is None:
        raise click.UsageError("give the chapter: narr chapter FILE (or - for stdin)")
    if dry_run and (accept or reject):
        raise click.UsageError("--dry-run records nothing: leave out --accept and --reject")
    if reject and not accept:
        raise click.UsageError("--reject goes with --accept (--accept all --reject 4)")
    text = read_draft(file)
    check_text(text, draft_name(file))
    added = _added(ctx, sets, unsets, relates, unrelates)
    kwargs: dict[str, Any] = {"number": number, "title": title, "diffuser": diffuser_name,
                              "added": added, "at": story_time, "budget": budget_s}
    if accept is not None:
        chosen: Any = "all" if accept.strip().lower() == "all" else engine.parse_numbers(accept)
        rejected = engine.parse_numbers(reject, "--reject") if reject else set()
        result = engine.record(wr, text, accept=chosen, reject=rejected, key=key, **kwargs)
        if not as_json and result.review is not None:
            _show_review(result.review, brief=True)
        _show_result(wr, result, as_json)
        return
    review = engine.review(wr, text, **kwargs)
    if as_json:
        emit_json(engine.dry_run_answer(review), "chapter")
        return
    _show_review(review)
    interactive = (not dry_run and getattr(file, "name", "-") not in ("-", "<stdin>")
                   and sys.stdin.isatty() and sys.stdout.isatty())
    if not interactive:
        n = len(review.changes)
        echo(f"Nothing recorded. To record: narr chapter {_shown_name(file)} --accept all"
             + (f" (or a list of the {n} changes, 1,3-{n}, with --reject for the rest)" if n > 1
                else ""))
        return
    decided = _ask(review)
    if decided is None:
        echo("Nothing recorded.")
        return
    chosen_n, edited = decided
    result = engine.record(wr, text, accept=sorted(chosen_n), key=key,
                           **{**kwargs, "added": [*added, *edited]})
    _show_result(wr, result, as_json)




def _shown_name(file: Any) -> str:
    import shlex

    name = getattr(file, "name", "-")
    return "-" if name in ("-", "<stdin>") else shlex.quote(str(name))


def _added(ctx: Context, sets: tuple[str, ...], unsets: tuple[str, ...], relates: tuple[str, ...],
           unrelates: tuple[str, ...]) -> list[AddedChange]:
    """The changes added by hand, each at its sentence (``7:lin-yuan.state.mood=calm``)."""
    from narrative.delta import flags
    from narrative.engine.chapter import AddedChange
    from narrative.engine.naming import Names
    from narrative.errors import InvalidInputError

    out: list[AddedChange] = []
    if not (sets or unsets or relates or unrelates):
        return out
    names = Names(ctx.world)
    references = set(ctx.world.config.reference_labels)
    for flag, specs in (("--set", sets), ("--unset", unsets), ("--relate", relates),
                        ("--unrelate", unrelates)):
        for spec in specs:
            m = _AT_SENTENCE.match(spec)
            if m is None:
                raise InvalidInputError(
                    f"{flag} {spec!r}: say at which sentence (its number, then a colon)",
                    hint=f"{flag} 7:{spec} adds it at sentence 7 (narr chapter FILE --dry-run "
                         "numbers the sentences)")
            where, rest = int(m.group(1)), m.group(2)
            delta = flags.build_delta(
                names=names, references=references, sets=[rest] if flag == "--set" else [],
                unsets=[rest] if flag == "--unset" else [],
                relates=[rest] if flag == "--relate" else [],
                unrelates=[rest] if flag == "--unrelate" else [])
            out.extend(AddedChange(where, op) for op in delta.ops)
    return out


# --- the review, for a reader ------------------------------------------------------------

def _show_review(review: ChapterReview, *, brief: bool = False) -> None:
    from narrative.cli.audit_cmd import finding_lines

    d = review.to_json()
    for message in d["warnings"]:
        warn(message)
    scenes = {s["number"]: s for s in d["scenes"]}
    changes = {c["n"]: c for c in d["changes"]}
    echo(d["heading"] + f" ({len(d['sentences'])} sentences in {len(scenes)} scenes, "
         f"read against {short(d['head'])} by {d['diffuser']})")
    scene = None
    for s in d["sentences"]:
        if not (s["changes"] or s["added"] or s["findings"] or s["held"] or s["remarks"]):
            continue
        if brief and not (s["findings"] or s["held"]):
            continue
        if s["scene"] != scene:
            scene = s["scene"]
            named = scenes[scene]["title"]
            echo(f"Scene {scene}" + (f": {named}" if named else ""))
        echo(f"  {s['number']}. {one_line(s['text'], 100)}")
        if not brief:
            for n in s["changes"]:
                for line in change_lines(changes[n]):
                    echo(f"     {line}")
            for op in s["added"]:
                echo(f"     + added by hand: {_op_text(op)}")
            for ch in s["effects"]:
                echo(f"       and: {change_line(ch, expired=s['expired'])}")
        for f in s["findings"]:
            lines = finding_lines(f)
            echo(f"     {paint('! contradiction', 'warning')}: {lines[1].strip()}")
            for line in lines[2:]:
                echo(f"       {line.strip()}")
        for f in s["remarks"]:
            echo(f"     note: {f['message']}: {f['fact']}")
        for h in s["held"]:
            echo(f"     held back: {h['words']!r}: {h['reason']}")
            if h["flags"]:
                echo(f"       add it by hand: {' '.join(h['flags'])}")
    n, k, h = len(d["changes"]), len(d["findings"]), len(d["held"])
    echo(f"{n} change{'' if n == 1 else 's'} proposed, {k} contradiction{'' if k == 1 else 's'}, "
         f"{h} held back.")


def change_lines(c: dict[str, Any]) -> list[str]:
    """A numbered change: what it does, old → new, and the rule and words that made it."""
    tag = f"[{c['n']}]"
    if c["kind"] == "close_scene":
        ended = ", ".join(ch["target"] for ch in c["changes"]) or "nothing ends"
        head = [f"{tag} closes the scene ({ended})"]
    else:
        shown = [change_line(ch) for ch in c["changes"]]
        head = [f"{tag} {shown[0]}", *(f"    {line}" for line in shown[1:])]
    why = f"rule {c['rule']} ({c['source']})" if c["rule"] else (c["source"] or "")
    words = one_line(c["words"], 60)
    head.append(f"    {why}: {words!r}" if why else f"    {words!r}")
    return head


def _op_text(op: dict[str, Any]) -> str:
    from narrative.delta.draft import describe
    from narrative.engine.chapter import _op

    thing = _op(op)
    value = f" = {op['value']!r}" if op.get("op") == "set" else ""
    return describe(thing) + value


def _ask(review: ChapterReview) -> tuple[set[int], list[AddedChange]] | None:
    """Each change in turn on the terminal; None when the writer quits."""
    from narrative.delta.flags import parse_value
    from narrative.engine.chapter import AddedChange
    from narrative.model import SetOp

    if not review.changes:
        answer = click.prompt("Record the chapter (it changes nothing)? [y,q]", default="y",
                              show_default=False).strip().lower()
        return (set(), []) if answer.startswith("y") else None
    chosen: set[int] = set()
    edited: list[AddedChange] = []
    rest: str | None = None
    for c in review.changes:
        if rest is not None:
            if rest == "a":
                chosen.add(c.n)
            continue
        d = c.to_json()
        while True:
            for line in change_lines(d):
                echo(line)
            answer = click.prompt(f"Record change {c.n} of {len(review.changes)} (sentence "
                                  f"{c.sentence})? [y,n,e,a,d,q,?]", default="y",
                                  show_default=False).strip().lower()[:1]
            if answer in ("y", "n", "a", "d", "q"):
                break
            if answer == "e":
                if not isinstance(c.op, SetOp):
                    echo("only a change that sets a value can be edited: y or n")
                    continue
                typed = click.prompt(f"new value for {c.op.target} {c.op.field}",
                                     default=click.utils.format_filename(
                                         _value_text(c.op.value)))
                edited.append(AddedChange(c.sentence, SetOp(target=c.op.target, field=c.op.field,
                                                            value=parse_value(typed))))
                answer = "edited"
                break
            echo(HELP)
        if answer == "q":
            return None
        if answer in ("y", "a"):
            chosen.add(c.n)
        if answer in ("a", "d"):
            rest = answer
    return chosen, edited


def _value_text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# --- what was recorded -------------------------------------------------------------------------

def _show_result(wr: WorldRepo, result: ChapterResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_json(), "chapter")
        return
    for message in result.warnings:
        warn(message)
    c = result.chapter
    assert c is not None  # a recording's answer
    if result.already:
        echo(f"Already recorded: {c['heading']} ({short(c['commit'])})")
        return
    rejected = f"; left out: {', '.join(map(str, result.rejected))}" if result.rejected else ""
    echo(f"[{wr.branch()} {short(result.head)}] {c['heading']}: {c['events']} event"
         f"{'' if c['events'] == 1 else 's'} from {c['sentences']} sentences "
         f"({len(result.accepted)} change{'' if len(result.accepted) == 1 else 's'} accepted"
         f"{rejected})")
    for e in result.events:
        echo(f"  {short(e['commit'])} {e['sentence']:>4}. {one_line(e['content'], 80)}")
    echo(f"  summary: {c['summary']}")


COMMANDS = [chapter_cmd]
