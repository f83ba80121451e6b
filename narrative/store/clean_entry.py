"""Index entries for files narr has just checked against their blob, without a blob write.

``index.add(path)`` (libgit2's ``git_index_add_bypath``) streams the file into the object
database to learn its id: it creates a temporary file among the objects, finds the blob
there already, and deletes the file again. On a journalled disk that is most of a
millisecond per path, the larger part of a reset's index update. narr knows the id
already (the file was just written from that blob, or hashed), so the entry is made from
the file's ``stat`` and that id, exactly as ``add_bypath`` would make it: same stat
fields, and marked up to date so that libgit2's racy-entry check at the write does not
hash it again.

This reaches pygit2's C layer (its ``ffi`` module and ``git_index_add``); where that is
not as expected, :func:`add_clean` says so and the caller adds the path the usual way.
"""

from __future__ import annotations

import os
import stat

from narrative.store.libgit import c_layer, pygit2

_UPTODATE = 1 << 2  # GIT_INDEX_ENTRY_UPTODATE: an in-memory flag, never written to disk
_INT32 = 1 << 31


def add_clean(index: pygit2.Index, path: str, oid: str, st: os.stat_result) -> bool:
    """Set ``path``'s entry to blob ``oid`` with the stat data ``st`` of a regular,
    non-executable file whose content is that blob; False (nothing done) when this
    pygit2 or the file's times do not allow it."""
    layer = c_layer()  # looked up once a process (functools.cache)
    if layer is None or not stat.S_ISREG(st.st_mode) or st.st_mode & 0o111:
        return False
    if not 0 <= st.st_ctime_ns // 10**9 < _INT32 or not 0 <= st.st_mtime_ns // 10**9 < _INT32:
        return False  # outside what an index stores: libgit2's own add handles it
    C, ffi = layer
    try:
        raw_index = index._index
        entry = ffi.new("git_index_entry *")
    except (AttributeError, TypeError):
        return False
    entry.ctime.seconds, entry.ctime.nanoseconds = divmod(st.st_ctime_ns, 10**9)
    entry.mtime.seconds, entry.mtime.nanoseconds = divmod(st.st_mtime_ns, 10**9)
    # As libgit2 fills them from a stat (git_index_entry__init_from_stat): st_rdev in the
    # dev field, 32-bit truncation of the size.
    entry.dev = st.st_rdev & 0xFFFFFFFF
    entry.ino = st.st_ino & 0xFFFFFFFF
    entry.mode = int(pygit2.enums.FileMode.BLOB)
    entry.uid = st.st_uid & 0xFFFFFFFF
    entry.gid = st.st_gid & 0xFFFFFFFF
    entry.file_size = st.st_size & 0xFFFFFFFF
    ffi.buffer(ffi.addressof(entry, "id"))[:] = bytes.fromhex(oid)
    entry.flags_extended = _UPTODATE
    c_path = ffi.new("char[]", os.fsencode(path))
    entry.path = c_path
    return bool(C.git_index_add(raw_index, entry) >= 0)  # refused: the caller's add says why
