"""Reading git's files without pygit2 (``narrative.store.gitfiles``): the same answers as libgit2.

``narr log``, ``show`` and ``get`` in a fresh process read the repository from its
files and never load pygit2. Every object of a world's repository is read both ways
here, loose and packed (with offset and reference deltas), as are refs, revisions and
commit messages of unusual shape; the reader must say it is unsure, never answer
differently. Then the commands themselves: the same output with and without pygit2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from helpers import CLI, git
from hypothesis import given
from hypothesis import strategies as st

from narrative.store.gitfiles import GitFiles, Unsure, discover

PACKINGS = {
    "loose": [],
    "packed": [["gc", "-q"]],
    "offset deltas": [["repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50"]],
    "reference deltas": [["-c", "repack.useDeltaBaseOffset=false", "repack", "-a", "-d", "-f",
                          "-q", "--depth=50", "--window=50"]],
    "half packed": [["repack", "-d", "-q"], ["EVENTS"]],
}


def _story(narr: CLI, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        narr("event", f"Lin Yuan waits, hour {i}", "--set", f"lin-yuan.state.mood=waiting {i}",
             "--set", f"su-qing.state.note=a long note that changes a little every hour {i % 3}")


def _packed(world: Path, narr: CLI, packing: str) -> None:
    _story(narr, 6)
    for step in PACKINGS[packing]:
        if step == ["EVENTS"]:
            _story(narr, 3, start=6)  # loose objects beside a pack
        else:
            git(world, *step)


def _objects(world: Path) -> list[str]:
    out = git(world, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return out.split()


@pytest.mark.parametrize("packing", list(PACKINGS))
def test_every_object_reads_as_libgit2_reads_it(world: Path, narr: CLI, packing: str) -> None:
    _packed(world, narr, packing)
    repo = pygit2.Repository(str(world))
    files = GitFiles(world / ".git")
    ids = _objects(world)
    assert len(ids) > 50
    kinds = {pygit2.enums.ObjectType.COMMIT: "commit", pygit2.enums.ObjectType.TREE: "tree",
             pygit2.enums.ObjectType.BLOB: "blob", pygit2.enums.ObjectType.TAG: "tag"}
    for oid in ids:
        obj = repo[oid]
        assert files.read(oid) == (kinds[obj.type], obj.read_raw()), oid
        assert files.size(oid) == repo.odb.read_header(oid)[1], oid
        if obj.type == pygit2.enums.ObjectType.COMMIT:
            commit = files.commit(oid)
            assert commit.message == obj.message
            assert commit.parent_ids == tuple(str(p) for p in obj.parent_ids)
            assert commit.tree_id == str(obj.tree_id)
            assert commit.commit_time == obj.commit_time
        elif obj.type == pygit2.enums.ObjectType.TREE:
            tree = files.tree(oid)
            assert [(name.decode(), mode, entry) for name, (mode, entry) in tree.entries().items()
                    ] == [(e.name, e.filemode, str(e.id)) for e in obj]
    files.close()


def test_a_packed_delta_is_really_read(world: Path, narr: CLI) -> None:
    """The delta test above can fail: the repacked repository holds deltas of both kinds."""
    _packed(world, narr, "offset deltas")
    out = git(world, "verify-pack", "-v", *map(str, (world / ".git/objects/pack").glob("*.idx")))
    assert any(len(line.split()) >= 7 for line in out.splitlines())  # an entry with a base


REVS = ["HEAD", "HEAD~1", "HEAD~3", "HEAD^", "HEAD~", "HEAD^1~2", "main", "main~2",
        "refs/heads/main", "v1", "v1~1", "annotated", "annotated~2", "what-if", "origin/main"]


@pytest.mark.parametrize("packed_refs", [False, True], ids=["loose refs", "packed refs"])
def test_revisions_resolve_as_libgit2_resolves_them(world: Path, narr: CLI, packed_refs: bool) -> None:
    _story(narr, 5)
    git(world, "tag", "v1", "HEAD~1")
    git(world, "tag", "-a", "-m", "a tag with a message", "annotated", "HEAD~2")
    git(world, "branch", "what-if", "HEAD~3")
    git(world, "update-ref", "refs/remotes/origin/main", "HEAD~4")
    if packed_refs:
        git(world, "pack-refs", "--all")
    repo = pygit2.Repository(str(world))
    files = GitFiles(world / ".git")
    full = str(repo.head.target)
    for rev in [*REVS, full, f"{full}~1"]:
        want = str(repo.revparse_single(rev).peel(pygit2.Commit).id)
        assert files.resolve(rev) == want, rev
    for rev in ["HEAD~99", "nosuch", full[:10], "HEAD@{1}", "HEAD^2", "main:world", "@",
                "HEAD~1..HEAD", ""]:
        with pytest.raises(Unsure):
            files.resolve(rev)
    assert files.head() == ("refs/heads/main", full)


def test_commit_messages_of_unusual_shape(world: Path) -> None:
    """Leading blank lines (libgit2 trims them), extra headers, a signature's continuation
    lines: read as libgit2 reads them; a message in another encoding is left to it."""
    repo = pygit2.Repository(str(world))
    tree = str(repo.head.peel(pygit2.Commit).tree_id)
    head = str(repo.head.target)
    stamp = "A U Thor <a@example.invalid> 1700000000 +0100"
    raws = [
        f"tree {tree}\nparent {head}\nauthor {stamp}\ncommitter {stamp}\n\n\n\nthree newlines\n",
        f"tree {tree}\nauthor {stamp}\ncommitter {stamp}\ngpgsig -----BEGIN-----\n abc\n def\n "
        "-----END-----\n\nsigned\n\nbody with\n\nblank lines",
        f"tree {tree}\nparent {head}\nparent {head}\nauthor {stamp}\ncommitter {stamp}\n\n",
    ]
    files = GitFiles(world / ".git")
    for raw in raws:
        oid = str(repo.odb.write(pygit2.enums.ObjectType.COMMIT, raw.encode()))
        found, theirs = files.commit(oid), repo[oid]
        assert (found.message, found.parent_ids, found.commit_time) == (
            theirs.message, tuple(str(p) for p in theirs.parent_ids), theirs.commit_time)
    latin = f"tree {tree}\nauthor {stamp}\ncommitter {stamp}\nencoding ISO-8859-1\n\ncaf\xe9\n"
    oid = str(repo.odb.write(pygit2.enums.ObjectType.COMMIT, latin.encode("latin-1")))
    with pytest.raises(Unsure):
        files.commit(oid)


def test_what_it_does_not_read_it_leaves_to_libgit2(world: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert discover(world / "world") == world / ".git"
    assert discover(Path("/")) is None
    git(world, "worktree", "add", "-q", str(tmp_path / "linked"))
    with pytest.raises(Unsure):  # a .git file
        discover(tmp_path / "linked")
    with pytest.raises(Unsure):
        discover(world / ".git" / "objects")
    monkeypatch.setenv("GIT_DIR", str(world / ".git"))
    with pytest.raises(Unsure):
        discover(world)
    monkeypatch.delenv("GIT_DIR")
    (world / ".git" / "objects" / "info" / "alternates").write_text("/elsewhere\n")
    with pytest.raises(Unsure):
        discover(world)
    (world / ".git" / "objects" / "info" / "alternates").unlink()
    git(world, "config", "extensions.worktreeConfig", "true")
    with pytest.raises(Unsure):
        discover(world)


def test_a_missing_or_damaged_object_is_unsure_and_libgit2_is_asked(world: Path, narr: CLI) -> None:
    _story(narr, 2)
    head = git(world, "rev-parse", "HEAD").strip()
    loose = world / ".git" / "objects" / head[:2] / head[2:]
    assert loose.is_file()
    files = GitFiles(world / ".git")
    with pytest.raises(Unsure):
        files.read("0" * 40)
    data = loose.read_bytes()
    loose.chmod(0o644)
    loose.write_bytes(data[:-8])
    with pytest.raises(Unsure):
        files.read(head)
    loose.write_bytes(data)
    assert files.read(head)[0] == "commit"


@pytest.fixture(scope="module")
def packed_copy(tmp_path_factory: pytest.TempPathFactory, sample_worlds: dict[str, Path]
                ) -> tuple[Path, dict[str, tuple[str, bytes]]]:
    """A world packed with deltas, a few loose objects beside, and every object as libgit2
    reads it: the original the damaged copies are measured against."""
    from conftest import copy_world

    world = copy_world(sample_worlds["flat"], tmp_path_factory.mktemp("packed") / "world")
    narr = CLI(world)
    _packed(world, narr, "offset deltas")
    _story(narr, 2, start=20)
    repo = pygit2.Repository(str(world))
    names = {pygit2.enums.ObjectType.COMMIT: "commit", pygit2.enums.ObjectType.TREE: "tree",
             pygit2.enums.ObjectType.BLOB: "blob", pygit2.enums.ObjectType.TAG: "tag"}
    return world, {oid: (names[repo[oid].type], repo[oid].read_raw()) for oid in _objects(world)}


def _damage(world: Path, target: Path, cuts: list[tuple[int, int, int]],
            truncate: int | None) -> Path:
    """A copy of the world's git directory with bytes of its object files changed (which
    file, where, to what) and the first of them cut short."""
    import shutil

    copy = target / "copy"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(world / ".git", copy)
    files = sorted(p for p in copy.joinpath("objects").rglob("*") if p.is_file())
    packs = [f for f in files if f.suffix in (".pack", ".idx")]
    for which, (pick, at, value) in enumerate(cuts):
        victim = (packs if pick % 2 else files)[pick // 2 % len(packs if pick % 2 else files)]
        data = bytearray(victim.read_bytes())
        if data:
            data[at % len(data)] = value
        if truncate is not None and which == 0:
            data = data[:truncate % (len(data) + 1)]
        victim.chmod(0o644)
        victim.write_bytes(bytes(data))
    return copy


@given(cuts=st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1 << 20),
                               st.integers(0, 255)), min_size=1, max_size=4),
       truncate=st.none() | st.integers(0, 1 << 20))
def test_damaged_files_give_the_object_or_unsure_never_another_answer(
        packed_copy: tuple[Path, dict[str, tuple[str, bytes]]], tmp_path_factory: pytest.TempPathFactory,
        cuts: list[tuple[int, int, int]], truncate: int | None) -> None:
    world, objects = packed_copy
    files = GitFiles(_damage(world, tmp_path_factory.getbasetemp(), cuts, truncate))
    for oid, want in objects.items():
        try:
            found = files.read(oid)
        except Unsure:
            continue
        assert found == want, oid
    files.close()


def test_a_pack_whose_delta_points_at_itself_is_unsure(world: Path, narr: CLI) -> None:
    """A hand-made hostile pack: a delta whose base is itself, and one pointing before the
    pack's start; no loop, no recursion error, just unsure."""
    import struct
    import zlib

    pack_dir = world / ".git" / "objects" / "pack"
    body = zlib.compress(b"\x05\x05\x90\x05")  # a delta: copy 5 bytes from the base
    entries = [bytes([0x60 | 4]) + bytes([0]) + body,  # ofs-delta, base 0 bytes back: itself
               bytes([0x60 | 4]) + bytes([0x7F]) + body]  # 127 bytes back: before the pack
    data = b"PACK" + struct.pack(">II", 2, len(entries))
    offsets = []
    for entry in entries:
        offsets.append(len(data))
        data += entry
    data += b"\0" * 20
    ids = [bytes([0x11]) * 20, bytes([0x22]) * 20]
    fanout = [sum(1 for i in ids if i[0] <= n) for n in range(256)]
    idx = (b"\xfftOc" + struct.pack(">I", 2) + b"".join(struct.pack(">I", f) for f in fanout)
           + b"".join(ids) + b"\0" * 8 + b"".join(struct.pack(">I", o) for o in offsets)
           + b"\0" * 40)
    (pack_dir / "pack-hostile.pack").write_bytes(data)
    (pack_dir / "pack-hostile.idx").write_bytes(idx)
    files = GitFiles(world / ".git")
    for oid in ids:
        with pytest.raises(Unsure):
            files.read(oid.hex())
    files.close()


