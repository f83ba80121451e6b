"""``narr serve``: keep narr warm for this world (see :mod:`narrative.serve.server`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_json, json_option
from narrative.cli.terminal import echo

_START_TIMEOUT = 20.0


@click.command("serve")
@click.option("--detach", is_flag=True, help="Start the server in the background and return once it "
                                             "listens.")
@click.option("--stop", "stop_it", is_flag=True, help="Stop this world's server.")
@click.option("--status", "show_status", is_flag=True, help="Say whether a server runs, and how.")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Also serve the JSON API on http://127.0.0.1:PORT/api/ and the studio at / "
                   "(0: any free port).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address the API listens on with --port. Anything but loopback lets other "
                   "machines reach it (they still need the token).")
@click.option("--idle", "idle", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="MINUTES", help="Exit after MINUTES without a request (default: run until "
                                      "stopped; a server a command starts uses narr.serveIdle, "
                                      "15 unless set).")
@click.option("--auto", is_flag=True, hidden=True,
              help="Started by a command that found no server.")
@click.option("--started-by", "started_by", default=None, hidden=True,
              help="What started this server, for --status.")
@json_option
@pass_context
def serve_cmd(ctx: Context, detach: bool, stop_it: bool, show_status: bool, port: int | None,
              host: str, idle: float | None, auto: bool, started_by: str | None,
              as_json: bool) -> None:
    """Run a server that keeps this world open, so narr commands answer in milliseconds.

    While it runs, narr commands in this world are handed to it over a Unix
    socket in .git/narr/ instead of starting Python afresh, and hand edits are
    found from a file watcher instead of a walk of every file. Output and exit
    codes are the same either way. Without --detach it runs in the foreground
    until interrupted.

    The first command that finds no server starts one in the background; it
    exits after narr.serveIdle minutes without a request (15 unless set), when
    narr's code or Python changes, and when its world is moved or replaced. None
    starts by itself with git config narr.autoServe false (in the world, or
    --global), NARR_NO_SERVER=1, or CI set. A server's record is trusted only
    while the server holds the world's lock and is the very process that wrote
    it: a stale or copied record is removed, and no other process is ever
    signalled.

    \b
    Examples:
      narr serve --detach
      narr serve --status
      narr serve --stop
    """
    from narrative import client
    from narrative.errors import InvalidInputError
    from narrative.serve import server

    if sum((detach, stop_it, show_status, auto)) > 1:
        raise click.UsageError("--detach, --stop and --status go one at a time")
    if idle is not None and (stop_it or show_status):
        raise click.UsageError("--idle is for a server being started")
    if host != "127.0.0.1" and port is None:
        raise click.UsageError("--host is where the API listens: give --port too")
    wr = ctx.world
    root, git_dir = wr.root, wr.git_dir
    ctx.close()  # the server opens the world afresh for every request
    from narrative.serve.autostart import off_because

    if stop_it:
        info = server.stop(git_dir)
        _report(_answer(False, stopped=info is not None, pid=info.get("pid") if info else None,
                        off=off_because(str(git_dir))), as_json)
        return
    if show_status:
        record = server.running(git_dir)
        live = server.control(git_dir, "status") if record is not None else None
        if record is None:
            from narrative.serve.autostart import waiting

            server.remove_stale_record(git_dir)
            _report(_answer(False, autostart=waiting(git_dir), off=off_because(str(git_dir))),
                    as_json)
            return
        state = "stopped" if client.serving(record) == "stopped" else "running"
        memory = (live or {}).get("memory_mib") or client.resident_mib(int(record["pid"]))
        _report(_answer(True, {**record, **(live or {}), "memory_mib": memory},
                        live=live is not None, state=state,
                        current=record.get("version") == client.code_version(),
                        off=off_because(str(git_dir))), as_json)
        return
    if auto:
        from narrative.serve.autostart import idle_minutes

        srv = server.Server(root, git_dir, port, host, auto=True, started_by="a narr command",
                            idle_minutes=idle if idle is not None else idle_minutes(str(git_dir)))
        srv.run()
        return
    current = server.running(git_dir)
    if current is None:
        server.remove_stale_record(git_dir)
    elif current.get("version") != client.code_version():
        server.stop(git_dir)  # a server of other code is never used: make way for this one
        current = None
    elif current.get("auto"):
        # Started by a command, to exit when idle: the server asked for here (its port, no
        # idle exit unless --idle) takes its place.
        server.stop(git_dir)
        current = None
    elif detach and not _serves_as_asked(current, port, host):
        where = f"port {current['port']}" if current.get("port") else "no port"
        raise InvalidInputError(
            f"a narr server already serves this world (pid {current['pid']}) on {where}",
            hint="narr serve --stop stops it; then start the one you want")
    if detach:
        if current is None:
            current = _spawn(root, port, host, idle, started_by or "narr serve --detach")
        _report(_answer(True, current), as_json)
        return
    if current is not None:
        raise InvalidInputError(f"a narr server already serves this world (pid {current['pid']})",
                                hint="narr serve --stop stops it")
    srv = server.Server(root, git_dir, port, host, idle_minutes=idle,
                        started_by=started_by or "narr serve")
    srv.run(ready=lambda record: _report(_answer(True, record), as_json))


def _serves_as_asked(current: dict[str, Any], port: int | None, host: str) -> bool:
    """Whether a running server gives what ``--port``/``--host`` ask for (any port for 0)."""
    if port is None:
        return True
    if not current.get("port") or current.get("host") != host:
        return False
    return port == 0 or current.get("port") == port


def _spawn(root: Path, port: int | None, host: str = "127.0.0.1",
           idle: float | None = None, started_by: str = "narr serve --detach") -> dict[str, Any]:
    from narrative.errors import NarrError
    from narrative.serve import server

    wr_git = _git_dir(root)
    log = wr_git / "narr" / "serve.log"
    server.narr_dir(wr_git)
    args = [sys.executable, "-m", "narrative", "-C", str(root), "serve"]
    if port is not None:
        args += ["--port", str(port), "--host", host]
    if idle is not None:
        args += ["--idle", repr(idle)]
    args += ["--started-by", started_by]
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True, cwd=root)
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        info = server.running(wr_git)
        if info is not None and info.get("pid") == proc.pid:
            return info
        time.sleep(0.02)
    tail = log.read_text("utf-8", "replace").strip().splitlines()[-3:] if log.exists() else []
    if proc.poll() is None:
        proc.kill()
    raise NarrError("narr serve --detach: the server did not start", details=tail,
                    hint=f"its output is in {log}")


@click.command("studio")
@click.option("--url", "print_url", is_flag=True,
              help="Print the studio's address (with the world's token) instead of opening a browser.")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="The port for a server started now (default: any free port).")
@json_option
@pass_context
def studio_cmd(ctx: Context, print_url: bool, port: int | None, as_json: bool) -> None:
    """Open the studio, the world in your browser: both graphs, edits, events, time travel.

    Starts this world's server in the background (with the HTTP API on
    127.0.0.1) when none runs, then opens http://127.0.0.1:PORT/ with the world's
    token in your web browser; a server started with narr serve --port (and
    --host) is used as it is. With --url it prints that address instead, for a
    browser elsewhere (forward the port over ssh) or a script. The address holds
    the token: whoever has it can change the world.

    \b
    Examples:
      narr studio
      narr studio --url --port 8765
    """
    import webbrowser

    from narrative import client
    from narrative.serve import server

    wr = ctx.world
    root, git_dir = wr.root, wr.git_dir
    ctx.close()
    current = server.running(git_dir)
    if current is None:
        server.remove_stale_record(git_dir)
    if current is not None and (current.get("version") != client.code_version()
                                or not current.get("port")
                                or (port not in (None, 0) and current.get("port") != port)):
        server.stop(git_dir)  # no HTTP, other code or another port: start the one asked for
        echo(f"narr studio: restarting this world's server (pid {current['pid']}) with the "
                   "HTTP API", err=True)
        current = None
    if current is None:
        from narrative.serve.autostart import auto_serve, idle_minutes

        # under narr.autoServe, the studio's server is one like it: it exits when idle
        # (an open page's change stream is activity), not never
        idle = idle_minutes(str(git_dir)) if auto_serve(str(git_dir)) else None
        current = _spawn(root, 0 if port is None else port, idle=idle, started_by="narr studio")
    host = str(current.get("host") or "127.0.0.1")
    if host in ("0.0.0.0", "::"):  # every address: this machine's browser uses loopback
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    url = f"http://{host}:{current['port']}/?token={server.token(git_dir)}"
    opened = False if print_url else webbrowser.open(url)
    data = {"url": url, "port": current["port"], "pid": current["pid"], "opened": opened}
    if as_json:
        emit_json(data, "studio")
    elif print_url:
        echo(url)
    elif opened:
        echo(f"narr studio: opened in your browser: {url}")
    else:
        echo(f"narr studio: no browser could be opened here; visit {url}")
    sys.stdout.flush()


def _git_dir(root: Path) -> Path:
    from narrative.store import WorldRepo

    with WorldRepo.open(root) as wr:
        return wr.git_dir


_RECORD = ("pid", "process", "version", "socket", "root", "git_dir", "port", "host", "started",
           "auto", "started_by", "idle_minutes", "memory_mib")
_LIVE = ("requests", "active", "idle_s", "exits_at", "watcher")


def _answer(running: bool, found: dict[str, Any] | None = None, *, live: bool = False,
            stopped: bool = False, pid: int | None = None, current: bool | None = None,
            state: str | None = None, autostart: dict[str, Any] | None = None,
            off: str | None = None) -> dict[str, Any]:
    """The server answer (narr.server): every key there whatever happened, null what is not
    known, so a program reads one shape; ``found`` the server's record, with its live status
    when ``live``; ``state`` running or stopped (SIGSTOP, Ctrl-Z); ``autostart`` the failed
    automatic starts being waited out, if any; ``off`` why no server starts by itself."""
    found = found or {}
    return {"running": running, "stopped": stopped, "state": state,
            **{key: found.get(key) for key in _RECORD}, "pid": found.get("pid", pid),
            **{key: found.get(key) if live else None for key in _LIVE}, "current": current,
            "autostart": autostart, "autostart_off": off}


def _about(data: dict[str, Any]) -> list[str]:
    """Who started a running server, what it holds, how long it has been idle."""
    by = data.get("started_by") or ("a narr command" if data.get("auto") else "narr serve")
    about = [f"started by {by}" + (" (automatically)" if data.get("auto") else "")]
    if data.get("memory_mib") is not None:
        about.append(f"{data['memory_mib']:.0f} MiB resident")
    if data.get("idle_s") is not None:
        idle = float(data["idle_s"])
        about.append(f"idle {idle:.0f} s" if idle < 120 else f"idle {idle / 60:.0f} minutes")
    return about


def _report(data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(data, "server")
    elif not data.get("running"):
        echo("narr serve: stopped (pid {})".format(data["pid"]) if data.get("stopped")
                   else "narr serve: no server runs for this world")
        failed = data.get("autostart")
        if data.get("autostart_off"):
            echo(f"  none starts by itself: {data['autostart_off']}")
        elif failed:
            times = failed.get("failures", 1)
            clock = time.strftime("%H:%M", time.localtime(float(failed.get("retry_at", 0))))
            echo(f"  the last automatic start failed ({times} in a row; see "
                 f".git/narr/serve.log); the first command after {clock} tries again "
                 "(narr serve --detach starts one now)")
        elif not data.get("stopped"):
            echo("  the next narr command in this world starts one")
    else:
        where = data.get("socket")
        port = f", http://{data.get('host') or '127.0.0.1'}:{data['port']}/api/" if data.get("port") else ""
        echo(f"narr serve: pid {data['pid']}, listening on {where}{port}")
        echo("  " + "; ".join(_about(data)))
        if data.get("state") == "stopped":
            echo(f"  stopped (SIGSTOP or Ctrl-Z): commands run without it until it goes on "
                 f"(kill -CONT {data['pid']}) or stops (narr serve --stop)")
        watcher = data.get("watcher")
        if watcher:
            echo(f"  {data.get('requests', 0)} requests; scans: {watcher['hinted_scans']} "
                       f"from the file watcher, {watcher['full_scans']} full")
        if data.get("exits_at"):
            at = time.strftime("%H:%M", time.localtime(float(data["exits_at"])))
            click.echo(f"  exits after {data.get('idle_minutes', 0):g} minutes without a request "
                       f"(at {at} if none comes)")
        if data.get("current") is False:
            echo("  it runs other code than this narr: clients do not use it")
    sys.stdout.flush()


COMMANDS = [serve_cmd, studio_cmd]
