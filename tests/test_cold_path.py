"""A fresh process that only reads stays lean: hand-edited node files are read without the
model when they are plainly valid (and exactly as the model would read them), and the reads
never import pydantic or networkx."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI
from hypothesis import given
from hypothesis import strategies as st

from narrative import fields
from narrative.errors import InvalidWorldError
from narrative.nodefile import parse_json, plain_node, validate

HEAVY = ("pydantic", "networkx")

# Values a careless hand edit leaves in a field: every JSON type, blanks, near-misses.
ODD = st.sampled_from([
    "", " ", "x", "lin-yuan", "Lin-Yuan", "../x", "con", "a" * 81, "scene", "bogus", "character",
    "\x1c", "名", 0, 1, -1, 2.5, True, False, None, [], [""], ["a"], ["a", 1], {}, {"": "x"},
    {"k": 1}, {"k": {"lin-yuan": {}}}, {"knows": {"su-qing": {"since": 3}}}, {"knows": {}},
    {"a b": {"su-qing": {}}}, {"a:b": {"su-qing": {}}}, {"\u00a0": {"su-qing": {}}},
    {"x\x1c": {"su-qing": {}}}, {"knows": {"Su": {}}}, {"knows": {"su-qing": 1}},
    {"knows": {"su-qing": []}}, {"k": "v", "j": "w"}, {"t": ""},
])
FIELDS = st.sampled_from(["id", "name", "layer", "kind", "aliases", "summary", "lifecycle",
                          "created_by_event", "traits", "state", "relations", "tags", "sections",
                          "always_in_view", "extensions", "bogus"])
EDITS = st.lists(st.tuples(st.sampled_from(["set", "drop"]), FIELDS, ODD), max_size=4)


def _sample_nodes(root: Path) -> list[dict[str, Any]]:
    return [parse_json(p.read_bytes(), p.relative_to(root).as_posix())
            for p in sorted(root.glob("world/**/*.json"))]


def _model(obj: Any) -> dict[str, Any] | None:
    try:
        return dict(validate(copy.deepcopy(obj), "node.json"))
    except InvalidWorldError:
        return None


def test_every_sample_node_reads_plainly_as_the_model_reads_it(flat_world: Path) -> None:
    nodes = _sample_nodes(flat_world)
    assert len(nodes) >= 10
    for node in nodes:
        plain = plain_node(copy.deepcopy(node))
        assert plain is not None, node["id"]
        assert json.dumps(plain) == json.dumps(_model(node))  # same values, same key order


@pytest.fixture(scope="module")
def sample_nodes(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    from narrative.engine.init import init_world

    root = tmp_path_factory.mktemp("plain") / "w"
    init_world(root, sample=True)
    return _sample_nodes(root)


@given(which=st.integers(0, 100), edits=EDITS)
def test_a_plainly_read_node_is_the_models_node(sample_nodes: list[dict[str, Any]], which: int,
                                                edits: list[tuple[str, str, Any]]) -> None:
    """Whatever a hand edit leaves, the plain reading either agrees with the model exactly or
    leaves the file to the model: it never accepts what the model refuses or reads it otherwise."""
    node = copy.deepcopy(sample_nodes[which % len(sample_nodes)])
    for kind, field, value in edits:
        if kind == "drop":
            node.pop(field, None)
        else:
            node[field] = copy.deepcopy(value)
    plain = plain_node(copy.deepcopy(node))
    if plain is not None:
        expected = _model(node)
        assert expected is not None, node
        assert json.dumps(plain) == json.dumps(expected)


@given(which=st.integers(0, 100), other=st.integers(0, 100), edits=EDITS,
       gone=st.sampled_from([None, "old", "new"]))
def test_changes_as_json_are_the_models_changes(sample_nodes: list[dict[str, Any]], which: int,
                                                other: int, edits: list[tuple[str, str, Any]],
                                                gone: str | None) -> None:
    """``narr status`` prints a hand edit's changes without building the model: the same JSON."""
    old = copy.deepcopy(sample_nodes[which % len(sample_nodes)])
    new = copy.deepcopy(sample_nodes[other % len(sample_nodes)]) if other % 3 else copy.deepcopy(old)
    for kind, field, value in edits:
        if kind == "drop":
            new.pop(field, None)
        else:
            new[field] = copy.deepcopy(value)
    a, b = (None if gone == "old" else old), (None if gone == "new" else new)
    expected = [c.model_dump(mode="json") for c in fields.node_changes("x", a, b)]
    assert json.dumps(fields.node_change_json("x", a, b)) == json.dumps(expected)


