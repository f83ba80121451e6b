"""``narr schema``: the JSON Schemas of node files, deltas, event records, rule files and
the exec diffuser's protocol (the same documents as ``schemas/``)."""

from __future__ import annotations

import json

import click

NAMES = ["node", "delta", "event", "rules", "exec-request", "exec-response"]


@click.command("schema")
@click.argument("name", type=click.Choice(NAMES))
def schema_cmd(name: str) -> None:
    """Print the JSON Schema NAME (node, delta, event, rules, exec-request, exec-response).

    \b
    Example:
      narr schema node > node.schema.json
    """
    from narrative.schemas import all_schemas

    # the document itself, as schemas/ holds it: not an answer to wrap
    click.echo(json.dumps(all_schemas()[f"{name}.schema.json"], indent=2, ensure_ascii=False))


COMMANDS = [schema_cmd]
