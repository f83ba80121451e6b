"""The ``exec`` diffuser: a real program on stdin/stdout, including the example in examples/."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, read_node, snapshot

from narrative.delta.request import EventRequest
from narrative.diffusers.base import get_diffuser
from narrative.diffusers.exec import ExecDiffuser
from narrative.diffusers.exec_protocol import ExecProposal, ExecRequest
from narrative.engine import failed as pending
from narrative.engine.event import EventResult, retry, run_event
from narrative.errors import DiffuserError, NarrError
from narrative.model import Delta
from narrative.store.worldrepo import WorldRepo

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "exec-diffuser.py"
MOVE = "Lin Yuan walks to the ferry"


@pytest.fixture(autouse=True)
def no_user_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith(("NARR_LLM_", "NARR_EXEC_")) or key == "NARR_CONFIG":
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))


def command(*argv: str | Path) -> str:
    return shlex.join([sys.executable, *map(str, argv)])


def quoted(cmd: str | Path) -> str:
    return f'"{cmd}"'


def script(tmp_path: Path, body: str, name: str = "prog.py") -> str:
    """A small Python program, and the command that runs it."""
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return command(path)


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch) -> Any:
    def set_command(cmd: str, timeout: str = "5") -> None:
        monkeypatch.setenv("NARR_EXEC_COMMAND", cmd)
        monkeypatch.setenv("NARR_EXEC_TIMEOUT", timeout)
    return set_command


def event(root: Path, content: str = MOVE, **kwargs: Any) -> EventResult:
    wr = WorldRepo.open(root)
    try:
        return run_event(wr, EventRequest(content=content, diffuser="exec", **kwargs),
                         diffuser=get_diffuser("exec", wr))
    finally:
        wr.close()


def failing_event(root: Path, content: str = MOVE) -> NarrError:
    before = snapshot(root)
    with pytest.raises(NarrError) as info:
        event(root, content)
    assert snapshot(root) == before, "a failed event changed the world"
    assert isinstance(info.value, DiffuserError) and info.value.exit_code == 18
    return info.value


def kept(root: Path) -> list[pending.FailedEvent]:
    wr = WorldRepo.open(root)
    try:
        return pending.load_all(wr)
    finally:
        wr.close()


def retry_with_example(root: Path, use: Any) -> None:
    use(command(EXAMPLE))
    wr = WorldRepo.open(root)
    try:
        result = retry(wr)
    finally:
        wr.close()
    assert result.commit is not None and result.record.diffuser == "exec"
    assert read_node(root, "lin-yuan")["state"]["location"] == "ferry"
    assert kept(root) == []


# --- the example program -----------------------------------------------------------------


@pytest.mark.parametrize(("content", "moves"), [
    (MOVE, {"lin-yuan": "ferry"}),
    ("林远来到渡口", {"lin-yuan": "ferry"}),
    ("Lin Yuan and Old Zhou slowly return to the library", {"lin-yuan": "library-pavilion",
                                                           "old-zhou": "library-pavilion"}),
    ("林远和苏晴走进藏经阁", {"lin-yuan": "library-pavilion", "su-qing": "library-pavilion"}),
    ("Su Qing waits at the gate", {}),
    ("Lin Yuan thinks about the ferry", {}),
])
def test_example_program_moves_characters(world: Path, use: Any, content: str,
                                          moves: dict[str, str]) -> None:
    use(command(EXAMPLE))
    result = event(world, content)
    assert {d.target: d.new_value for d in result.record.diffusions if d.field == "/state/location"} == moves
    assert result.record.diffuser == "exec"
    assert result.proposal is not None
    assert result.proposal.notes[0] == f"{command(EXAMPLE)} proposed {len(moves)} operation(s)"


def test_request_follows_the_published_protocol(flat_world: Path, use: Any, tmp_path: Path) -> None:
    dump = tmp_path / "request.json"
    use(script(tmp_path, "import json, os, sys\n"
                         f"data = json.load(sys.stdin)\ndata['env_world'] = os.environ['NARR_WORLD']\n"
                         f"json.dump(data, open({str(dump)!r}, 'w'))\nprint('{{}}')\n"))
    explicit = Delta.model_validate({"ops": [{"op": "set", "target": "su-qing", "field": "/state/mood",
                                              "value": "wary"}]})
    event(flat_world, "林远来到渡口", delta=explicit, timestamp="Day 3", render=True)
    data = json.loads(dump.read_text(encoding="utf-8"))
    assert data.pop("env_world") == str(flat_world.resolve())
    request = ExecRequest.model_validate(data)
    assert request.protocol == 1 and request.content == "林远来到渡口" and request.timestamp == "Day 3"
    assert request.render is True
    assert [(m.text, m.ids) for m in request.mentions] == [("林远", ["lin-yuan"]), ("渡口", ["ferry"])]
    assert request.explicit == explicit
    assert request.nodes["lin-yuan"].state["location"] == "qingyun-gate"


def test_proposal_shaped_answer(flat_world: Path, use: Any, tmp_path: Path) -> None:
    answer = ExecProposal(delta=Delta.model_validate({"ops": [
        {"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": "calm"}]}),
        narrative_text="He breathed.", notes=["mood from the weather"])
    use(script(tmp_path, "import sys\nsys.stdin.read()\nprint('working', file=sys.stderr)\n"
                         f"print({answer.model_dump_json()!r})\n"))
    result = event(flat_world, "Lin Yuan rests")
    assert result.record.narrative_text == "He breathed."
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "calm"
    assert result.proposal is not None and result.proposal.notes[1:] == [
        "mood from the weather", "stderr: working"]


def test_cli_prints_the_rendered_text(flat_world: Path, use: Any, tmp_path: Path) -> None:
    """``narr event --render``: the text the diffuser wrote is printed, not only kept."""
    answer = ExecProposal(delta=Delta.model_validate({"ops": [
        {"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": "calm"}]}),
        narrative_text="Rain on the river.\n\nLin Yuan breathed.")
    use(script(tmp_path, "import json, sys\nassert json.load(sys.stdin)['render'] is True\n"
                         f"print({answer.model_dump_json()!r})\n"))
    narr = CLI(flat_world)
    out = narr("event", "--diffuser", "exec", "--render", "Lin Yuan rests").stdout
    assert "\ntext:\n  Rain on the river.\n\n  Lin Yuan breathed.\nexec:\n" in out
    log = narr("log", "--json").stdout
    assert "Lin Yuan breathed." in log
    # text the user gave is theirs: kept, not echoed back as if rendered
    out = narr("event", "--diffuser", "exec", "--render", "--text", "Mine.", "Lin Yuan rests").stdout
    assert "text:" not in out and "Rain on the river" not in out


def test_command_given_directly_overrides_config(flat_world: Path, use: Any, tmp_path: Path) -> None:
    use(script(tmp_path, "import sys\nsys.exit(1)\n"))
    wr = WorldRepo.open(flat_world)
    try:
        run_event(wr, EventRequest(content=MOVE),
                  diffuser=ExecDiffuser(command=[sys.executable, str(EXAMPLE)]))
    finally:
        wr.close()
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"


# --- failures ----------------------------------------------------------------------------


def test_nonzero_exit_shows_stderr(flat_world: Path, use: Any, tmp_path: Path) -> None:
    use(script(tmp_path, "import sys\nprint('partial')\nprint('step 1', file=sys.stderr)\n"
                         "print('boom: no rules for ferries', file=sys.stderr)\nsys.exit(3)\n"))
    exc = failing_event(flat_world)
    prog = quoted(command(tmp_path / "prog.py"))
    assert exc.message == f"the exec command {prog} failed with exit code 3: boom: no rules for ferries"
    assert exc.details == ["stderr: step 1", "stderr: boom: no rules for ferries"]
    [item] = kept(flat_world)
    assert item.raw_reply == "partial\n" and item.request.content == MOVE
    retry_with_example(flat_world, use)


@pytest.mark.parametrize(("body", "message"), [
    ("print('moving lin-yuan')",
     "printed something that is not JSON (Expecting value: line 1 column 1 (char 0))"),
    ("pass", "printed nothing"),
    ("print('{\"ops\": [{\"op\": \"set\", \"target\": \"Lin Yuan\"}]}')",
     "printed an invalid delta: /ops/0/set/target: node id 'Lin Yuan' is not a safe slug"),
])
def test_bad_output(flat_world: Path, use: Any, tmp_path: Path, body: str, message: str) -> None:
    use(script(tmp_path, "import sys\nsys.stdin.read()\n" + body + "\n"))
    exc = failing_event(flat_world)
    assert exc.message.startswith(f"the exec command {quoted(command(tmp_path / 'prog.py'))} {message}")
    retry_with_example(flat_world, use)


def test_operations_the_world_refuses_are_dropped_with_the_reason(flat_world: Path, use: Any,
                                                                  tmp_path: Path) -> None:
    use(script(tmp_path, "print('{\"ops\": [{\"op\": \"set\", \"target\": \"lin-yuan\", "
                         "\"field\": \"/traits/speech\", \"value\": \"loud\"}]}')\n"))
    speech = read_node(flat_world, "lin-yuan")["traits"]["speech"]
    result = event(flat_world)
    assert read_node(flat_world, "lin-yuan")["traits"]["speech"] == speech
    assert result.proposal is not None
    assert any(n.startswith("refused ") and "traits are the node's baseline" in n
               for n in result.proposal.notes)


def test_timeout_stops_the_program_and_its_children(flat_world: Path, use: Any, tmp_path: Path) -> None:
    use(script(tmp_path, "import subprocess, sys, time\n"
                         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
                         "print('thinking', file=sys.stderr, flush=True)\ntime.sleep(30)\n"), timeout="0.5")
    start = time.monotonic()
    exc = failing_event(flat_world)
    assert time.monotonic() - start < 5
    assert exc.message == f"the exec command {quoted(command(tmp_path / 'prog.py'))} did not finish " \
                          "within 0.5s and was stopped"
    assert exc.hint is not None and "NARR_EXEC_TIMEOUT" in exc.hint
    retry_with_example(flat_world, use)


def test_missing_program(flat_world: Path, use: Any, tmp_path: Path) -> None:
    use(str(tmp_path / "no-such-program"))
    exc = failing_event(flat_world)
    assert exc.message == f"cannot run the exec command {quoted(tmp_path / 'no-such-program')}: " \
                          "No such file or directory"


def test_not_configured(flat_world: Path) -> None:
    exc = failing_event(flat_world)
    assert exc.message == "the exec diffuser has no command to run"
    assert exc.hint is not None and "NARR_EXEC_COMMAND" in exc.hint


def test_world_cannot_configure_the_command(flat_world: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Cloning someone's world must never run their code: narr.toml cannot name a command."""
    marker = tmp_path / "ran"
    evil = [sys.executable, "-c", f"open({str(marker)!r}, 'w'); print('{{}}')"]
    toml = flat_world / "narr.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('default = "rules"', 'default = "exec"') +
                    f"\n[exec]\ncommand = {json.dumps(evil)}\ntimeout = 5\n", encoding="utf-8")
    (flat_world / "config.toml").write_text(f"[exec]\ncommand = {json.dumps(evil)}\n", encoding="utf-8")
    monkeypatch.chdir(flat_world)
    exc = failing_event(flat_world)
    assert exc.message == "the exec diffuser has no command to run"
    assert not marker.exists()


