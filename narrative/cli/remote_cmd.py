"""Sharing a world: ``narr clone``, ``narr push``, ``narr pull``."""

from __future__ import annotations

import click

from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_answer, json_option, one_line, short, warn
from narrative.cli.terminal import echo


def _counted(fetched: dict[str, int]) -> str:
    words = {"abandoned": "undone chain(s)", "edits": "set-aside edit(s)",
             "adopted": "adopted commit(s)", "replayed": "replay mark(s)"}
    return ", ".join(f"{n} {words[k]}" for k, n in fetched.items() if n)


@click.command("clone")
@click.argument("url")
@click.argument("directory", required=False)
@json_option
@pass_context
def clone_cmd(ctx: Context, url: str, directory: str | None, as_json: bool) -> None:
    """Copy the world at URL (any git URL, or a path) into DIRECTORY, undone chains included.

    Every writer's undone chains and set-aside edits come along under
    refs/narr/remotes/origin/ (narr chains lists them as origin/N), and the
    derived catalog is built, so the copy answers at once.

    \b
    Examples:
      narr clone ../shared-world.git my-copy
      narr clone https://example.org/tale.git
    """
    from narrative.operations.remotes import CLONE

    found = ctx.call(CLONE, url=url, directory=directory)
    if as_json:
        emit_answer(found)
        return
    result = found.to_json()
    echo(f"Cloned {result['url']} into {result['path']}")
    if result["commit"]:
        echo(f"On branch {result['branch']}, at {short(result['commit'])} "
                   f"{one_line(result['content'])}")
    others = [b for b in result["branches"] if b != result["branch"]]
    if others:
        echo(f"Other story lines on {result['remote']}: {', '.join(others)} (narr switch NAME)")
    brought = _counted(result["fetched"])
    if brought:
        echo(f"Also from {result['remote']}: {brought} (narr chains, narr edits)")
    for warning in result["warnings"]:
        warn(warning)


@click.command("push")
@click.argument("remote", required=False)
@click.argument("branch", required=False)
@click.option("--edits/--no-edits", default=None,
              help="Send your set-aside edits too, or keep them on this machine (default: "
                   "git config narr.pushEdits, else send them).")
@json_option
@pass_context
def push_cmd(ctx: Context, remote: str | None, branch: str | None, edits: bool | None,
             as_json: bool) -> None:
    """Send BRANCH (default: the current one) and your undone chains and set-aside edits to REMOTE.

    REMOTE defaults to the branch's upstream, else origin. Only a fast-forward
    is sent: when the remote has events this line lacks, narr pull first.
    git config narr.pushEdits false keeps set-aside edits private by default.

    \b
    Examples:
      narr push
      narr push origin what-if --no-edits
    """
    from narrative.operations.remotes import PUSH

    found = ctx.call(PUSH, remote=remote, branch=branch, edits=edits)
    if as_json:
        emit_answer(found)
        return
    result = found.to_json()
    for refused in result["refused"]:
        warn(f"{result['remote']} refused {refused['ref']} ({refused['reason']})")
    what = {"new": "a new branch", "updated": "updated", "up to date": "already up to date"}
    echo(f"Pushed {result['branch']} to {result['remote']} ({what[result['status']]}), "
               f"at {short(result['commit'])}; {result['narr_refs']} narr ref(s) sent"
               + ("" if result["edits"] else " (set-aside edits kept here)"))
    if result["deleted"]:
        echo(f"  deleted there as well: {len(result['deleted'])} narr ref(s) you dropped here")
    if result["upstream_set"]:
        echo(f"{result['branch']} now follows {result['remote']}/{result['branch']} "
                   "(narr pull and narr push need no names)")


@click.command("pull")
@click.argument("remote", required=False)
@click.argument("branch", required=False)
@json_option
@pass_context
def pull_cmd(ctx: Context, remote: str | None, branch: str | None, as_json: bool) -> None:
    """Fetch from REMOTE, then fast-forward or merge its BRANCH into the current story line.

    The merge is narr merge REMOTE/BRANCH: three-way per node and field; on
    conflicts it stops (narr conflicts, narr resolve, narr merge --continue).

    \b
    Examples:
      narr pull
      narr pull origin main
    """
    from narrative.operations.remotes import PULL

    found = ctx.call(PULL, remote=remote, branch=branch)
    if as_json:
        emit_answer(found)
        return
    result = found.to_json()
    merged = result["merge"]
    for note in [*(merged["warnings"] if merged else []), *result["warnings"]]:
        warn(note)
    where = f"{result['remote']}/{result['branch']}"
    if result["status"] == "up to date":
        echo(f"Already up to date with {where}")
    elif result["status"] == "fast-forward":
        echo(f"Fast-forward to {where}, at {short(result['commit'])}")
    else:
        changes = len(merged["record"]["diffusions"]) if merged and merged["record"] else 0
        echo(f"Merged {where} as {short(result['commit'])}: {changes} change(s)")
    if merged and merged["kept_edits"]:
        echo(f"  your hand edits to {', '.join(merged['kept_edits'])} stay uncommitted "
                   "(narr status)")
    brought = _counted(result["fetched"])
    if brought:
        echo(f"New from {result['remote']}: {brought} (narr chains, narr edits)")


COMMANDS = [clone_cmd, push_cmd, pull_cmd]
