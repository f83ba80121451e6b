"""A world a program keeps open follows git's settings as they change beside it.

libgit2 keeps each setting a repository handle has looked up (``core.autocrlf``...) for the
handle's lifetime. A world kept open by a notebook or an agent for many events must see a
``git config`` made meanwhile as a freshly opened world sees it: the same hand edits found,
files written with the line endings git now checks them out with; a setting made in a file
git's config includes as well.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import check_out_again, edit_node, git, include_from_home, node_file, write_node
from hypothesis import assume, given
from hypothesis import strategies as st

import narrative as narr
from narrative.store import gitconfig


def _edits(world: narr.WorldRepo) -> list[tuple[str, str]]:
    return [(e["target"], e["field"]) for e in narr.status(world).to_json()["edits"]]


def _follows(root: Path, change: Callable[[], None], *, watching: bool) -> None:
    with narr.open_world(root, watch=watching) as world:
        narr.event(world, "Lin Yuan sits", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                      value="calm"))
        assert _edits(world) == []  # the handle has looked its settings up
        change()
        check_out_again(root)
        assert b"\r\n" in node_file(root, "su-qing").read_bytes()
        edit_node(root, "black-ring", warmth="warm")
        with narr.open_world(root) as fresh:
            assert narr.status(world).to_json() == narr.status(fresh).to_json()
        assert _edits(world) == [("black-ring", "/state/warmth")]
        recorded = narr.event(world, "Su Qing grows wary", narr.SetOp(
            target="su-qing", field="/state/mood", value="wary"), diffuser="explicit")
        assert [e["target"] for e in recorded.to_json()["edits"]] == ["black-ring"]
        written = node_file(root, "su-qing").read_bytes()
        assert b'"wary"' in written and b"\r\n" in written  # as git checks it out
        assert git(root, "status", "--porcelain") == ""
        assert _edits(world) == []


@pytest.mark.parametrize("watching", [False, True], ids=["unwatched", "watched"])
def test_a_line_ending_setting_made_beside_an_open_world_is_the_one_it_writes_by(
        flat_world: Path, watching: bool) -> None:
    _follows(flat_world, lambda: git(flat_world, "config", "core.autocrlf", "true"),
             watching=watching)


@pytest.mark.parametrize("watching", [False, True], ids=["unwatched", "watched"])
def test_a_setting_made_in_an_included_file_is_followed_too(flat_world: Path,
                                                             watching: bool) -> None:
    crlf = include_from_home(flat_world, "crlf.gitconfig")
    _follows(flat_world, lambda: git(flat_world, "config", "--file", str(crlf), "core.autocrlf",
                                     "true"), watching=watching)


@pytest.mark.parametrize("watching", [False, True], ids=["unwatched", "watched"])
def test_a_setting_included_on_one_branch_counts_once_that_branch_is_current(
        flat_world: Path, watching: bool) -> None:
    """``[includeIf "onbranch:drafts"]``: no config file changes when the branch does, yet a
    freshly opened world reads the setting there; so does one kept open across the switch."""
    (flat_world / ".git" / "crlf.gitconfig").write_text("[core]\n\tautocrlf = true\n")
    git(flat_world, "config", "includeIf.onbranch:drafts.path", "crlf.gitconfig")
    with narr.open_world(flat_world, watch=watching) as world:
        narr.event(world, "Lin Yuan sits", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                      value="calm"))
        assert b"\r\n" not in node_file(flat_world, "lin-yuan").read_bytes()
        narr.switch(world, "drafts", create=True)
        narr.event(world, "Su Qing grows wary", narr.SetOp(target="su-qing",
                                                           field="/state/mood", value="wary"))
        written = node_file(flat_world, "su-qing").read_bytes()
        assert b'"wary"' in written and b"\r\n" in written  # as git checks it out there
        with narr.open_world(flat_world) as fresh:
            assert narr.status(world).to_json() == narr.status(fresh).to_json()


def test_a_world_whose_settings_did_not_change_keeps_its_handle(flat_world: Path) -> None:
    """Following git's settings costs a few ``stat`` calls, not a new handle per command."""
    with narr.open_world(flat_world) as world:
        handle = world.repo
        for k in range(3):
            narr.event(world, f"Step {k}", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                      value=f"m{k}"))
            narr.status(world)
        assert world.repo is handle
        git(flat_world, "config", "user.name", "Someone Else")
        narr.status(world)
        assert world.repo is not handle


