"""Run the console sessions of README.md and docs/ and compare what they print.

docs/sessions.md is the writer's side of this: how a block is marked, where it runs, and how
output that changes from run to run (commit ids, event ids, times) is written.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = {"session", "start", "cwd", "env", "setup", "skip"}
DIRECTIVE = re.compile(r"<!--\s*narr-session\b(.*?)-->", re.S)


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    commands: list[tuple[str, str]]  # (command, expected output)
    options: dict[str, list[str]] = field(default_factory=dict)

    def option(self, key: str, default: str | None = None) -> str | None:
        values = self.options.get(key)
        return values[-1] if values else default

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def parse(path: Path) -> list[Block]:
    """Every ```console block of a Markdown file, with the directive comment just before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = re.match(r"^( *)```console\s*$", lines[i])
        if not opening:
            i += 1
            continue
        indent, start = opening.group(1), i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i].removeprefix(indent))
            i += 1
        blocks.append(Block(path, start + 1, _commands(body, path, start + 1),
                            _directive(lines[:start], path, start + 1)))
        i += 1
    return blocks


def _commands(body: list[str], path: Path, line: int) -> list[tuple[str, str]]:
    commands: list[tuple[str, list[str]]] = []
    for text in body:
        if text.startswith("$ "):
            commands.append((text[2:], []))
        elif not commands:
            raise ValueError(f"{path.name}:{line}: a console block must start with a '$ ' command line")
        else:
            commands[-1][1].append(text)
    return [(command, "\n".join(output)) for command, output in commands]


def _directive(before: list[str], path: Path, line: int) -> dict[str, list[str]]:
    """The ``<!-- narr-session ... -->`` comment separated from the fence by blank lines only."""
    j = len(before)
    while j and not before[j - 1].strip():
        j -= 1
    if not j or not before[j - 1].rstrip().endswith("-->"):
        return {}
    k = j
    while k and "<!--" not in before[k - 1]:
        k -= 1
    found = DIRECTIVE.search("\n".join(before[k - 1:j]))
    if not found:
        return {}
    options: dict[str, list[str]] = {}
    for entry in found.group(1).strip().splitlines():
        if not entry.strip():
            continue
        key, _, value = entry.strip().partition(":")
        if key.strip() not in KEYS:
            raise ValueError(f"{path.name}:{line}: unknown key {key.strip()!r} in the narr-session comment "
                             f"(known: {', '.join(sorted(KEYS))})")
        options.setdefault(key.strip(), []).append(value.strip())
    return options


def sessions() -> dict[str, list[Block]]:
    """Blocks grouped into sessions: blocks of one file naming the same session share a world."""
    grouped: dict[str, list[Block]] = {}
    for path in documents():
        for block in parse(path):
            name = block.option("session") or f"line-{block.line}"
            grouped.setdefault(f"{path.relative_to(ROOT)}::{name}", []).append(block)
    return grouped


# --- comparing ---------------------------------------------------------------------------------

_VARYING = re.compile(
    r"(?P<uuid>\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)"
    r"|(?P<time>\b\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?)?\b)"
    r"|(?P<hex>(?<![\w-])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?!\w))"
    r"|(?P<short>(?<=\w-)(?=[a-f]{0,3}[0-9])[0-9a-f]{4}(?![\w-]))"
    r"|(?P<any>\.\.\.)")


_IDS_IN_COMMANDS = re.compile(r"(?<![\w-])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?!\w)"
                              r"|(?<=\w-)(?=[a-f]{0,3}[0-9])[0-9a-f]{4}(?![\w-])")


