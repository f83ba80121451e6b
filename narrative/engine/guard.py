"""A write based on what the caller last saw: refused when the story moved since.

A page (or any program) shows the story as it stood when it last looked, and its writes are
meant for that story. :func:`check_head` refuses one whose HEAD or story line has moved
meanwhile (HTTP's ``If-Match``), so nothing is written on top of a change the caller never saw.
Held together with the write under the world's lock, no other process moves HEAD between them.
"""

from __future__ import annotations

from narrative.errors import MovedError
from narrative.store import WorldRepo, resolve_rev


def check_head(wr: WorldRepo, expected: str, branch: str | None = None) -> None:
    """Refuse a write the caller based on another HEAD than the one the world has now.

    ``expected`` is an entity tag as ``If-Match`` carries it (quoted or not, ``*`` for any);
    ``branch``, when given, is the story line the caller saw. Nothing is written by a refusal.
    """
    tags = [t.strip().removeprefix("W/").strip('"') for t in expected.split(",") if t.strip()]
    head = wr.head_id() or "none"
    now = wr.branch()
    seen = tags[0][:10] if tags else "?"
    moved = [] if "*" in tags or head in tags else [f"HEAD is now {head[:10]}, not {seen}"]
    if branch is not None and branch != (now or ""):
        moved.insert(0, f"the story line is now {now or '(detached)'}, not {branch or '(detached)'}")
    if not moved:
        return
    what = ""
    if head != "none":
        what = f" (at “{_content(wr, head)}”)"
    raise MovedError("the story moved since this page last looked: " + "; ".join(moved) + what,
                     hint="the page has been refreshed; look again and retry")


def _content(wr: WorldRepo, commit: str) -> str:
    try:
        message = resolve_rev(wr, commit).message
    except Exception:  # only a description
        return commit[:10]
    first = message.strip().splitlines()[0] if message.strip() else commit[:10]
    return first[:80]
