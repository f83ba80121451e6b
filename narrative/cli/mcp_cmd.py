"""``narr mcp``: the world's operations for agents, over the Model Context Protocol."""

from __future__ import annotations

import click

from narrative.cli.context import Context, pass_context


@click.command("mcp")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Serve the protocol's HTTP transport on http://127.0.0.1:PORT/mcp instead of "
                   "stdio (0: any free port); requests need the world's token.")
@pass_context
def mcp_cmd(ctx: Context, port: int | None) -> None:
    """Serve this world to an MCP client (an agent host) until it hangs up.

    Tools: brief, get_node, list_nodes, search, why, history, threads, log,
    show, status, branches, chains, audit, and the writes event, reset,
    revert and replay (marked as writes, so a client can ask first). Each
    answers the versioned JSON of the HTTP API. Resources: narr://brief and
    narr://node/ID. Over stdio by default: the client starts the command.
    Needs the mcp package: pip install 'narr[mcp]'.

    \b
    Examples:
      narr mcp
      narr mcp --port 8766
    """
    from narrative.errors import RequirementError

    try:
        import mcp  # noqa: F401
    except ImportError:
        raise RequirementError("narr mcp needs the mcp package, which is not installed",
                               hint="pip install 'narr[mcp]'") from None
    from narrative.serve import mcp as server

    wr = ctx.world
    root, git_dir = wr.root, wr.git_dir
    ctx.close()  # each call opens the world afresh
    if port is None:
        server.serve_stdio(root, git_dir)
        return
    server.serve_http(root, git_dir, port, ready=lambda bound: click.echo(
        f"narr mcp: http://127.0.0.1:{bound}/mcp (Authorization: Bearer <.git/narr/token>)", err=True))


COMMANDS = [mcp_cmd]
