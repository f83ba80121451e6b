"""A world's git repository read straight from its files, for commands that only read.

Loading pygit2 costs a cold process 75 to 110 ms (libgit2, OpenSSL, pygit2's enums),
more than the rest of ``narr log``, ``narr show`` or ``narr get`` together. Those
commands need little of git: where HEAD points, a few commits, a tree path or two,
one blob. Git's formats for these are small and stable (loose objects, pack files
with their version-2 index, loose and packed refs), so they are read here with zlib.

This reader answers only where it is sure to answer as libgit2 would. Anything it does
not handle (a ``.git`` file, worktrees, alternates, grafts, a config that includes
others or sets extensions, a revision beyond ``NAME``, ``NAME~N`` and ``NAME^``, an
object it cannot find) raises :class:`Unsure`, and the caller opens the repository
with pygit2 instead. A test reads every object of packed and loose repositories
both ways and compares.
"""

from __future__ import annotations

import mmap
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

_TYPES = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}
FOLDER, SUBMODULE = 0o40000, 0o160000  # the modes of tree entries that are not files
_OFS_DELTA, _REF_DELTA = 6, 7
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_REV = re.compile(r"^(?P<name>[^~^:@{}\\\s]+?)(?P<steps>(?:~\d*|\^1?)*)$")
_KEPT_BYTES = 32 * 1024 * 1024  # parsed commits kept by one reader
_MAX_CHAIN = 5_000  # git's deepest chain is 4,095 (pack.depth's limit)
# Variables that change where git looks: with any of them set, libgit2 decides.
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES", "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
            "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_INDEX_FILE")
# Settings of .git/config under which a repository is not the plain one read here.
_CONFIG_UNSURE = re.compile(
    r"^\s*(worktree|bare\s*=\s*(true|yes|on|1)|repositoryformatversion\s*=\s*[1-9]|\[include|"
    r"\[extensions|objectformat|refstorage)", re.IGNORECASE | re.MULTILINE)


class Unsure(Exception):
    """This reader cannot be sure of the answer: ask libgit2."""


def discover(start: Path) -> Path | None:
    """The ``.git`` directory of the repository whose working tree holds ``start``, found as
    libgit2's discovery finds it; None when there is none; :class:`Unsure` for any case
    this module does not read (a ``.git`` file, a bare repository, a mount crossed...)."""
    if any(os.environ.get(name) for name in _GIT_ENV):
        raise Unsure("git's location is set by the environment")
    device = None
    for folder in (start, *start.parents):
        try:
            info = folder.stat()
        except OSError as exc:
            raise Unsure(str(exc)) from None
        if device is not None and info.st_dev != device:
            raise Unsure("the search would cross a mount")
        device = info.st_dev
        if folder.name == ".git" or _looks_like_git_dir(folder):
            raise Unsure("inside a git directory")
        dot = folder / ".git"
        if os.path.lexists(dot):
            if dot.is_symlink() or not dot.is_dir() or not _looks_like_git_dir(dot):
                raise Unsure(f"{dot} is not a plain git directory")
            _require_plain(dot)
            return dot
    return None


def _looks_like_git_dir(folder: Path) -> bool:
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (
        folder / "refs").is_dir()


def _require_plain(git_dir: Path) -> None:
    """Refuse what this reader does not follow; libgit2's own checks (the owner) included."""
    if git_dir.stat().st_uid != os.geteuid():
        raise Unsure("owned by another user: libgit2 decides whether it is safe")
    for name in ("commondir", "gitdir", "objects/info/alternates", "info/grafts", "shallow"):
        if os.path.lexists(git_dir / name):
            raise Unsure(f"{name} is present")
    try:
        config = (git_dir / "config").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Unsure(f"config unreadable: {exc}") from None
    if _CONFIG_UNSURE.search(config):
        raise Unsure("the config sets what this reader does not follow")