PROBE = """
import sys
if sys.argv[1] == "with-pygit2":
    import pygit2
from narrative.cli import main
try:
    main(sys.argv[2:])
except SystemExit:
    pass
print("pygit2 loaded:", "pygit2" in sys.modules, file=sys.stderr)
"""

READS = [["log", "-n", "5"], ["log", "--json", "-n", "3"], ["show"], ["show", "HEAD~1", "--json"],
         ["show", "v1"],
         ["get", "lin-yuan"], ["get", "lin-yuan", "state.mood", "--json"],
         ["get", "lin-yuan", "--at", "HEAD~2", "--json"], ["get", "su-qing", "--at", "v1"]]


def _probe(world: Path, mode: str, args: list[str]) -> tuple[str, str]:
    env = {**os.environ, "NARR_NO_SERVER": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE, mode, *args], cwd=world,
                         capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0, (args, out.stderr)
    *rest, last = out.stderr.strip().splitlines()
    return out.stdout + "\n".join(rest), last


@pytest.mark.parametrize("packing", ["loose", "offset deltas"])
def test_reads_without_pygit2_answer_as_with_it(world: Path, narr: CLI, packing: str) -> None:
    _packed(world, narr, packing)
    git(world, "tag", "v1", "HEAD~3")
    path = narr("path", "lin-yuan").output.strip()  # a hand edit: get reads the working tree
    (world / path).write_text((world / path).read_text("utf-8").replace("waiting 5", "restless"),
                              "utf-8")
    for args in READS:
        lean, loaded = _probe(world, "plain", args)
        assert loaded == "pygit2 loaded: False", args
        full, loaded = _probe(world, "with-pygit2", args)
        assert loaded == "pygit2 loaded: True"
        assert lean == full, args
    assert "restless" in _probe(world, "plain", ["get", "lin-yuan"])[0]