# --- the command line --------------------------------------------------------------------


@pytest.mark.parametrize(("body", "timeout", "first_line"), [
    ("import sys\nprint('no', file=sys.stderr)\nsys.exit(2)\n", "5", "failed with exit code 2: no"),
    ("print('[not json')\n", "5",
     "printed something that is not JSON (Expecting value: line 1 column 2 (char 1))"),
    ("print('{\"ops\": 3}')\n", "5", "printed an invalid delta: /ops: Input should be a valid list"),
    ("import time\ntime.sleep(10)\n", "0.3", "did not finish within 0.3s and was stopped"),
])
def test_cli_failures_change_nothing_and_retry_works(flat_world: Path, use: Any, tmp_path: Path,
                                                     body: str, timeout: str, first_line: str) -> None:
    narr = CLI(flat_world)
    use(script(tmp_path, body), timeout)
    before = snapshot(flat_world)
    result = narr("event", "--diffuser", "exec", MOVE, expect=18)
    prog = quoted(command(tmp_path / "prog.py"))
    assert result.stderr.splitlines()[0] == f"narr: error: the exec command {prog} {first_line}"
    assert result.stderr.splitlines()[-1].endswith("run narr event --retry")
    assert snapshot(flat_world) == before
    use(command(EXAMPLE))
    out = narr("event", "--retry").stdout
    assert 'lin-yuan /state/location: "qingyun-gate" → "ferry"' in out
    assert "exec:\n" in out and "  lin-yuan moves to ferry\n" in out