class Pack:
    """One pack file and its version-2 index, mapped once and read by offset."""

    def __init__(self, idx_path: Path) -> None:
        # Both files are mapped, not read: a lookup touches a few pages of an index that is
        # megabytes at 100k nodes.
        self._idx: Any = _mapped(idx_path)
        idx = self._idx
        if idx[:8] != b"\xfftOc\x00\x00\x00\x02" or len(idx) < 8 + 256 * 4:
            raise Unsure(f"{idx_path.name}: not a version-2 pack index")
        fanout = idx[8:8 + 256 * 4]
        self._fanout = [int.from_bytes(fanout[i * 4:i * 4 + 4], "big") for i in range(256)]
        self.count = self._fanout[255]
        self._ids = 8 + 256 * 4
        self._offsets = self._ids + 24 * self.count  # after the ids and their CRCs
        self._large = self._offsets + 4 * self.count
        if len(idx) < self._large + 40 or any(a > b for a, b in zip(
                self._fanout, self._fanout[1:], strict=False)):
            raise Unsure(f"{idx_path.name}: a damaged pack index")
        self.data: Any = _mapped(idx_path.with_suffix(".pack"))
        if self.data[:4] != b"PACK" or int.from_bytes(self.data[4:8], "big") not in (2, 3):
            raise Unsure(f"{idx_path.name}: not a pack git reads")

    def offset(self, raw: bytes) -> int | None:
        """Where the object with binary id ``raw`` starts in the pack, or None."""
        lo = self._fanout[raw[0] - 1] if raw[0] else 0
        hi = self._fanout[raw[0]]
        idx, ids = self._idx, self._ids
        while lo < hi:
            mid = (lo + hi) // 2
            here = idx[ids + mid * 20:ids + mid * 20 + 20]
            if here < raw:
                lo = mid + 1
            elif here > raw:
                hi = mid
            else:
                at = self._offsets + 4 * mid
                value = int.from_bytes(idx[at:at + 4], "big")
                if value & 0x80000000:
                    at = self._large + 8 * (value & 0x7FFFFFFF)
                    value = int.from_bytes(idx[at:at + 8], "big")
                return value
        return None

    def close(self) -> None:
        self._idx.close()
        if hasattr(self, "data"):
            self.data.close()


def _mapped(path: Path) -> Any:
    try:
        with open(path, "rb") as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # missing, unreadable, empty
        raise Unsure(f"{path.name}: {exc}") from None


