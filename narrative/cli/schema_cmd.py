"""``narr schema``: the JSON Schemas of node files, deltas and event records."""

from __future__ import annotations

import click

from narrative.cli.output import emit_json


@click.command("schema")
@click.argument("name", type=click.Choice(["node", "delta", "event"]))
def schema_cmd(name: str) -> None:
    """Print the JSON Schema of a node file, a delta or an event record."""
    from narrative.model import json_schemas

    emit_json(json_schemas()[f"{name}.schema.json"])


COMMANDS = [schema_cmd]