PROBE = f"""
import sys
from narrative.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("loaded:", sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)
"""

READS = [["get", "lin-yuan"], ["get", "Lin Yuan", "state.mood", "--json"], ["log", "-n", "20"],
         ["log", "--json"], ["show"], ["show", "HEAD~1", "--json"], ["status"], ["status", "--json"],
         ["nodes"], ["nodes", "--json"], ["search", "ferry"]]


def test_reads_in_a_fresh_process_do_not_import_networkx(world: Path, narr: CLI) -> None:
    """A read's answer is a pydantic model (the same class for every door), so a cold read pays
    for pydantic, which is part of the floor a cold command is held to; the graph library is
    loaded only by what walks the graph."""
    narr("event", "Lin Yuan walks to the ferry")
    narr("event", "Su Qing rests", "--set", "su-qing.state.mood=calm")
    path = narr("path", "lin-yuan").output.strip()  # a hand edit waiting: status, get and nodes read it
    node = json.loads((world / path).read_text("utf-8"))
    node["state"]["mood"] = "restless"
    (world / path).write_text(json.dumps(node, indent=4), "utf-8")
    for args in READS:
        out = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=world, capture_output=True,
                             text=True, env=_env())
        assert out.returncode == 0, (args, out.stderr)
        assert "networkx" not in out.stderr.strip().splitlines()[-1], args


def test_status_as_text_makes_no_model(world: Path, narr: CLI) -> None:
    """The first command after a server exited idle is most often ``narr status``: its text
    is printed from the answer's data, so it does not load pydantic (half its cost), with a
    hand edit, a relation pointing nowhere and a story time to show."""
    narr("event", "Dawn at the ferry", "--at", "day 2")
    path = narr("path", "lin-yuan").output.strip()
    node = json.loads((world / path).read_text("utf-8"))
    node["state"]["mood"] = "restless"
    node["relations"] = {"knows": {"nobody-at-all": {}}}
    (world / path).write_text(json.dumps(node, indent=4), "utf-8")
    text = narr("status").output
    assert "restless" in text and "nobody-at-all" in text and "day 2" in text
    out = subprocess.run([sys.executable, "-c", PROBE, "status"], cwd=world, capture_output=True,
                         text=True, env=_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout == text
    assert out.stderr.strip().splitlines()[-1] == "loaded: []"


def test_status_loads_no_module_for_running_programs(world: Path) -> None:
    """Opening a world checks the git library, not the git program: ``subprocess`` (a few
    milliseconds of every cold command) loads only for what runs a program."""
    probe = PROBE.replace(repr(HEAVY), repr(("subprocess",)))
    for args in (["status"], ["status", "--json"]):
        out = subprocess.run([sys.executable, "-c", probe, *args], cwd=world, capture_output=True,
                             text=True, env=_env())
        assert out.returncode == 0, out.stderr
        assert out.stderr.strip().splitlines()[-1] == "loaded: []", args


CLI_HERE = "import sys; from narrative.cli import main; main(sys.argv[1:], prog_name='narr')"
LEAVING = """
import atexit, os, sys, threading, time
from narrative import client

leave = os._exit
os._exit = lambda code: (os.write(2, b"left at once\\n"), leave(code))
atexit.register(os.write, 2, b"at exit\\n")


def outlive_main():  # a thread at work until the interpreter's shutdown waits for it
    while threading.main_thread().is_alive():
        time.sleep(0.01)
    os.write(2, b"thread done\\n")


if sys.argv[1] == "thread":
    threading.Thread(target=outlive_main).start()
sys.argv = ["narr", *sys.argv[2:]]
client.main()
"""


@pytest.mark.parametrize("thread", [False, True])
def test_a_command_run_here_leaves_without_the_interpreters_shutdown(world: Path,
                                                                     thread: bool) -> None:
    """A command that ran in its own process leaves as a served one does, skipping the
    interpreter's shutdown (a fifth of a cold status): its output and exit code are the
    command's, what was registered to run at exit still runs, and a thread still at work
    is waited for (the interpreter then leaves as it always does)."""
    for args in (["status"], ["get", "no-such-node"]):
        expected = subprocess.run([sys.executable, "-c", CLI_HERE, *args], cwd=world,
                                  capture_output=True, text=True, env=_env())
        out = subprocess.run([sys.executable, "-c", LEAVING, "thread" if thread else "-", *args],
                             cwd=world, capture_output=True, text=True, env=_env())
        assert (out.returncode, out.stdout) == (expected.returncode, expected.stdout)
        said = out.stderr.splitlines()
        marks = {"at exit", "thread done", "left at once"}
        assert [line for line in said if line not in marks] == expected.stderr.splitlines()
        assert "at exit" in said
        assert ("thread done" in said) == thread
        assert ("left at once" in said) != thread, said
    assert expected.returncode not in (0, 1)  # a typed error's code, kept


def test_the_probe_sees_a_heavy_import(world: Path) -> None:
    """The probe above can fail: an event (which needs the model) is seen loading pydantic."""
    out = subprocess.run([sys.executable, "-c", PROBE, "event", "x", "--dry-run"], cwd=world,
                         capture_output=True, text=True, env=_env())
    assert out.stderr.strip().splitlines()[-1] == "loaded: ['pydantic']"


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "NARR_NO_SERVER": "1"}