def test_the_include_lines_are_read_as_git_reads_them() -> None:
    text = ('# a comment [include] path = no\n'
            '[core]\n\tautocrlf = true\n'
            '[include]\n\tpath = plain ; a comment\n'
            '\tPATH = "quoted # not a comment"\n'
            '\tpath = esc\\"aped\\\\\n'
            '\tpath = con\\\n   tinued\n'
            '[Include] path = same-line\n'
            '[includeIf "gitdir:~/work/]\\"x"]\n\tpath = ~/conditional\n'
            '[includeIf.Legacy]\n\tpath = legacy\n'
            '[include.legacy]\n\tpath = not-an-include\n'
            '[include "sub"]\n\tpath = not-an-include\n'
            '[includeIf]\n\tpath = not-an-include\n'
            '[includes]\n\tpath = not-an-include\n'
            '[include]\n\tpathname = not-a-path\n\tpath\n')
    assert gitconfig.include_lines(text) == [
        (None, "plain"), (None, "quoted # not a comment"), (None, 'esc"aped\\'),
        (None, "con   tinued"), (None, "same-line"), ('gitdir:~/work/]"x', "~/conditional"),
        ("legacy", "legacy")]


_PLAIN = st.text(alphabet="abc~/._-: \t", min_size=0, max_size=8)
_QUOTED = st.text(alphabet='abc #;] \\"', min_size=0, max_size=6).map(
    lambda t: '"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"')
_VALUE = st.lists(st.one_of(_PLAIN, _QUOTED, st.sampled_from(["\\n", "\\t", "\\\\", '\\"', "\\\n  "])),
                  max_size=4).map("".join)
_HEADER = st.one_of(
    st.sampled_from(["[include]", "[Include]", "[core]", "[includes]", '[include "sub"]',
                     "[includeIf.Legacy]", "[includeIf]"]),
    st.text(alphabet='abgitdronch:/~*.] \\"', max_size=12).map(
        lambda t: '[includeIf "' + t.replace("\\", "\\\\").replace('"', '\\"') + '"]'))
_LINE = st.one_of(
    _HEADER,
    st.tuples(st.sampled_from(["path", "Path", "other"]), st.sampled_from([" = ", "=", "\t= "]),
              _VALUE, st.sampled_from(["", " # note", " ; note", "  "])).map(
        lambda parts: "\t" + "".join(parts)),
    st.sampled_from(["# a comment", "; [include] path = no", "", "\tpath"]))


@given(st.lists(_LINE, max_size=8), st.sampled_from(["\n", "\r\n"]))
def test_the_include_lines_are_the_ones_git_finds(tmp_path_factory: pytest.TempPathFactory,
                                                  lines: list[str], end: str) -> None:
    """Whatever the quoting, escapes, blanks, comments, sections and line ends, the include
    lines read here are those git itself lists (of a file git accepts)."""
    text = end.join(lines) + end
    where = tmp_path_factory.mktemp("config") / "config"
    where.write_bytes(text.encode())
    listed = subprocess.run(["git", "config", "--no-includes", "--file", str(where), "-z",
                             "--list"], capture_output=True)
    assume(listed.returncode == 0)  # a line git refuses: libgit2 would refuse the file too
    found: list[tuple[str | None, str]] = []
    for entry in listed.stdout.decode().split("\0")[:-1]:
        key, newline, value = entry.partition("\n")
        if not newline:
            continue  # "path" alone: no value, no include
        if key == "include.path":
            found.append((None, value))
        elif key.startswith("includeif.") and key.endswith(".path") and key.count(".") >= 2:
            found.append((key[len("includeif."):-len(".path")], value))
    assert gitconfig.include_lines(text) == found


