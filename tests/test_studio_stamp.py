"""The studio's stamp of where the world stands (what makes an open page refresh) is never
taken half-way through another process's write: an event whose node file is written and whose
commit is not yet would show as a hand edit for a moment, and a page acting on it would act
from the HEAD before it."""

from __future__ import annotations

import threading
from pathlib import Path

from helpers import edit_node

from narrative.engine.studio import settled_stamp
from narrative.serve.studio import Notices
from narrative.store import WorldRepo
from narrative.store.lock import WriteLock


def test_no_stamp_is_taken_while_another_writer_holds_the_world(flat_world: Path) -> None:
    with WorldRepo.open(flat_world) as wr:
        assert settled_stamp(wr) == settled_stamp(wr)  # a quiet world: stamped at once
        writer = WriteLock(wr.lock.path)  # another writer's hold (a process of its own)
        with writer:
            edit_node(flat_world, "lin-yuan", mood="half-written")  # its file, not its commit
            assert settled_stamp(wr) is None
            assert Notices(flat_world, threading.Event()).stamp() is None
        after = settled_stamp(wr)
    assert after is not None and [path for path, _ in after["edits"]] == [
        "world/character/lin-yuan.json"]


def test_a_look_that_may_wait_is_taken_once_the_writer_is_done(flat_world: Path) -> None:
    with WorldRepo.open(flat_world) as wr:
        writer = WriteLock(wr.lock.path)
        writer.acquire()
        done = threading.Timer(0.3, writer.release)
        done.start()
        try:
            stamp = settled_stamp(wr, wait=60)
        finally:
            done.join()
        assert stamp is not None and not writer.held