PROBE_DIFFUSERS = """
import sys
from narrative.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("loaded:", sorted(m for m in sys.modules if m.startswith("narrative.diffusers.")), file=sys.stderr)
"""


def test_an_event_of_a_world_without_a_diffuser_loads_none(world: Path) -> None:
    """A world whose default is ``explicit`` records ``--set`` events without importing the
    rules, the language models' client or the exec protocol."""
    toml = world / "narr.toml"
    text = toml.read_text("utf-8")
    assert 'default = "rules"' in text
    toml.write_text(text.replace('default = "rules"', 'default = "explicit"'), "utf-8")
    out = subprocess.run([sys.executable, "-c", PROBE_DIFFUSERS, "event", "Rest", "--set",
                          "lin-yuan.state.mood=calm"], cwd=world, capture_output=True, text=True,
                         env=_env())
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1] == "loaded: ['narrative.diffusers.base']"


LIBGIT = """
import os, ssl, sys
from narrative.store.libgit import pygit2  # loaded as narr loads it, at first use
print(pygit2.settings._default_tls_verify_paths.cafile, os.environ.get("SSL_CERT_FILE"),
      ssl.get_default_verify_paths().cafile)
"""


@pytest.mark.parametrize("cafile", [None, "ca.pem"])
def test_pygit2_loads_without_parsing_the_certificate_file(tmp_path: Path, cafile: str | None) -> None:
    """libgit2 is given no certificate file to parse at start-up (narr's transport is the git
    command), and the process's environment is as it was: Python's own TLS still finds it."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    if cafile is not None:
        (tmp_path / cafile).write_text("", "utf-8")
        env["SSL_CERT_FILE"] = str(tmp_path / cafile)
    out = subprocess.run([sys.executable, "-c", LIBGIT], capture_output=True, text=True, env=env,
                         check=True)
    libgit2_file, variable, python_file = out.stdout.split()
    assert libgit2_file == "None"
    assert variable == (str(tmp_path / cafile) if cafile else "None")
    if cafile:
        assert python_file == str(tmp_path / cafile)


COMPLETE = """
import atexit, sys
sys.argv = ["narr"]
from narrative.client import main
atexit.register(lambda: print("loaded:", sorted(m for m in ("pygit2", "pydantic", "networkx")
                                                if m in sys.modules), file=sys.stderr))
main()
"""


def _complete(where: Path, words: str) -> tuple[list[str], str]:
    env = {**_env(), "_NARR_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - 1)}
    out = subprocess.run([sys.executable, "-c", COMPLETE], cwd=where, capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split(), out.stderr.strip().splitlines()[-1]


def test_a_node_name_completes_without_opening_git(world: Path, narr: CLI, tmp_path: Path) -> None:
    """A TAB after ``narr get`` reads the catalog and world/ only: git (libgit2) stays
    unloaded, in the world and in a linked worktree of it, and a new file is offered too."""
    narr("new", "character", "Lin Feng")
    offered, loaded = _complete(world / "world", "narr get lin-")
    assert offered == ["plain,lin-feng", "plain,lin-xue", "plain,lin-yuan"]
    assert loaded == "loaded: []"
    offered, loaded = _complete(world, "narr get lin-yuan state.mo")
    assert offered == ["plain,state.mood"] and loaded == "loaded: []"
    subprocess.run(["git", "-C", str(world), "worktree", "add", "-q", str(tmp_path / "linked")],
                   check=True)
    offered, loaded = _complete(tmp_path / "linked", "narr get lin-")
    assert offered == ["plain,lin-xue", "plain,lin-yuan"]  # lin-feng is not committed
    assert loaded == "loaded: []"
    offered, loaded = _complete(world, "narr switch ma")  # a branch: git answers
    assert offered == ["plain,main"] and loaded == "loaded: ['pygit2']"