def test_a_read_that_needs_libgit2_loads_it(world: Path, narr: CLI) -> None:
    """The probe above can fail: a name (not an id) needs the hand-edit scan, which is libgit2's;
    an abbreviated id is libgit2's to resolve."""
    _story(narr, 2)
    short = git(world, "rev-parse", "--short=10", "HEAD~1").strip()
    for args in (["get", "Lin Yuan"], ["show", short]):
        lean, loaded = _probe(world, "plain", args)
        assert loaded == "pygit2 loaded: True", args
        assert lean == _probe(world, "with-pygit2", args)[0]
    for args in (["log", "HEAD~1", "-n", "2"], ["log", "main~1"]):  # a node could be so named
        assert _probe(world, "plain", args)[0] == _probe(world, "with-pygit2", args)[0]


def test_a_world_whose_objects_are_elsewhere_is_read_by_libgit2(world: Path, narr: CLI,
                                                              tmp_path: Path) -> None:
    """A clone sharing its origin's objects (alternates): the file reader is unsure from the
    start, and the commands answer through libgit2 as before."""
    _story(narr, 3)
    git(world, "gc", "-q")
    shared = tmp_path / "shared"
    subprocess.run(["git", "clone", "-q", "--shared", str(world), str(shared)], check=True)
    lean, loaded = _probe(shared, "plain", ["log", "-n", "2"])
    assert loaded == "pygit2 loaded: True"
    assert lean == _probe(world, "plain", ["log", "-n", "2"])[0]


