"""Shell completion: node names, branches and chains at TAB, fast, never a traceback.

The completions are asked directly (click's own completion entry, as a shell's
script asks it), through the ``narr`` entry point as a separate process, and in a
real bash in a pseudo-terminal with ``narr completion bash`` loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from click.shell_completion import get_completion_class
from helpers import CLI

from narrative.cli import main


def _complete(root: Path, line: str) -> list[str]:
    """The values narr offers for the last word of ``line`` (``narr`` itself left out);
    words holding spaces are separated by ``|`` instead."""
    head, bar, typed = line.rpartition("|")
    words = head.split("|") if bar else line.split(" ")[:-1]
    typed = typed if bar else line.split(" ")[-1]
    cls = get_completion_class("bash")
    assert cls is not None
    comp = cls(main, {}, "narr", "_NARR_COMPLETE")
    return [item.value for item in comp.get_completions(["-C", str(root), *words], typed)]


@pytest.fixture
def small(tmp_path: Path) -> CLI:
    narr = CLI(tmp_path / "tale")
    CLI(tmp_path)("init", str(narr.root), "--rules", "both")
    narr("new", "character", "林远", "--alias", "Lin Yuan")
    narr("new", "character", "Su Qing", "--alias", "苏晴")
    narr("new", "background", "渡口", "--kind", "place", "--alias", "The Ferry")
    narr("event", "begin")
    return narr


def test_nodes_by_id_name_and_alias(small: CLI) -> None:
    root = small.root
    assert _complete(root, "get li") == ["lin-yuan"]
    assert _complete(root, "get 林") == ["林远"]
    assert _complete(root, "get|lin y") == ["Lin Yuan"]
    assert _complete(root, "get SU") == ["su-qing"]
    assert _complete(root, "get|the f") == ["The Ferry"]
    assert _complete(root, "get ") == ["du-kou", "lin-yuan", "su-qing"]
    assert _complete(root, "get x") == []
    for line in ("edit 苏", "path 苏", "history 苏", "why 苏", "brief --focus 苏", "brief --pov 苏",
                 "event x --expire 苏", "reset --before 苏", "graph connect 苏", "resolve 苏"):
        assert _complete(root, line) == ["苏晴"], line
    # a node made since the last event is offered by its name too
    small("new", "item", "黑戒", "--alias", "Black Ring")
    assert _complete(root, "get bl") == ["Black Ring"]
    assert _complete(root, "get hei") == ["hei-jie"]


def test_fields_of_the_node_named_before(small: CLI) -> None:
    root = small.root
    small("event", "x", "--set", "林远.state.mood=calm", "--set", "林远.state.location=渡口")
    assert _complete(root, "get 林远 state.") == ["state.location", "state.mood"]
    assert _complete(root, "why|lin yuan|s") == ["state", "state.location", "state.mood", "summary"]
    assert _complete(root, "get nobody s") == []
    assert _complete(root, "get lin-yuan zz") == []


def test_branches_and_chains(small: CLI) -> None:
    root = small.root
    small("branch", "dream")
    assert _complete(root, "switch d") == ["dream"]
    assert _complete(root, "merge ") == ["dream", "main"]
    assert _complete(root, "show ") == ["dream", "main"]
    assert _complete(root, "log d") == ["dream", "du-kou"]
    small("event", "The rain stops", "--diffuser", "explicit")
    small("reset", "HEAD~1")
    (chain,) = small.json("chains")["items"]
    assert _complete(root, "replay ") == [chain["name"]]
    assert _complete(root, "replay 1") == ["1"]
    assert _complete(root, "chains drop r") == [chain["name"]]


def test_zsh_and_fish_carry_the_name_as_help(small: CLI) -> None:
    env = {**os.environ, "COMP_WORDS": f"narr -C {small.root} get li", "COMP_CWORD": "4",
           "_NARR_COMPLETE": "zsh_complete"}
    out = _run_narr(env)
    assert out == "plain\nlin-yuan\n林远 (character)\n"
    env.update(_NARR_COMPLETE="fish_complete", COMP_CWORD="li")
    assert _run_narr(env) == "plain,lin-yuan\t林远 (character)\n"
    for shell in ("bash", "zsh", "fish"):
        script = small("completion", shell).stdout
        assert "_NARR_COMPLETE" in script and f"{shell}_complete" in script
    # narr completion prints what click's own variable does
    env = {**os.environ, "_NARR_COMPLETE": "bash_source"}
    assert _run_narr(env) == small("completion", "bash").stdout


def _narr_script(tmp_path: Path) -> Path:
    """A ``narr`` program on PATH, the entry point as installed (narrative.client)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "narr"
    script.write_text(f"#!{sys.executable}\nfrom narrative.client import main\nmain()\n", "utf-8")
    script.chmod(0o755)
    return bin_dir


def _run_narr(env: dict[str, str]) -> str:
    bin_dir = _narr_script(Path(env["HOME"]))
    env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}
    proc = subprocess.run(["narr"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout


def test_a_broken_world_or_no_world_offers_nothing_quietly(small: CLI, tmp_path: Path) -> None:
    (small.root / "narr.toml").write_text("[world\nname = ", "utf-8")
    assert _complete(small.root, "get li") == []
    assert _complete(tmp_path / "nowhere", "get li") == []
    env = {**os.environ, "COMP_WORDS": f"narr -C {small.root} get li", "COMP_CWORD": "4",
           "_NARR_COMPLETE": "bash_complete"}
    assert _run_narr(env).strip() == ""  # and nothing on stderr: checked by _run_narr


def test_completion_never_goes_to_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from narrative import client

    monkeypatch.setattr(client, "program_name", lambda: "narr")
    assert client.completing({"_NARR_COMPLETE": "bash_complete"})
    assert not client.completing({"NARR_PAGER": ""})

    def refuse(argv: list[str]) -> None:
        raise AssertionError("a completion must run in the shell's own process")

    def leave(code: int, *, at_exit: bool = False) -> None:
        raise SystemExit(code)  # as the process would, without ending this one

    monkeypatch.setattr(client, "connect", refuse)
    monkeypatch.setattr(client, "_leave", leave)
    monkeypatch.setenv("_NARR_COMPLETE", "bash_source")
    with pytest.raises(SystemExit) as exit_:
        client.main()
    assert exit_.value.code == 0


def test_tab_in_a_real_bash(small: CLI, tmp_path: Path) -> None:
    small("branch", "dream")
    bin_dir = _narr_script(tmp_path)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PS1": "$ ",
           "NARR_PAGER": "", "INPUTRC": "/dev/null"}
    bash = pexpect.spawn("bash", ["--norc", "--noprofile"], env=env, cwd=str(small.root),
                         encoding="utf-8", timeout=30, dimensions=(24, 200))
    try:
        bash.sendline('eval "$(narr completion bash)"; echo LOADED')
        bash.expect("LOADED\r\n")
        bash.send("narr get li\t")
        bash.expect("lin-yuan ")
        bash.sendline("state")
        bash.expect(r"\{\}")  # the command as completed ran: the node's (empty) state
        bash.send("narr get the\\ f\t")
        bash.expect(r"The\\ Ferry ")
        bash.sendline("kind")
        bash.expect("place")
        bash.send("narr swi\t")
        bash.expect("switch ")
        bash.send("dr\t")
        bash.expect("dream ")
        bash.sendline("--json")
        bash.expect('"branch": "dream"')
        bash.sendline("exit")
        bash.expect(pexpect.EOF)
    finally:
        bash.close(force=True)
