"""Shell completion: node names, branches and chains at TAB, and ``narr completion SHELL``.

click completes commands and options itself; the arguments that name a node, a
branch, a revision or an abandoned chain ask the world through these callbacks
(``shell_complete=``). A completion must answer fast and must never fail: any
error (no world here, a broken ``narr.toml``, a damaged catalog) offers nothing
rather than a traceback at a keypress.

bash inserts a candidate as it is, so a name holding a space or a quote is escaped
here for bash (click's own bash script inserts it raw); fish's script splits each
line at its first comma only, so a name may hold commas.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.shell_completion import (
    BashComplete,
    CompletionItem,
    FishComplete,
    add_completion_class,
    get_completion_class,
)

from narrative.cli.terminal import echo

if TYPE_CHECKING:
    from narrative.engine.complete import Candidate
    from narrative.store import NodeSource, WorldRepo

SHELLS = ("bash", "zsh", "fish")

_BASH_SOURCE = """\
%(complete_func)s() {
    local IFS=$'\\n'
    local response

    response=$(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD \
%(complete_var)s=bash_complete $1 2>/dev/null)

    for completion in $response; do
        IFS=',' read -r type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            COMPREPLY=()
            compopt -o dirnames
        elif [[ $type == 'file' ]]; then
            COMPREPLY=()
            compopt -o default
        elif [[ $type == 'plain' ]]; then
            COMPREPLY+=("$value")
        fi
    done

    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""

_FISH_SOURCE = """\
function %(complete_func)s;
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \
COMP_CWORD=(commandline -t) %(prog_name)s 2>/dev/null);

    for completion in $response;
        set -l metadata (string split -m 1 "," $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2];
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2];
        else if test $metadata[1] = "plain";
            echo $metadata[2];
        end;
    end;
end;

complete --no-files --command %(prog_name)s --arguments "(%(complete_func)s)";
"""

_BASH_SPECIAL = re.compile(r"""([\s'"\\$`!&;|<>()*?\[\]{}#~])""")


class NarrBash(BashComplete):
    """click's bash completion, with candidates escaped as bash would type them."""

    source_template = _BASH_SOURCE

    def format_completion(self, item: CompletionItem) -> str:
        value = _BASH_SPECIAL.sub(r"\\\1", item.value) if item.type == "plain" else item.value
        return f"{item.type},{value}"


class NarrFish(FishComplete):
    source_template = _FISH_SOURCE


add_completion_class(NarrBash, "bash")
add_completion_class(NarrFish, "fish")


def _guarded(ctx: click.Context, ask: Callable[[WorldRepo], list[Candidate]]) -> list[CompletionItem]:
    """What ``ask`` offers in the world ``-C`` names (or here); nothing when anything fails."""
    try:
        from narrative.store import WorldRepo

        with WorldRepo.open(_directory(ctx)) as wr:
            return [CompletionItem(c.value, help=c.help or None) for c in ask(wr)]
    except Exception:
        return []


def _nodes_guarded(ctx: click.Context,
                   ask: Callable[[NodeSource], list[Candidate]]) -> list[CompletionItem]:
    """As :func:`_guarded`, for what the world's files and catalog answer: git is not opened
    where the world is found without it (:class:`narrative.store.completion.Files`)."""
    try:
        from narrative.store import Files

        files = Files.find(_directory(ctx))
        if files is None:
            return _guarded(ctx, ask)
        try:
            return [CompletionItem(c.value, help=c.help or None) for c in ask(files)]
        finally:
            files.close()
    except Exception:
        return []


def _directory(ctx: click.Context) -> Path:
    from narrative.invocation import absolute

    return absolute(ctx.find_root().params.get("directory") or Path("."))


def complete_node(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """A node's id, name or alias."""
    from narrative.engine import complete

    return _nodes_guarded(ctx, lambda wr: complete.nodes(wr, incomplete))


def complete_field(ctx: click.Context, _param: click.Parameter,
                   incomplete: str) -> list[CompletionItem]:
    """A field of the node named before it (``narr get 林远 state.<TAB>``)."""
    from narrative.engine import complete

    node = next((v for k, v in ctx.params.items() if k in ("node_id", "node") and isinstance(v, str)),
                None)
    if node is None:
        return []
    return _nodes_guarded(ctx, lambda wr: complete.fields(wr, node, incomplete))


def complete_branch(ctx: click.Context, _param: click.Parameter,
                    incomplete: str) -> list[CompletionItem]:
    from narrative.engine import complete

    return _guarded(ctx, lambda wr: complete.branches(wr, incomplete))


def complete_rev(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """A revision: the branches (hashes, event ids and HEAD~N are typed, not listed)."""
    from narrative.engine import complete

    return _guarded(ctx, lambda wr: complete.branches(wr, incomplete))


def complete_rev_or_node(ctx: click.Context, _param: click.Parameter,
                         incomplete: str) -> list[CompletionItem]:
    """``narr log``'s argument: a branch, or a node."""
    from narrative.engine import complete

    return _guarded(ctx, lambda wr: [*complete.branches(wr, incomplete),
                                     *complete.nodes(wr, incomplete)])


def complete_chain(ctx: click.Context, _param: click.Parameter,
                   incomplete: str) -> list[CompletionItem]:
    """An abandoned chain's name (or number, once a digit is typed)."""
    from narrative.engine import complete

    return _guarded(ctx, lambda wr: complete.chains(wr, incomplete))


def script(cli: click.Command, shell: str, prog_name: str = "narr") -> str:
    """The completion script for ``shell``, as ``eval "$(narr completion bash)"`` runs it:
    click's own (``_NARR_COMPLETE=bash_source narr`` prints the same)."""
    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - the choice of shells is click's
        raise click.UsageError(f"no completion for {shell}")
    complete_var = f"_{prog_name}_COMPLETE".replace("-", "_").upper()
    return cls(cli, {}, prog_name, complete_var).source()


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion_cmd(ctx: click.Context, shell: str) -> None:
    """Print the script that makes SHELL complete narr's commands, node names and branches.

    Load it from your shell's start-up file; it asks narr itself at every TAB, so
    new nodes and branches are offered as soon as they exist.

    \b
    Examples:
      eval "$(narr completion bash)"                        # in ~/.bashrc
      eval "$(narr completion zsh)"                         # in ~/.zshrc
      narr completion fish > ~/.config/fish/completions/narr.fish
    """
    echo(script(ctx.find_root().command, shell), nl=False)


COMMANDS = [completion_cmd]
