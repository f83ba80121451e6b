"""The ``narr`` command: parses arguments, calls the library, renders results.

Errors the library raises (:class:`narrative.errors.NarrError`) become one
message on stderr and the exit code of their class; usage errors stay click's
exit 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import click

from narrative import __version__
from narrative.cli.context import Context
from narrative.errors import NarrError


class NarrGroup(click.Group):
    def _main_shell_completion(self, ctx_args: Any, prog_name: str, complete_var: str | None = None) -> None:
        # A shell asking for its script or its candidates gets narr's own completion classes
        # (names with spaces quoted), registered when their module loads: commands load
        # lazily, so the script alone (`_NARR_COMPLETE=bash_source`) would otherwise get click's.
        import narrative.cli.completion  # noqa: F401

        super()._main_shell_completion(ctx_args, prog_name, complete_var)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                return super().invoke(ctx)
            except (NarrError, click.exceptions.ClickException, click.exceptions.Exit,
                    click.exceptions.Abort):
                raise
            except Exception as exc:
                # loaded only when something failed: git stays out of narr's start-up
                from narrative.store import environment_error

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
    """The error as ``--json`` prints it (:meth:`NarrError.to_json`)."""
    return exc.to_json()


def report_error(exc: NarrError, *, as_json: bool = False) -> None:
    if exc.steps:
        import narrative.operations  # noqa: F401  (the table words the hint's steps)
    if as_json:
        click.echo(json.dumps(error_json(exc), ensure_ascii=False), err=True)
        return
    from narrative.cli.terminal import echo

    echo(f"narr: error: {exc.message}", err=True)
    for line in exc.details[1:] if exc.details and exc.details[0] in exc.message else exc.details:
        echo(f"  {line}", err=True)
    if exc.hint:
        echo(f"hint: {exc.hint}", err=True)


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


# Which module holds each command: a command's module (and what it imports) loads only
# when that command runs, so `narr --version` or `narr status` does not import the other
# thirteen. A test keeps this table equal to the modules' COMMANDS.
COMMAND_MODULES = {
    "init": "init_cmd", "new": "init_cmd", "path": "init_cmd", "edit": "init_cmd",
    "event": "event_cmd", "failed": "event_cmd",
    "log": "read_cmd", "show": "read_cmd", "get": "read_cmd", "nodes": "read_cmd",
    "status": "read_cmd",
    "why": "query_cmd", "history": "query_cmd", "search": "query_cmd", "graph": "query_cmd",
    "brief": "query_cmd",
    "story": "export_cmd", "export": "export_cmd",
    "import": "import_cmd",
    "audit": "audit_cmd", "chapter": "chapter_cmd",
    "reset": "travel_cmd", "chains": "travel_cmd", "replay": "travel_cmd", "revert": "travel_cmd",
    "reflog": "travel_cmd", "edits": "travel_cmd",
    "branch": "branch_cmd", "switch": "branch_cmd",
    "merge": "merge_cmd", "conflicts": "merge_cmd", "resolve": "merge_cmd",
    "check": "check_cmd", "gc": "check_cmd", "adopt": "check_cmd", "doctor": "doctor_cmd",
    "schema": "schema_cmd",
    "serve": "serve_cmd", "studio": "serve_cmd", "mcp": "mcp_cmd",
    "clone": "remote_cmd", "push": "remote_cmd", "pull": "remote_cmd",
    "threads": "query_cmd",
    "completion": "completion",
}


class LazyCommands(MutableMapping[str, click.Command]):
    """``main.commands``: every command's name at once, each command loaded on first use."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._modules = dict(modules)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module = self._modules[name]  # KeyError: no such command
            from importlib import import_module

            for command in import_module(f"narrative.cli.{module}").COMMANDS:
                if command.name is not None:
                    self._loaded.setdefault(command.name, command)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command
        self._modules.setdefault(name, "")

    def __delitem__(self, name: str) -> None:
        self._modules.pop(name)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


main.commands = LazyCommands(COMMAND_MODULES)