class GitFiles:
    """The objects and refs of one repository, read from its files (see the module)."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._objects = os.path.join(git_dir, "objects")
        self._packs: list[Pack] | None = None
        self._pack_names: list[str] = []
        self._bases: dict[tuple[int, int], tuple[str, bytes]] = {}
        self._kept: dict[str, FileCommit | FileTree] = {}
        self._kept_bytes = 0
        # Set by the world: opens the repository with pygit2, for an object handed on to
        # code that needs libgit2 itself (see :func:`narrative.store.objects.git_commit`).
        self.opener: Callable[[], Any] | None = None

    # --- refs -------------------------------------------------------------------------

    def head(self) -> tuple[str | None, str | None]:
        """``(branch ref or None when detached, commit id or None when unborn)``."""
        text = self._read_text("HEAD")
        if text.startswith("ref: "):
            ref = text[5:].strip()
            return ref, self.ref(ref)
        return None, self._hex(text, "HEAD")

    def ref(self, name: str, depth: int = 0) -> str | None:
        """The object id a ref holds, following symbolic refs; None when it does not exist."""
        if depth > 5:
            raise Unsure(f"{name}: symbolic refs nested too deep")
        if not name.startswith("refs/") or ".." in name or "//" in name or name.endswith(
                ("/", ".lock")):
            raise Unsure(f"{name}: not a ref this reader follows")
        path = self.git_dir / name
        if path.is_file() and not path.is_symlink():
            text = self._read_text(name)
            if text.startswith("ref: "):
                return self.ref(text[5:].strip(), depth + 1)
            return self._hex(text, name)
        if os.path.lexists(path) and not path.is_dir():
            raise Unsure(f"{name}: not a plain file")
        return self._packed_refs().get(name)

    def _packed_refs(self) -> dict[str, str]:
        try:
            text = (self.git_dir / "packed-refs").read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise Unsure(f"packed-refs: {exc}") from None
        out: dict[str, str] = {}
        for line in text.splitlines():
            if not line or line[0] in "#^":
                continue
            oid, _, name = line.partition(" ")
            out[name] = self._hex(oid, "packed-refs")
        return out

    def _read_text(self, name: str) -> str:
        try:
            return (self.git_dir / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise Unsure(f"{name}: {exc}") from None

    @staticmethod
    def _hex(text: str, where: str) -> str:
        oid = text.strip()
        if not _HEX40.match(oid):
            raise Unsure(f"{where}: not an object id")
        return oid

    def resolve(self, rev: str) -> str:
        """The commit id of ``HEAD``, a branch or tag, a full id, each with ``~N`` or ``^``
        after it; :class:`Unsure` for any other form, and for a name that does not resolve
        (libgit2 then says why in its own words)."""
        m = _REV.match(rev)
        if m is None:
            raise Unsure(f"{rev}: a revision form this reader does not parse")
        name = m.group("name")
        if name == "HEAD":
            found = self.head()[1]
        elif _HEX40.match(name):
            found = name
        elif re.fullmatch(r"[0-9a-f]{4,}", name) or (
                not name.startswith("refs/") and os.path.lexists(self.git_dir / name)):
            raise Unsure(f"{name}: a ref outside refs/ or an abbreviated id: libgit2 decides")
        else:  # libgit2's order, the first that exists winning (git_reference_dwim)
            found = None
            for ref in (name, f"refs/{name}", f"refs/tags/{name}", f"refs/heads/{name}",
                        f"refs/remotes/{name}", f"refs/remotes/{name}/HEAD"):
                if ref.startswith("refs/"):
                    found = self.ref(ref)
                    if found is not None:
                        break
        if found is None:
            raise Unsure(f"{name}: does not resolve")
        commit = self.peel_commit(found)
        for step in re.findall(r"~\d*|\^1?", m.group("steps")):
            count = 1 if step in ("~", "^", "^1") else int(step[1:])
            for _ in range(count):
                parents = self.commit(commit).parent_ids
                if not parents:
                    raise Unsure(f"{rev}: walks past the root")
                commit = parents[0]
        return commit

    def peel_commit(self, oid: str) -> str:
        """``oid`` itself if it is a commit, the commit an annotated tag points at, else Unsure."""
        for _ in range(10):
            kind, data = self.read(oid)
            if kind == "commit":
                return oid
            if kind != "tag" or not data.startswith(b"object "):
                raise Unsure(f"{oid}: not a commit")
            oid = data[7:47].decode("ascii")
        raise Unsure(f"{oid}: tags nested too deep")

    # --- objects ----------------------------------------------------------------------

    def read(self, oid: str) -> tuple[str, bytes]:
        """``(type, content)`` of an object, from its loose file or a pack. Whatever a
        damaged or hostile file holds, the answer is the object or :class:`Unsure`."""
        if not _HEX40.match(oid):
            raise Unsure(f"{oid}: not a full object id")
        try:
            loose = self._read_loose(oid)
            if loose is not None:
                return loose
            return self._unpack(*self._find(oid))
        except (IndexError, ValueError, OverflowError, zlib.error, OSError) as exc:
            raise Unsure(f"object {oid}: {exc}") from None

    def _read_loose(self, oid: str) -> tuple[str, bytes] | None:
        try:
            with open(self._loose(oid), "rb") as f:
                compressed = f.read()
        except FileNotFoundError:
            return None
        d = zlib.decompressobj()
        out = d.decompress(compressed, 8192)
        kind, size, start = _loose_header(out, oid)
        want = start + size
        while len(out) <= want and d.unconsumed_tail:  # never more than the header says
            out += d.decompress(d.unconsumed_tail, want + 1 - len(out))
        if len(out) != want or not d.eof:
            raise Unsure(f"object {oid}: a damaged loose object")
        return kind, out[start:]

    def size(self, oid: str) -> int:
        """An object's size, without inflating all of a loose one (a bulk event's record is
        tens of megabytes)."""
        if not _HEX40.match(oid):
            raise Unsure(f"{oid}: not a full object id")
        try:
            try:
                with open(self._loose(oid), "rb") as f:
                    head = zlib.decompressobj().decompress(f.read(512), 64)
            except FileNotFoundError:
                return self._packed_size(*self._find(oid))
        except (IndexError, ValueError, OverflowError, zlib.error, OSError) as exc:
            raise Unsure(f"object {oid}: {exc}") from None
        return _loose_header(head, oid)[1]

    def _packed_size(self, pack: Pack, offset: int) -> int:
        kind, size, pos = _entry_header(pack.data, offset)
        if kind in _TYPES:
            return size
        if kind == _OFS_DELTA:
            pos = _base_offset(pack.data, pos)[1]
        elif kind == _REF_DELTA:
            pos += 20
        else:
            raise Unsure(f"pack entry of type {kind}")
        try:  # a delta starts with its base's size and its result's
            head = zlib.decompressobj().decompress(pack.data[pos:pos + 256], 32)
            return _varint(head, _varint(head, 0)[1])[0]
        except (zlib.error, IndexError):
            raise Unsure("a damaged pack entry") from None

    def _loose(self, oid: str) -> str:
        return f"{self._objects}/{oid[:2]}/{oid[2:]}"  # a string: pathlib costs a walk 3x

    def _find(self, oid: str) -> tuple[Pack, int]:
        raw = bytes.fromhex(oid)
        for rescan in (False, True):
            for pack in self._all_packs(rescan):
                offset = pack.offset(raw)
                if offset is not None:
                    return pack, offset
        raise Unsure(f"object {oid} is in neither a loose file nor a pack")

    def _all_packs(self, rescan: bool) -> list[Pack]:
        if self._packs is None or rescan:
            folder = self.git_dir / "objects" / "pack"
            try:
                names = sorted(p.name for p in folder.glob("pack-*.idx"))
            except OSError as exc:
                raise Unsure(str(exc)) from None
            if self._packs is not None and names == self._pack_names:
                return self._packs
            self.close()
            self._packs = [Pack(folder / name) for name in names]
            self._pack_names = names
        return self._packs

    def _unpack(self, pack: Pack, offset: int) -> tuple[str, bytes]:
        """The object at ``offset``: its chain of deltas followed down to a base (in this
        pack, another, or a loose file), then applied from the base up."""
        deltas: list[tuple[tuple[int, int], bytes]] = []
        while True:
            key = (id(pack), offset)
            if key in self._bases:
                kind, body = self._bases[key]
                break
            if len(deltas) > _MAX_CHAIN:
                raise Unsure("a delta chain longer than git makes")
            data = pack.data
            code, size, pos = _entry_header(data, offset)
            if code in _TYPES:
                kind, body = _TYPES[code], _inflate(data, pos, size)
                break
            if code == _OFS_DELTA:
                back, pos = _base_offset(data, pos)
                if not 0 < back <= offset:
                    raise Unsure("a delta whose base is not before it")
                deltas.append((key, _inflate(data, pos, size)))
                offset -= back
            elif code == _REF_DELTA:
                base_id = bytes(data[pos:pos + 20]).hex()
                deltas.append((key, _inflate(data, pos + 20, size)))
                loose = self._read_loose(base_id)
                if loose is not None:
                    kind, body = loose
                    break
                pack, offset = self._find(base_id)
            else:
                raise Unsure(f"pack entry of type {code}")
        for key, delta in reversed(deltas):
            body = _apply_delta(body, delta)
            if len(self._bases) > 256:
                self._bases.clear()
            self._bases[key] = (kind, body)
        return kind, body

    def close(self) -> None:
        for pack in self._packs or ():
            pack.close()
        self._packs = None
        self._bases.clear()

    # --- parsed objects ---------------------------------------------------------------

    def commit(self, oid: str) -> FileCommit:
        found = self._parsed(oid, "commit")
        assert isinstance(found, FileCommit)
        return found

    def tree(self, oid: str) -> FileTree:
        found = self._parsed(oid, "tree")
        assert isinstance(found, FileTree)
        return found

    def _parsed(self, oid: str, kind: str) -> FileCommit | FileTree:
        """The commit or tree ``oid``, parsed; kept for the next ask (a log lists each
        commit, then reads its record again; opening a world reads the trees a ``get``
        reads next) while the kept ones hold less than :data:`_KEPT_BYTES`."""
        found = self._kept.get(oid)
        if found is None:
            found_kind, data = self.read(oid)
            if found_kind != kind:
                raise Unsure(f"{oid} is a {found_kind}, not a {kind}")
            found = FileCommit(self, oid, data) if kind == "commit" else FileTree(self, oid, data)
            if self._kept_bytes + len(data) <= _KEPT_BYTES:
                self._kept[oid] = found
                self._kept_bytes += len(data)
        elif not isinstance(found, FileCommit if kind == "commit" else FileTree):
            raise Unsure(f"{oid} is not a {kind}")
        return found


def _loose_header(raw: bytes, oid: str) -> tuple[str, int, int]:
    """A loose object's type, size and where its content starts (``TYPE SIZE\\0``)."""
    head, sep, _ = raw.partition(b"\0")
    kind, _, size = head.partition(b" ")
    name = kind.decode("ascii", "replace")
    if not sep or not size.isdigit() or name not in _TYPES.values():
        raise Unsure(f"object {oid}: a damaged loose object")
    return name, int(size), len(head) + 1