class Ids:
    """The ids a session's expected text names, each bound to the one the real output printed."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def bind(self, expected: str, actual: str) -> str | None:
        """Two ids are one when they agree on the digits both show (a hash and its prefix)."""
        for known, real in self.pairs:
            n = min(len(expected), len(known))  # a UUIDv7's leading digits are a time: all count
            if (expected[:n] == known[:n]) != (actual[:n] == real[:n]):
                return (f"{expected} and {known} are {'one id' if expected[:n] == known[:n] else 'two ids'} "
                        f"in the document, but the output printed {actual} and {real}")
        self.pairs.append((expected, actual))
        return None

    def substitute(self, command: str) -> str:
        """The command with each id the document showed replaced by the one this run printed."""
        def real(match: re.Match[str]) -> str:
            token = match.group(0)
            for known, actual in self.pairs:
                n = min(len(token), len(known))
                if n >= 4 and token[:n] == known[:n]:
                    return actual[:len(token)] if len(token) <= len(actual) else token
            return token

        return _IDS_IN_COMMANDS.sub(real, command)

    def unsubstitute(self, output: str) -> str:
        """The output with each id this run printed written as the document wrote it."""
        def shown(match: re.Match[str]) -> str:
            token = match.group(0)
            for known, actual in self.pairs:
                n = min(len(token), len(actual))
                if n >= 4 and token[:n] == actual[:n]:
                    return known[:len(token)] if len(token) <= len(known) else token
            return token

        return _IDS_IN_COMMANDS.sub(shown, output)


def pattern(expected: str) -> tuple[re.Pattern[str], list[tuple[str, str]]]:
    """A regular expression for the expected output, and the varying parts in order."""
    parts: list[str] = []
    slots: list[tuple[str, str]] = []
    for line in expected.split("\n"):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        out, pos = [], 0
        for match in _VARYING.finditer(line):
            out.append(re.escape(line[pos:match.start()]))
            kind, text = match.lastgroup or "", match.group(0)
            if kind == "any":
                out.append(r"[^\n]*?")
            else:
                out.append({"uuid": r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
                            "time": "(" + re.sub(r"\d", r"\\d", re.escape(text)) + ")",
                            "hex": f"([0-9a-f]{{{len(text)}}})", "short": "([0-9a-f]{4})"}[kind])
                slots.append((kind, text))
            pos = match.end()
        out.append(re.escape(line[pos:]))
        parts.append("".join(out) + r"\n")
    return re.compile("".join(parts)), slots


def compare(expected: str, actual: str, ids: Ids) -> str | None:
    """None when the output is what the document says, else why not."""
    expected = "\n".join(line.rstrip() for line in expected.split("\n")).strip("\n")
    actual = "\n".join(line.rstrip() for line in actual.split("\n")).strip("\n")
    regex, slots = pattern(expected)
    match = regex.fullmatch(actual + "\n" if actual else "")
    if match is None and not expected:
        match = regex.fullmatch("\n") if not actual else None
    if match is None:
        diff = difflib.unified_diff(expected.splitlines(), actual.splitlines(), "the document", "the output",
                                    lineterm="")
        return "\n".join(diff)
    for (kind, text), value in zip(slots, match.groups(), strict=True):
        if kind in ("hex", "uuid", "short"):
            problem = ids.bind(text.replace("-", ""), value.replace("-", ""))
            if problem:
                return problem
    return None


# --- running -----------------------------------------------------------------------------------

@dataclass
class Session:
    directory: Path
    shown_as: str
    cwd: Path
    env: dict[str, str]
    ids: Ids = field(default_factory=Ids)
    status: int = 0


SAMPLE = "narr init my-world --sample >/dev/null && cd my-world"  # how a session starts by default


def start(blocks: list[Block], directory: Path, sample: Path | None = None) -> Session:
    """A session for ``blocks`` in ``directory``; ``sample``, a world made by ``SAMPLE`` (see
    ``sample_world``), is copied for a session that starts in the sample world instead of running
    ``narr init`` again."""
    first = blocks[0]
    session = _session(directory, first.option("cwd", "/home/me") or "/home/me")
    how = first.option("start", "sample")
    if how == "sample" and sample is not None:
        session.cwd = Path(shutil.copytree(sample, directory / "my-world", symlinks=True))
    elif how == "sample":
        _run(session, SAMPLE, check=True)
    elif how != "nothing":
        raise ValueError(f"{first.where}: start is 'sample' or 'nothing', not {how!r}")
    return session


def sample_world(directory: Path) -> Path:
    """The sample world as a session starts in it (``SAMPLE`` run in ``directory``), to copy."""
    session = _session(directory, "/home/me")
    _run(session, SAMPLE, check=True)
    return session.cwd


def _session(directory: Path, shown_as: str) -> Session:
    directory.mkdir(parents=True, exist_ok=True)
    env = {**os.environ}
    env.update({
        "HOME": str(directory), "XDG_CONFIG_HOME": str(directory / ".config"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "NARR_NO_SERVER": "1", "NARR_PAGER": "",
        "TZ": "UTC", "LC_ALL": "C.UTF-8", "COLUMNS": "100", "NARR_REPO": str(ROOT),
    })
    env.setdefault("PYTHONPATH", str(ROOT))
    if "GIT_CONFIG_GLOBAL" not in env:  # run by hand, outside the tests' isolated HOME
        for key in [k for k in env if k.startswith(("GIT_", "NARR_")) and k != "NARR_REPO"]:
            del env[key]
        env.update({"NARR_NO_SERVER": "1", "NARR_PAGER": "", "GIT_CONFIG_NOSYSTEM": "1"})
        (directory / ".gitconfig").write_text(
            "[user]\n\tname = Test Author\n\temail = author@example.invalid\n"
            "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    return Session(directory, shown_as, directory, env)


def _run(session: Session, script: str, *, check: bool = False) -> str:
    state = session.directory / ".narr-doc-state"
    # `$?` carries over from the command before, as in one shell
    full = (f"cd {shlex.quote(str(session.cwd))}\n(exit {session.status})\n{script}\n__narr_doc_status=$?\n"
            f"pwd > {shlex.quote(str(state))}.cwd\nexport -p > {shlex.quote(str(state))}.env\n"
            "exit $__narr_doc_status\n")
    result = subprocess.run(["bash", "-c", full], env=session.env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    session.status = result.returncode
    if check and result.returncode != 0:
        raise AssertionError(f"setup failed ({result.returncode}):\n{script}\n{result.stdout}")
    session.cwd = Path((state.with_suffix(".cwd")).read_text(encoding="utf-8").strip())
    exported = subprocess.run(["bash", "-c", f"source {shlex.quote(str(state))}.env 2>/dev/null; env -0"],
                              env={}, capture_output=True, text=True, check=True).stdout
    env = dict(item.split("=", 1) for item in exported.split("\0") if "=" in item)
    session.env = {k: v for k, v in env.items()
                   if k not in ("PWD", "OLDPWD", "SHLVL", "_", "__narr_doc_status")}
    return result.stdout


def run_block(session: Session, block: Block) -> list[str]:
    """Run one block's setup and commands; the problems found, each naming its command."""
    for assignment in block.options.get("env", []):
        name, _, value = assignment.partition("=")
        session.env[name.strip()] = value.strip()
    for setup in block.options.get("setup", []):
        _run(session, setup, check=True)
    problems = []
    for command, expected in block.commands:
        output = _run(session, session.ids.substitute(command))
        for real in {str(session.directory.resolve()), str(session.directory)}:
            output = output.replace(real, session.shown_as)
        problem = compare(expected, output, session.ids)
        if problem:
            problems.append(f"{block.where}: $ {command}\n{problem}")
    return problems


