"""Terminal habits: colour and a pager when a person reads, plain text when a program does.

Colour is on only when the stream is a terminal and neither ``NO_COLOR`` (any
non-empty value, https://no-color.org) nor ``narr --no-color`` says otherwise:
old values red, new values green, hand edits and warnings yellow. A pipe never
gets escape codes, so what scripts parse does not change.

Long output of ``log``, ``history``, ``story`` and ``show`` goes through a pager
as git's does: ``NARR_PAGER``, else ``PAGER``, else ``less``, run by the shell,
with ``LESS=FRX`` unless ``LESS`` is set (quit when it fits, keep the colours, leave
the text on the screen). Only when stdout is a terminal and the text is longer than
the window; an empty ``NARR_PAGER``, ``cat`` or ``--no-pager`` prints directly.

Long operations (``check``, ``import``, ``replay``) draw a progress bar on stderr, only
when stderr is a terminal and the output is not ``--json``, once the work has lasted
:data:`PROGRESS_DELAY` seconds (``NARR_PROGRESS_DELAY``), and erase it when done, so
what stays on the screen is the answer, as with git.
"""

from __future__ import annotations

import io
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from typing import Any, Final, TypeVar

import click

from narrative import invocation
from narrative.cli.context import Context

F = TypeVar("F", bound=Callable[..., Any])

COLOURS: Final = {"old": "red", "new": "green", "edit": "yellow", "warning": "yellow"}
PROGRESS_DELAY: Final = 0.5
"""Seconds a long operation runs before its bar appears: a quick one never flickers."""


def colour_allowed(ctx: Context | None, stream: object) -> bool:
    if invocation.getenv("NO_COLOR") or (ctx is not None and ctx.no_color):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _context() -> Context | None:
    click_ctx = click.get_current_context(silent=True)
    return click_ctx.find_object(Context) if click_ctx is not None else None


def paint(text: str, role: str, *, err: bool = False) -> str:
    """``text`` in the colour of ``role`` (``old``, ``new``, ``edit``, ``warning``) when colour is on.

    The colour codes are marked (:data:`_OURS`), not written as escape sequences: :func:`echo`
    escapes every control character of the text and turns only narr's own marks into colour.
    """
    ctx = _context()
    if ctx is None:
        return text
    on = ctx.colour_err if err else ctx.colour_out
    if not on:
        return text
    return click.style(safe(text), fg=COLOURS[role]).replace("\x1b[", _OURS)


# --- text from a world, shown on a terminal ----------------------------------------------------
#
# A world may come from anyone, and its names, contents and values reach the screen: an OSC 52
# sequence writes the reader's clipboard, ESC[2J clears the screen, a backspace or a carriage
# return hides what came before, a right-to-left override reorders a line. As git shows such
# bytes in paths quoted (core.quotePath), narr shows every control character but tab and
# newline escaped (``\x1b``, ``\u202e``); ``--json`` stays exact (JSON escapes them itself).

_OURS: Final = "\ud800"  # marks narr's own colour codes: a lone surrogate, which no world text
# decoded from UTF-8 holds, and which only ever opens one of click's colour codes below
_COLOUR_CODES: Final = ("0m", "31m", "32m", "33m", "39m")
_CONTROL = re.compile(
    "\ud800(?:" + "|".join(_COLOUR_CODES) + ")"
    "|[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]")


def _shown(match: re.Match[str]) -> str:
    found = match.group()
    if len(found) > 1:
        return "\x1b[" + found[1:]  # narr's own colour
    code = ord(found)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe(text: str) -> str:
    """``text`` with every control character but tab and newline escaped (narr's own colour
    marks made colour codes)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_shown, text)


def echo(message: Any = None, *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` for text a person reads: control characters escaped (:func:`safe`),
    unless the command prints ``--json``, which goes out exact."""
    ctx = _context()
    if isinstance(message, str):
        message = _MARK.sub("\x1b[", message) if ctx is not None and ctx.json else safe(message)
    click.echo(message, err=err, nl=nl)


_MARK = re.compile("\ud800(?=" + "|".join(_COLOUR_CODES) + ")")