def _base_offset(data: Any, pos: int) -> tuple[int, int]:
    """An offset delta's distance back to its base, and where its data starts."""
    byte = data[pos]
    back = byte & 0x7F
    pos += 1
    while byte & 0x80:
        byte = data[pos]
        back = ((back + 1) << 7) | (byte & 0x7F)
        pos += 1
    return back, pos


def _entry_header(data: Any, offset: int) -> tuple[int, int, int]:
    """A pack entry's type, size and where its data starts."""
    byte = data[offset]
    kind = (byte >> 4) & 7
    size = byte & 15
    shift, pos = 4, offset + 1
    while byte & 0x80:
        byte = data[pos]
        size |= (byte & 0x7F) << shift
        shift += 7
        pos += 1
    return kind, size, pos


def _inflate(data: Any, pos: int, size: int) -> bytes:
    """``size`` bytes inflated from the zlib stream at ``pos`` (its compressed length is not
    stored; the stream ends itself), never more than that however the stream goes on."""
    d = zlib.decompressobj()
    out = b""
    chunk = size + 64
    try:
        while not d.eof and len(out) <= size:
            piece = d.unconsumed_tail or data[pos:pos + chunk]
            if not d.unconsumed_tail:
                if not piece:
                    break
                pos += len(piece)
                chunk *= 2
            out += d.decompress(piece, size + 1 - len(out))
    except zlib.error as exc:
        raise Unsure(f"a damaged pack entry: {exc}") from None
    if len(out) != size or not d.eof:
        raise Unsure("a pack entry of the wrong size")
    return out