def test_includes_are_stamped_where_libgit2_finds_them_and_no_deeper_than_it_goes(
        tmp_path: Path) -> None:
    git_dir = tmp_path / "repo" / ".git"
    git_dir.mkdir(parents=True)
    home = Path.home()
    (git_dir / "config").write_text("[include]\n\tpath = ../shared.gitconfig\n"
                                    "\tpath = ~/mine.gitconfig\n")
    (tmp_path / "repo" / "shared.gitconfig").write_text("[include]\n\tpath = chain-1\n")
    for k in range(1, 15):  # each includes the next; and the first, again
        (tmp_path / "repo" / f"chain-{k}").write_text(
            f"[include]\n\tpath = chain-{k + 1}\n\tpath = chain-1\n")
    (tmp_path / "repo" / "chain-5").unlink()
    os.mkfifo(tmp_path / "repo" / "chain-5")  # a pipe: stamped, never waited on for a writer
    stamps: list[tuple[object, ...]] = []
    reading = threading.Thread(target=lambda: stamps.append(gitconfig.settings_stamp(str(git_dir))),
                               daemon=True)
    reading.start()
    reading.join(timeout=10)
    assert stamps, "the stamp waited on a pipe"
    included = [part for part in stamps[0] if isinstance(part, tuple) and isinstance(part[0], str)]
    assert included[0][0] == str(git_dir / "../shared.gitconfig")
    chain = [Path(path).name for path, _ in included[1:-1]]
    assert chain == [f"chain-{k}" for k in range(1, 6)]  # on to the pipe, which includes nothing
    assert included[-1] == (str(home / "mine.gitconfig"), None)  # stamped as absent
    (tmp_path / "repo" / "chain-5").unlink()
    (tmp_path / "repo" / "chain-5").write_text("[include]\n\tpath = chain-6\n\tpath = chain-1\n")
    included = [part for part in gitconfig.settings_stamp(str(git_dir))
                if isinstance(part, tuple) and isinstance(part[0], str)]
    chain = [Path(path).name for path, _ in included[1:-1]]
    assert chain == [f"chain-{k}" for k in range(1, 10)]  # ten deep, as git and libgit2 go


CUP = {"id": "jade-cup", "layer": "item", "name": "Jade cup", "kind": "cup",
       "lifecycle": "permanent", "aliases": [], "summary": "A cup.", "traits": {}, "state": {},
       "relations": {}}


@pytest.mark.parametrize("watching", [False, True], ids=["unwatched", "watched"])
def test_a_file_no_longer_ignored_by_git_s_settings_is_seen(flat_world: Path,
                                                            watching: bool) -> None:
    """A node file ignored through ``core.excludesFile``, then the setting taken away: the
    open world finds the new node as a fresh one does (a watcher that had found the file
    ignored must not answer from that memory)."""
    excludes = flat_world.parent / "excludes"
    excludes.write_text("jade-cup.json\n")
    git(flat_world, "config", "core.excludesFile", str(excludes))
    with narr.open_world(flat_world, watch=watching) as world:
        write_node(flat_world, "world/item/jade-cup.json", CUP)
        narr.event(world, "Lin Yuan sits", narr.SetOp(target="lin-yuan", field="/state/mood",
                                                      value="calm"))
        assert _edits(world) == []  # ignored, as git ignores it
        git(flat_world, "config", "--unset", "core.excludesFile")
        with narr.open_world(flat_world) as fresh:
            assert narr.status(world).to_json() == narr.status(fresh).to_json()
        assert _edits(world) == [("jade-cup", "")]
        # (git status last: it may rewrite the index, and a full scan would follow for that alone)
        assert git(flat_world, "status", "--porcelain") == "?? world/item/jade-cup.json\n"


def test_narr_toml_changed_beside_an_open_world_counts_from_the_next_command(
        flat_world: Path) -> None:
    """As for a world opened afresh (a server's, a new process's): the default diffuser set in
    ``narr.toml`` by hand is the next event's, and a layout the files do not have is refused."""
    toml = flat_world / "narr.toml"
    with narr.open_world(flat_world) as world:
        first = narr.event(world, "Lin Yuan sits", narr.SetOp(target="lin-yuan",
                                                              field="/state/mood", value="calm"))
        assert first.to_json()["diffuser"] == "rules"
        toml.write_text(toml.read_text().replace('default = "rules"', 'default = "explicit"'))
        second = narr.event(world, "Lin Yuan stands", narr.SetOp(target="lin-yuan",
                                                                 field="/state/mood", value="up"))
        assert second.to_json()["diffuser"] == "explicit"
        toml.write_text(toml.read_text().replace('layout = "flat"', 'layout = "sharded"'))
        with pytest.raises(narr.InvalidWorldError, match="layout is 'sharded'"):
            narr.status(world)
        with pytest.raises(narr.InvalidWorldError, match="layout is 'sharded'"):
            narr.open_world(flat_world)
        git(flat_world, "checkout", "--", "narr.toml")
        assert narr.status(world).to_json()["edits"] == []