def test_a_commit_the_reader_is_unsure_of_is_read_by_libgit2_midway(world: Path, narr: CLI,
                                                                  tmp_path: Path) -> None:
    """A plain git commit whose message is Latin-1 (the reader leaves other encodings to
    libgit2) in the middle of the story: walks through it and reads at it answer as before."""
    _story(narr, 2)
    message = tmp_path / "message"
    message.write_bytes("a note about the caf\xe9\n".encode("latin-1"))
    git(world, "-c", "i18n.commitEncoding=ISO-8859-1", "commit", "-q", "--allow-empty",
        "-F", str(message))
    _story(narr, 2, start=5)
    for args in (["log", "-n", "5"], ["log", "--json", "-n", "4"], ["show", "HEAD~2"],
                 ["show", "HEAD~3", "--json"], ["get", "lin-yuan", "--at", "HEAD~3", "--json"]):
        lean, _ = _probe(world, "plain", args)
        assert lean == _probe(world, "with-pygit2", args)[0], args


def test_what_the_reader_cannot_read_midway_libgit2_reads(world: Path, narr: CLI,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A world read from its files whose reader turns unsure partway (an object it cannot
    read): the commit's parent, its tree and a file in it come from libgit2 instead."""
    from narrative.store.worldrepo import WorldRepo, load_config

    _story(narr, 3)
    wr = WorldRepo(world, None, load_config(world), files=GitFiles(world / ".git"))
    wr._found = f"{world / '.git'}{os.sep}"
    head = wr.head_commit()
    assert head is not None and wr.file_reader() is not None
    parent, tree_id = head.parent_ids[0], git(world, "rev-parse", "HEAD^{tree}").strip()
    path = git(world, "ls-files", "world/character").split()[0]
    read_commit, read_tree = GitFiles.commit, GitFiles.tree

    def commit(files: GitFiles, oid: str) -> object:
        if oid == parent:
            raise Unsure("cannot read it")
        return read_commit(files, oid)

    def tree(files: GitFiles, oid: str) -> object:
        if oid == tree_id:
            raise Unsure("cannot read it")
        return read_tree(files, oid)

    monkeypatch.setattr(GitFiles, "commit", commit)
    monkeypatch.setattr(GitFiles, "tree", tree)
    assert head.first_parent is not None and head.first_parent.id == parent
    assert [p.id for p in head.parents] == [parent]
    assert head.tree.id == tree_id
    assert head.tree.read(path) == (world / path).read_bytes()
    assert wr.file_reader() is None  # libgit2 is open now, and reads from here on
    wr.close()
