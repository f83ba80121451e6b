"""``narr init``, ``narr path``, ``narr edit``: making a world and finding node files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from narrative.cli.completion import complete_node
from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_answer, json_option, warn
from narrative.cli.terminal import echo
from narrative.errors import InvalidWorldError


@click.command("init")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--sample", is_flag=True, help="Start from the sample story world.")
@click.option("--layout", type=click.Choice(["flat", "sharded"]), default="flat", show_default=True,
              help="flat: world/<layer>/<id>.json; sharded: world/<layer>/<xx>/<id>.json "
                   "(for tens of thousands of nodes).")
@click.option("--name", help="The world's name (default: the sample's, or the directory's).")
@click.option("--language", help="The story's main language, e.g. en or zh.")
@click.option("--rules", type=click.Choice(["en", "zh", "both"]),
              help="Give the world narr's generic rules (movement, items, health, relations, "
                   "secrets, weather, crowds) in English, Chinese or both.")
@click.option("--here", is_flag=True,
              help="Make the existing git repository (history kept) a world, with a genesis "
                   "commit on top.")
@json_option
@pass_context
def init_cmd(ctx: Context, directory: Path | None, sample: bool, layout: str, name: str | None,
             language: str | None, rules: str | None, here: bool, as_json: bool) -> None:
    """Create a new world: a git repository with narr.toml, world/ and a genesis commit.

    \b
    Examples:
      narr init my-world --sample
      narr init tale --rules zh
      narr init --here
    """
    from narrative.operations.upkeep import INIT

    result = ctx.call(INIT, directory=str(directory) if directory is not None else None,
                      sample=sample, layout=layout, name=name, language=language, rules=rules,
                      here=here)
    if as_json:
        emit_answer(result)
        return
    echo(f"Created a {result.layout} world at {result.root} with {result.nodes} nodes "
         f"(genesis {result.commit[:10]}).")
    if directory is not None:
        first = "narr nodes" if sample else "narr new character NAME"
        echo(f"Next: cd {directory} && {first}")


@click.command("path")
@click.argument("node", metavar="NODE", shell_complete=complete_node)
@click.option("--layer", type=click.Choice(["character", "item", "ambient", "background"]),
              help="For a node that does not exist yet: the layer it will live in.")
@json_option
@pass_context
def path_cmd(ctx: Context, node: str, layer: str | None, as_json: bool) -> None:
    """Print the path of a node's file (relative to the world's root); NODE is an id, name or alias.

    \b
    Example:
      narr path 林远
    """
    from narrative.operations.reads import PATH

    found = ctx.call(PATH, node=node, layer=layer)
    if as_json:
        emit_answer(found)
    else:
        echo(found.path)


@click.command("edit")
@click.argument("node_id", metavar="NODE", shell_complete=complete_node)
@click.option("--layer", type=click.Choice(["character", "item", "ambient", "background"]),
              help="Create the node by hand in this layer if it does not exist yet.")
@pass_context
def edit_cmd(ctx: Context, node_id: str, layer: str | None) -> None:
    """Open a node's file in $EDITOR. The change is a hand edit, picked up by the next event.

    \b
    Examples:
      narr edit 林远
      narr edit old-mill --layer background
    """
    from narrative.engine.handedit import write_hand_edit

    wr = ctx.world
    node_id = ctx.node(node_id, must_exist=False, ended=False)
    path = _node_path(ctx, node_id, layer)
    full = wr.abs(path)
    if not full.exists():
        assert layer is not None
        write_hand_edit(wr, {
            "id": node_id, "name": node_id.replace("-", " ").title(), "layer": layer, "kind": "",
            "aliases": [], "summary": "", "lifecycle": "permanent", "created_by_event": None,
            "traits": {}, "state": {}, "relations": {},
        }, create=True)
        echo(f"Created {path}; the next event records it as a hand edit.", err=True)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    while True:
        click.edit(filename=str(full), editor=editor)
        problem = _edit_problem(ctx, path)
        if problem is None:
            break
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            raise problem
        echo(f"narr: {problem.message}", err=True)
        if not click.confirm("Reopen the file to fix it?", default=True, err=True):
            raise problem
    echo(path)


def _edit_problem(ctx: Context, path: str) -> InvalidWorldError | None:
    """What is wrong with the file the editor left (file, line, field), or None.

    Checked as the editor closes because the next event would refuse it anyway,
    long after the user has forgotten what they typed. The file is left as it is:
    it holds the user's work.
    """
    from narrative.nodefile import parse_node_file

    wr = ctx.world
    full = wr.abs(path)
    if not full.exists():
        return None  # deleting a node by hand is an edit too
    try:
        parse_node_file(full.read_bytes(), path, wr.config.layout)
    except InvalidWorldError as exc:
        exc.hint = ("the file is kept as you left it; fix it (narr edit again) or undo it with "
                    f"git checkout -- {path}; until then the next event refuses")
        return exc
    return None


@click.command("new")
@click.argument("layer", type=click.Choice(["character", "item", "ambient", "background"]))
@click.argument("name")
@click.option("--kind", default="", help="What it is within its layer: place, weapon, secret, sect ...")
@click.option("--alias", "aliases", multiple=True, help="Another name it goes by (repeatable).")
@click.option("--lifecycle", type=click.Choice(["permanent", "scene", "event"]), default="permanent",
              show_default=True, help="How long it lasts: for good, the scene, or one event.")
@click.option("--summary", default="", help="One line saying what it is.")
@click.option("--pronouns", metavar="she|he|they|it", default=None,
              help="A character's pronouns: what 'he', 'her' and 他 in an event bind to.")
@click.option("--force", is_flag=True,
              help="Make it even when its id is taken by a node of the same words (it gets -2), or "
                   "its name only looks like another's.")
@json_option
@pass_context
def new_cmd(ctx: Context, layer: str, name: str, kind: str, aliases: tuple[str, ...], lifecycle: str,
            summary: str, pronouns: str | None, force: bool, as_json: bool) -> None:
    """Make a node named NAME in LAYER; its id is made from the name (林远 -> lin-yuan).

    The file is a hand edit: the next event records it. A name (or alias) the
    world already uses is refused, and so is one whose id is taken by a node of
    the same words ("Old Mill!" beside Old Mill), or one that only looks like a
    name the world has (a Cyrillic і in "Lіn Yuan"), unless --force.

    A character's --pronouns (she, he, they, it) say whom "he", "her" and 他 in an
    event's words can mean; without them narr reads them from the summary.

    \b
    Examples:
      narr new character 林远 --alias "Lin Yuan" --pronouns he
      narr new background 渡口 --kind place
    """
    from narrative.operations.nodes import NEW_NODE

    made = ctx.call(NEW_NODE, layer=layer, name=name, kind=kind, aliases=aliases,
                    lifecycle=lifecycle, summary=summary, force=force, pronouns=pronouns)
    for message in made.warnings:
        warn(message)
    if as_json:
        emit_answer(made)
        return
    echo(f"{made.id} {made.path}")
    echo("The next event records it; narr edit " + made.id + " fills it in.", err=True)


def _node_path(ctx: Context, node_id: str, layer: str | None) -> str:
    from narrative.engine.nodes import node_file_path

    return node_file_path(ctx.world, node_id, layer)


COMMANDS = [init_cmd, new_cmd, path_cmd, edit_cmd]
