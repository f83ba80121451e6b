"""Linux's inotify, read in the thread that asks: the paths changed under a world, up to now.

A scan must know every change made before it began. A watcher that learns of changes on
its own thread can only prove that by a round trip (write a cookie file, wait until the
thread has seen it: a few milliseconds, most of a served ``narr status``). The kernel
queues an inotify event before the system call that caused it returns, so a
non-blocking read of the queue, at the moment the scan begins, holds every change made
before it: no round trip.

One watch per directory of the world, git's directory left out (its index is followed
by its signature; its objects are no hand edit). Directories made or moved in later are
watched as they appear and named whole, so the files made in them before their watch
took hold are examined too; a directory moved away takes its watches with it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF, _OVERFLOW, _IGNORED = 0x400, 0x800, 0x4000, 0x8000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK, _ISDIR = 0x01000000, 0x02000000, 0x04000000, 0x40000000
_MASK = (_MODIFY | _ATTRIB | _CLOSE_WRITE | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE
         | _DELETE_SELF | _MOVE_SELF | _ONLYDIR | _DONT_FOLLOW | _EXCL_UNLINK)
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)


class Trouble(Exception):
    """The paths can no longer be vouched for (the queue overflowed, the watch limit was
    reached, the world's own directory went): the next scan must walk everything."""


def available() -> bool:
    return sys.platform.startswith("linux") and _libc() is not None


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL | None:
    global _LIBC
    if _LIBC is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.inotify_init1.argtypes = [ctypes.c_int]
            libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        except (OSError, AttributeError):
            return None
        _LIBC = libc
    return _LIBC


class Inotify:
    """The watches on ``root`` (but not ``skip``, git's directory) and their queue."""

    def __init__(self, root: str, skip: str) -> None:
        libc = _libc()
        if libc is None:
            raise OSError(errno.ENOSYS, "inotify is not available")
        self._libc = libc
        self.root = root.rstrip(os.sep) or os.sep
        self.skip = skip
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify: {os.strerror(err)}")
        self.fd = fd
        self._dirs: dict[int, str] = {}  # watch descriptor -> the directory's absolute path
        self._wd_of: dict[str, int] = {}
        try:
            self._watch_tree(self.root)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _watch_tree(self, top: str) -> None:
        """Watch ``top`` and every directory under it (whose files the caller names whole:
        some may have been made before their directory's watch took hold)."""
        if not self._watch(top):
            return
        for dirpath, dirnames, _ in os.walk(top):
            dirnames[:] = [name for name in dirnames
                           if os.path.join(dirpath, name) != self.skip
                           and self._watch(os.path.join(dirpath, name))]

    def _watch(self, path: str) -> bool:
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), _MASK)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EACCES):
                return False  # gone again, a link, or unreadable (a scan finds it as git does)
            raise Trouble(f"cannot watch {path} ({os.strerror(err)})")
        old = self._dirs.get(wd)
        if old is not None and old != path:
            self._wd_of.pop(old, None)
        self._dirs[wd] = path
        self._wd_of[path] = wd
        return True

    def _unwatch_tree(self, top: str) -> None:
        prefix = top + os.sep
        for path in [p for p in self._wd_of if p == top or p.startswith(prefix)]:
            wd = self._wd_of.pop(path)
            self._dirs.pop(wd, None)
            self._libc.inotify_rm_watch(self.fd, wd)  # its IN_IGNORED names a watch unknown now

    def read(self) -> set[str]:
        """The absolute paths changed since the last read (directories stand for everything
        under them); :class:`Trouble` when they cannot be known."""
        changed: set[str] = set()
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return changed
            except InterruptedError:
                continue
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _, length = _HEADER.unpack_from(data, offset)
                raw = data[offset + _HEADER.size:offset + _HEADER.size + length]
                offset += _HEADER.size + length
                self._event(wd, mask, os.fsdecode(raw.rstrip(b"\0")), changed)

    def _event(self, wd: int, mask: int, name: str, changed: set[str]) -> None:
        if mask & _OVERFLOW:
            raise Trouble("the watcher overflowed (the kernel's event queue was full)")
        directory = self._dirs.get(wd)
        if directory is None:
            return  # a watch given up (its directory moved away or went)
        if mask & _IGNORED:
            self._dirs.pop(wd, None)
            if self._wd_of.get(directory) == wd:
                del self._wd_of[directory]
            return
        if mask & (_DELETE_SELF | _MOVE_SELF) and directory == self.root:
            raise Trouble("the world's directory itself changed")
        if not name:
            return  # about a watched directory itself: its parent's event names it
        path = os.path.join(directory, name)
        if path == self.skip:
            if mask & (_DELETE | _MOVED_FROM | _MOVED_TO | _CREATE):
                raise Trouble("the world's git directory itself changed")
            return
        changed.add(path)
        if mask & _ISDIR:
            if mask & (_MOVED_FROM | _DELETE):
                self._unwatch_tree(path)
            if mask & (_MOVED_TO | _CREATE):
                self._watch_tree(path)
