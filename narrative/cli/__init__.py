"""The ``narr`` command: parses arguments, calls the library, renders results.

Errors the library raises (:class:`narrative.errors.NarrError`) become one
message on stderr and the exit code of their class; usage errors stay click's
exit 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from narrative import __version__
from narrative.cli.context import Context
from narrative.errors import NarrError


class NarrGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                return super().invoke(ctx)
            except (NarrError, click.exceptions.ClickException, click.exceptions.Exit,
                    click.exceptions.Abort):
                raise
            except Exception as exc:
                # loaded only when something failed: git stays out of narr's start-up
                from narrative.store.failures import environment_error

                converted = environment_error(exc)
                if converted is None:
                    raise
                raise converted from exc
        except NarrError as exc:
            obj = ctx.obj
            report_error(exc, as_json=isinstance(obj, Context) and obj.json)
            ctx.exit(exc.exit_code)
        finally:
            obj = ctx.obj
            if isinstance(obj, Context):
                obj.close()


def error_json(exc: NarrError) -> dict[str, Any]:
    """The error as ``--json`` prints it (and the HTTP API answers it)."""
    payload: dict[str, Any] = {"error": exc.message, "type": type(exc).__name__,
                               "exit_code": exc.exit_code, "details": exc.details, "hint": exc.hint}
    conflicts = getattr(exc, "conflicts", None)
    if conflicts:
        payload["conflicts"] = conflicts
    return payload


def report_error(exc: NarrError, *, as_json: bool = False) -> None:
    if as_json:
        click.echo(json.dumps(error_json(exc), ensure_ascii=False), err=True)
        return
    click.echo(f"narr: error: {exc.message}", err=True)
    for line in exc.details[1:] if exc.details and exc.details[0] in exc.message else exc.details:
        click.echo(f"  {line}", err=True)
    if exc.hint:
        click.echo(f"hint: {exc.hint}", err=True)


@click.group(cls=NarrGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="narr", message="%(prog)s %(version)s")
@click.option("-C", "directory", type=click.Path(file_okay=False, path_type=Path), default=".",
              help="Run as if narr was started in this directory.")
@click.option("--no-color", "--no-colour", "no_color", is_flag=True,
              help="No colours, even on a terminal (NO_COLOR does the same).")
@click.option("--no-pager", is_flag=True, help="Print long output directly, without a pager.")
@click.pass_context
def main(ctx: click.Context, directory: Path, no_color: bool, no_pager: bool) -> None:
    """narr: a git-backed, versioned narrative engine.

    The story's state is a world graph of JSON files under world/; every story
    event is a git commit that records what it changed. Plain git (log, show,
    blame, diff) browses the history.

    \b
    Examples:
      narr init my-world --sample && cd my-world
      narr event "Lin Yuan walks to the ferry"
      narr log
    """
    ctx.obj = Context(directory, no_color=no_color, no_pager=no_pager)


def _register() -> None:
    from narrative.cli import (
        audit_cmd,
        branch_cmd,
        check_cmd,
        completion,
        event_cmd,
        export_cmd,
        import_cmd,
        init_cmd,
        merge_cmd,
        query_cmd,
        read_cmd,
        remote_cmd,
        schema_cmd,
        serve_cmd,
        travel_cmd,
    )

    for module in (init_cmd, event_cmd, read_cmd, query_cmd, export_cmd, import_cmd, audit_cmd,
                   travel_cmd, branch_cmd, merge_cmd, remote_cmd, check_cmd, schema_cmd, serve_cmd,
                   completion):
        for command in module.COMMANDS:
            main.add_command(command)


_register()