def update(path: Path, directory: Path) -> int:
    """Write into ``path`` what each of its console blocks prints where the page is wrong; the
    lines that already match (``...`` and ids included) stay as written. Returns how many
    commands changed. Read the diff before committing it."""
    text = path.read_text(encoding="utf-8").split("\n")
    grouped = {k: v for k, v in sessions().items() if k.startswith(f"{path.relative_to(ROOT)}::")}
    changes: dict[int, list[str]] = {}  # fence line -> the block's new body
    changed = 0
    for number, blocks in enumerate(grouped.values()):
        if any(b.option("skip") for b in blocks):
            continue
        session = start(blocks, directory / str(number))
        for block in blocks:
            for assignment in block.options.get("env", []):
                name, _, value = assignment.partition("=")
                session.env[name.strip()] = value.strip()
            for setup in block.options.get("setup", []):
                _run(session, setup, check=True)
            body: list[str] = []
            for command, expected in block.commands:
                output = _run(session, session.ids.substitute(command))
                for real in {str(session.directory.resolve()), str(session.directory)}:
                    output = output.replace(real, session.shown_as)
                if compare(expected, output, session.ids) is not None:
                    output = session.ids.unsubstitute(output)
                    expected = "\n".join(line.rstrip() for line in output.rstrip("\n").split("\n"))
                    compare(expected, output, session.ids)  # binds the ids it printed first
                    changed += 1
                body += [f"$ {command}", *([expected] if expected else [])]
            changes[block.line] = body
    for line in sorted(changes, reverse=True):
        indent = re.match(r"^( *)", text[line - 1]).group(1)  # type: ignore[union-attr]
        end = line
        while text[end].strip() != "```":
            end += 1
        text[line:end] = [f"{indent}{x}" if x else x for x in "\n".join(changes[line]).split("\n")]
    path.write_text("\n".join(text), encoding="utf-8")
    return changed


if __name__ == "__main__":
    import tempfile

    if len(sys.argv) < 3 or sys.argv[1] != "--update":
        raise SystemExit("usage: python tests/doc_sessions.py --update PAGE.md...")
    for page in sys.argv[2:]:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"{page}: {update(Path(page).resolve(), Path(tmp))} command(s) rewritten")