class _Captured(io.StringIO):
    """Output held for the pager: a terminal as click sees it, so the colours stay."""

    def isatty(self) -> bool:
        return True


def pager_command() -> str | None:
    """The pager to run, or None to print directly."""
    env = invocation.environ()
    for name in ("NARR_PAGER", "PAGER"):
        if name in env:
            command = env[name].strip()
            break
    else:
        command = "less"
    if command in ("", "cat"):
        return None
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return None
    import shutil  # loaded only where a pager may run

    return command if shutil.which(program, path=env.get("PATH")) is not None else None


@contextmanager
def paged(ctx: Context) -> Iterator[None]:
    """Hold what the block prints; page it if it is longer than the terminal, else print it."""
    out = sys.stdout
    # Output to no terminal is never paged: looking for the pager (a walk of PATH) would
    # cost a served log or show a tenth of its time.
    command = None if ctx.no_pager or not out.isatty() else pager_command()
    if command is None:
        yield
        return
    held = _Captured()
    # A server's stdout stands for the request's own: redirect only that one.
    redirected = getattr(out, "narr_redirected", None)
    try:
        with redirected(held) if redirected is not None else redirect_stdout(held):
            yield
    finally:
        text = held.getvalue()
        import shutil

        if text.count("\n") < shutil.get_terminal_size().lines:
            out.write(text)
            out.flush()
        else:
            run_pager(command, text)


def run_pager(command: str, text: str) -> None:
    page = getattr(sys.stdout, "narr_page", None)
    if page is not None and page(command, text):
        return  # a server's client runs the pager, on its own terminal
    env = dict(invocation.environ())
    env.setdefault("LESS", "FRX")
    sys.stdout.flush()
    import subprocess

    proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env, cwd=invocation.cwd())
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode("utf-8"))
        proc.stdin.close()
    except BrokenPipeError:  # the reader quit the pager before the end
        pass
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:  # ^C belongs to the pager, as with git
            continue


def _no_pager(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    obj = ctx.find_object(Context)
    if obj is not None and value:
        obj.no_pager = True
    return value


def no_pager_option(func: F) -> F:
    """``--no-pager`` on a command that pages, as well as before it (``narr --no-pager log``)."""
    return click.option("--no-pager", is_flag=True, expose_value=False, callback=_no_pager,
                        help="Print directly, without a pager.")(func)


class ProgressBar:
    """``bar(done, total, item)`` draws click's progress bar on stderr; a new ``total``, or
    ``done`` going back, starts a new phase (reading, then matching). See the module
    docstring for when it is drawn at all."""

    def __init__(self, label: str, delay: float) -> None:
        import time

        self.label = label
        self.started = time.monotonic() + delay
        self.bar: Any = None
        self.total = -1
        self.done = 0

    def __call__(self, done: int, total: int, item: str = "") -> None:
        import time

        if self.bar is None and time.monotonic() < self.started:
            self.total, self.done = total, done
            return
        if self.bar is None or total != self.total or done < self.done:
            self._erase()
            self.bar = click.progressbar(
                length=max(total, 1), label=self.label, file=sys.stderr, show_pos=True,
                show_eta=False, update_min_steps=max(1, total // 200),
                item_show_func=lambda text: text)
            self.total, self.done = total, 0
        self.bar.update(max(done - self.done, 0), safe((item.splitlines() or [""])[0][:40]))
        self.done = done

    def _erase(self) -> None:
        if self.bar is not None:
            sys.stderr.write("\r\x1b[K\x1b[?25h")  # erase the line, show the cursor again
            sys.stderr.flush()
            self.bar = None

    def close(self) -> None:
        self._erase()


@contextmanager
def progress_bar(label: str, *, as_json: bool = False) -> Iterator[ProgressBar | None]:
    """A :class:`ProgressBar` for the block on a terminal (not for ``--json``), else None."""
    isatty = getattr(sys.stderr, "isatty", None)
    if as_json or not (isatty and isatty()):
        yield None
        return
    try:
        delay = float(invocation.getenv("NARR_PROGRESS_DELAY") or PROGRESS_DELAY)
    except ValueError:
        delay = PROGRESS_DELAY
    bar = ProgressBar(label, delay)
    try:
        yield bar
    finally:
        bar.close()
