"""``narr init``, ``narr path``, ``narr edit``: making a world and finding node files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

import click

from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_json, json_option


@click.command("init")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--sample", is_flag=True, help="Start from the sample story world.")
@click.option("--layout", type=click.Choice(["flat", "sharded"]), default="flat", show_default=True,
              help="flat: world/<layer>/<id>.json; sharded: world/<layer>/<xx>/<id>.json "
                   "(for tens of thousands of nodes).")
@click.option("--name", help="The world's name (default: the sample's, or the directory's).")
@click.option("--language", help="The story's main language, e.g. en or zh.")
@json_option
@pass_context
def init_cmd(ctx: Context, directory: Path | None, sample: bool, layout: str, name: str | None,
             language: str | None, as_json: bool) -> None:
    """Create a new world: a git repository with narr.toml, world/ and a genesis commit."""
    from narrative.engine.init import init_world

    target = directory if directory is not None else ctx.directory
    if not target.is_absolute():
        target = ctx.directory / target
    result = init_world(target, sample=sample, layout=layout,  # type: ignore[arg-type]
                        name=name, language=language)
    if as_json:
        emit_json({"root": str(result.root), "commit": result.commit, "id": result.event_id,
                   "nodes": result.nodes, "layout": result.layout})
        return
    click.echo(f"Created a {result.layout} world at {result.root} with {result.nodes} nodes "
               f"(genesis {result.commit[:10]}).")
    if directory is not None:
        click.echo(f"Next: cd {directory} && narr nodes")


@click.command("path")
@click.argument("node_id")
@click.option("--layer", type=click.Choice(["character", "item", "ambient", "background"]),
              help="For a node that does not exist yet: the layer it will live in.")
@json_option
@pass_context
def path_cmd(ctx: Context, node_id: str, layer: str | None, as_json: bool) -> None:
    """Print the path of a node's file (relative to the world's root)."""
    path = _node_path(ctx, node_id, layer)
    if as_json:
        emit_json({"id": node_id, "path": path})
    else:
        click.echo(path)


@click.command("edit")
@click.argument("node_id")
@click.option("--layer", type=click.Choice(["character", "item", "ambient", "background"]),
              help="Create the node by hand in this layer if it does not exist yet.")
@pass_context
def edit_cmd(ctx: Context, node_id: str, layer: str | None) -> None:
    """Open a node's file in $EDITOR. The change is a hand edit, picked up by the next event."""
    from narrative.ids import Layer
    from narrative.nodefile import dump

    wr = ctx.world
    path = _node_path(ctx, node_id, layer)
    full = wr.abs(path)
    if not full.exists():
        assert layer is not None
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(dump({
            "id": node_id, "name": node_id.replace("-", " ").title(), "layer": cast(Layer, layer), "kind": "",
            "aliases": [], "summary": "", "lifecycle": "permanent", "created_by_event": None,
            "traits": {}, "state": {}, "relations": {},
        }))
        click.echo(f"Created {path}; the next event records it as a hand edit.", err=True)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    click.edit(filename=str(full), editor=editor)
    click.echo(path)


def _node_path(ctx: Context, node_id: str, layer: str | None) -> str:
    from narrative.engine.nodes import locate
    from narrative.errors import NotFoundError
    from narrative.ids import node_path

    wr = ctx.world
    try:
        return locate(wr, node_id)
    except NotFoundError:
        if layer is None:
            raise
        return node_path(node_id, layer, wr.config.layout)  # type: ignore[arg-type]


COMMANDS = [init_cmd, path_cmd, edit_cmd]