def test_cli_world_default_exec_needs_the_users_consent(flat_world: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A world's narr.toml may pick exec as its default, but narr runs it only when you allow it."""
    toml = flat_world / "narr.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('default = "rules"', 'default = "exec"'),
                    encoding="utf-8")
    narr = CLI(flat_world)
    before = snapshot(flat_world)
    result = narr("event", MOVE, expect=12)
    assert result.stderr.splitlines()[0] == (
        "narr: error: this world's narr.toml picks the 'exec' diffuser by default, which narr runs "
        "only when you choose it")
    assert snapshot(flat_world) == before
    monkeypatch.setenv("NARR_DIFFUSER_ALLOW_WORLD", "exec")
    result = narr("event", MOVE, expect=18)
    assert result.stderr.splitlines()[0] == "narr: error: the exec diffuser has no command to run"


def test_a_child_left_running_neither_blocks_the_event_nor_outlives_it(
        flat_world: Path, use: Any, tmp_path: Path) -> None:
    marker = tmp_path / "child-survived"
    child = f"import time, pathlib; time.sleep(3); pathlib.Path({str(marker)!r}).write_text('x')"
    move = {"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "ferry"}]}
    use(script(tmp_path, "import json, subprocess, sys\n"
                         f"subprocess.Popen([sys.executable, '-c', {child!r}])\n"
                         "json.load(sys.stdin)\n"
                         f"print(json.dumps({move!r}))\n"), timeout="2")
    start = time.monotonic()
    result = event(flat_world)
    assert time.monotonic() - start < 2  # the child holds the pipes; the program is done
    assert result.commit is not None
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    time.sleep(3.5)
    assert not marker.exists(), "the program's child outlived the event"


def test_a_flood_of_output_is_stopped(flat_world: Path, use: Any, tmp_path: Path) -> None:
    use(script(tmp_path, "import sys\nchunk = 'x' * 65536\nwhile True:\n    sys.stdout.write(chunk)\n"))
    exc = failing_event(flat_world)
    assert "printed more than 8 MB and was stopped" in exc.message


def test_causes_that_are_not_events_are_dropped(flat_world: Path, use: Any, tmp_path: Path) -> None:
    use(script(tmp_path, "import json, sys\njson.load(sys.stdin)\n"
                         "print(json.dumps({'delta': {'ops': [], 'causes': ['nonexistent', '../x']}}))\n"))
    result = event(flat_world)
    assert result.record.causes == []
    assert result.proposal is not None
    assert any("dropped causes that are not events" in n for n in result.proposal.notes)


# --- output narr must not store altered ----------------------------------------------------


def test_output_that_is_not_utf8_is_refused(flat_world: Path, use: Any, tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are refused, never stored as U+FFFD in a node."""
    use(script(tmp_path, "import json, sys\nsys.stdin.read()\nsys.stderr.buffer.write(b'warn \\xfe\\n')\n"
                         "op = {'op': 'set', 'target': 'lin-yuan', 'field': '/state/mood', 'value': '@'}\n"
                         "out = json.dumps({'ops': [op]}).encode().replace(b'@', b'\\xff')\n"
                         "sys.stdout.buffer.write(out)\n"))
    exc = failing_event(flat_world)
    prog = quoted(command(tmp_path / "prog.py"))
    assert exc.message == f"the exec command {prog} printed output that is not UTF-8 text (byte 79)"
    [item] = kept(flat_world)
    assert item.raw_reply is not None and "\\xff" in item.raw_reply and "\ufffd" not in item.raw_reply
    retry_with_example(flat_world, use)


def test_stderr_that_is_not_utf8_is_shown_escaped(flat_world: Path, use: Any, tmp_path: Path) -> None:
    use(script(tmp_path, "import sys\nsys.stdin.read()\nsys.stderr.buffer.write(b'odd \\xfe\\n')\n"
                         "print('{\"ops\": []}')\n"))
    result = event(flat_world)
    assert result.proposal is not None and "stderr: odd \\xfe" in result.proposal.notes


# --- a relative command never names a file in the world ------------------------------------


def _shell_script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ncat > /dev/null\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


MOVE_JSON = json.dumps({"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/location",
                                 "value": "ferry"}]})


@pytest.mark.parametrize("where", ["env", "file"])
def test_a_relative_command_is_next_to_the_config_file_not_in_the_world(
        flat_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    marker = tmp_path / "world-script-ran"
    _shell_script(flat_world / "x.sh", f"touch {shlex.quote(str(marker))}\necho '{{\"ops\": []}}'")
    config_dir = tmp_path / "user-config" / "narr"
    _shell_script(config_dir / "x.sh", f"echo '{MOVE_JSON}'")
    if where == "env":
        monkeypatch.setenv("NARR_EXEC_COMMAND", "./x.sh")
    else:
        (config_dir / "config.toml").write_text('[exec]\ncommand = ["./x.sh"]\n', encoding="utf-8")
    monkeypatch.chdir(flat_world)  # narr started from the world's root
    result = event(flat_world)
    assert not marker.exists(), "a script inside the world ran"
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert result.proposal is not None
    assert result.proposal.notes[0] == f"{config_dir / 'x.sh'} proposed 1 operation(s)"


def test_a_relative_command_missing_from_the_config_dir_says_where_narr_looked(
        flat_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _shell_script(flat_world / "bin" / "x.sh", "echo '{}'")
    monkeypatch.setenv("NARR_EXEC_COMMAND", "bin/x.sh --fast")
    monkeypatch.chdir(flat_world)
    exc = failing_event(flat_world)
    looked = tmp_path / "user-config" / "narr" / "bin" / "x.sh"
    assert exc.message == (f"cannot run the exec command {quoted(f'{looked} --fast')}: "
                           "No such file or directory")