def _varint(delta: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = delta[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _apply_delta(base: bytes, delta: bytes) -> bytes:
    """The object a git delta makes of ``base`` (copy and insert instructions)."""
    try:
        source, pos = _varint(delta, 0)
        target, pos = _varint(delta, pos)
        if source != len(base):
            raise Unsure("a delta against a base of another size")
        out = bytearray()
        end = len(delta)
        while pos < end:
            cmd = delta[pos]
            pos += 1
            if cmd & 0x80:
                start = length = 0
                for bit in range(4):
                    if cmd & (1 << bit):
                        start |= delta[pos] << (8 * bit)
                        pos += 1
                for bit in range(3):
                    if cmd & (0x10 << bit):
                        length |= delta[pos] << (8 * bit)
                        pos += 1
                length = length or 0x10000
                if start + length > len(base):
                    raise Unsure("a delta copies beyond its base")
                out += base[start:start + length]
            elif cmd:
                out += delta[pos:pos + cmd]
                pos += cmd
            else:
                raise Unsure("a delta instruction git does not write")
            if len(out) > target:
                raise Unsure("a delta that makes more than it says")
    except IndexError:
        raise Unsure("a truncated delta") from None
    if len(out) != target:
        raise Unsure("a delta of the wrong size")
    return bytes(out)


class FileCommit:
    """A commit read by :class:`GitFiles`, with the attributes :class:`~narrative.store.
    objects.Commit` reads of a pygit2 commit (``id``, ``parent_ids``, ``parents``, ``tree``,
    ``tree_id``, ``message``, ``commit_time``), each as pygit2 gives it."""

    __slots__ = ("commit_time", "files", "id", "message", "parent_ids", "tree_id")

    def __init__(self, files: GitFiles, oid: str, data: bytes) -> None:
        self.files = files
        self.id = oid
        head, sep, body = data.partition(b"\n\n")
        if not sep or b"\0" in data:
            raise Unsure(f"commit {oid}: a form this reader does not parse")
        tree: str | None = None
        parents: list[str] = []
        committer = b""
        for line in head.split(b"\n"):
            if line.startswith(b"tree "):
                tree = line[5:].decode("ascii", "replace")
            elif line.startswith(b"parent "):
                parents.append(line[7:].decode("ascii", "replace"))
            elif line.startswith(b"committer "):
                committer = line
            elif line.startswith(b"encoding "):
                raise Unsure(f"commit {oid}: a message in another encoding")
        stamp = committer.rsplit(b" ", 2)
        if tree is None or len(stamp) != 3 or not stamp[1].isdigit() or not all(
                _HEX40.match(oid) for oid in (tree, *parents)):
            raise Unsure(f"commit {oid}: a form this reader does not parse")
        self.tree_id = tree
        self.parent_ids = tuple(parents)
        self.commit_time = int(stamp[1])
        try:
            self.message = body.lstrip(b"\n").decode("utf-8")  # libgit2 trims leading newlines
        except UnicodeDecodeError:
            raise Unsure(f"commit {oid}: a message that is not UTF-8") from None

    @property
    def parents(self) -> tuple[FileCommit, ...]:
        return tuple(self.files.commit(p) for p in self.parent_ids)

    @property
    def tree(self) -> FileTree:
        return self.files.tree(self.tree_id)


class FileTree:
    """A tree read by :class:`GitFiles`: its entries, looked up by path."""

    __slots__ = ("_entries", "data", "files", "id")

    def __init__(self, files: GitFiles, oid: str, data: bytes) -> None:
        self.files = files
        self.id = oid
        self.data = data
        self._entries: dict[bytes, tuple[int, str]] | None = None

    def entries(self) -> dict[bytes, tuple[int, str]]:
        """name -> (mode, object id)."""
        if self._entries is None:
            out: dict[bytes, tuple[int, str]] = {}
            pos = 0
            while pos < len(self.data):
                name, mode, oid, pos = self._entry_at(pos)
                out[name] = (mode, oid)
            self._entries = out
        return self._entries

    def first(self) -> tuple[int, str] | None:
        """The first entry's (mode, id), without parsing the rest (a flat layer holds
        thousands)."""
        if not self.data:
            return None
        return self._entry_at(0)[1:3]

    def _entry_at(self, pos: int) -> tuple[bytes, int, str, int]:
        """The entry at ``pos`` (``MODE NAME\\0`` and 20 bytes of id): its name, mode, id,
        and where the next one starts."""
        data = self.data
        try:
            space = data.index(b" ", pos)
            nul = data.index(b"\0", space)
            if nul + 21 > len(data):
                raise ValueError("an entry cut short")
            return data[space + 1:nul], int(data[pos:space], 8), data[nul + 1:nul + 21].hex(), nul + 21
        except ValueError as exc:
            raise Unsure(f"tree {self.id}: {exc}") from None

    def entry(self, path: str) -> tuple[int, str] | None:
        """(mode, id) of the entry at ``path`` (``a/b/c``), or None."""
        tree: FileTree = self
        *folders, name = path.split("/")
        for folder in folders:
            found = tree.entries().get(folder.encode("utf-8"))
            if found is None or found[0] != FOLDER:
                return None
            tree = self.files.tree(found[1])
        return tree.entries().get(name.encode("utf-8"))


