"""The event graph: one row per commit of a story line, the changes each event recorded, its causes.

``chain`` has one row per commit, ``writes`` the field values each event wrote,
``deps`` its causal edges (a diffusion that read a value an earlier event wrote, or a
cause the record declares). Rows are keyed by commit id, and a commit's first-parent
chain never changes, so they stay true whatever HEAD does; a query walks the chain of
the commit it asks about (:meth:`StoryIndex.use_chain`, the temporary table ``cur``),
and :meth:`StoryIndex.follow_chain` indexes only the commits it has not seen, newest
back to the first one it knows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from narrative import safejson
from narrative.store.catalog import chapters
from narrative.store.objects import Commit, git_commit

if TYPE_CHECKING:
    from narrative.store.catalog.connection import Connection
    from narrative.store.libgit import pygit2

_EVENT_COLUMNS = ("chain.commit_id, chain.seq, event_id, kind, content, narrative, timestamp,"
                  " created_at, close_scene")
_WRITE_COLUMNS = "w.commit_id, cur.seq, w.pos, w.source, w.target, w.field, w.old, w.new"
ABSENT: Any = ...  # narrative.fields.ABSENT, without importing jsonpatch at every command's start


class EventInfo(NamedTuple):
    """One commit of the story line as the catalog describes it."""

    commit: str
    seq: int
    id: str | None
    kind: str
    content: str
    narrative: str | None
    timestamp: str | None
    created_at: str | None
    close_scene: bool

    @classmethod
    def of_row(cls, row: tuple[Any, ...]) -> EventInfo:
        commit, seq, event_id, kind, content, narrative, timestamp, created_at, close = row
        return cls(commit, seq, event_id, kind, content, narrative, timestamp, created_at,
                   bool(close))

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "id": self.id, "kind": self.kind, "content": self.content,
                "timestamp": self.timestamp}


class Write(NamedTuple):
    """One recorded change on the chain; ``old``/``new`` are ABSENT when the field was not there."""

    commit: str
    seq: int
    pos: int
    source: str  # "diffusion" or "edit" (a hand edit the event recorded)
    target: str
    field: str
    old: Any
    new: Any

    @classmethod
    def of_row(cls, row: tuple[Any, ...]) -> Write:
        commit, seq, pos, source, target, field, old, new = row
        return cls(commit, seq, pos, source, target, field,
                   safejson.loads(old) if old is not None else ABSENT,
                   safejson.loads(new) if new is not None else ABSENT)

    def change(self) -> dict[str, Any]:
        out: dict[str, Any] = {"target": self.target, "field": self.field}
        if self.old is not ABSENT:
            out["old_value"] = self.old
        if self.new is not ABSENT:
            out["new_value"] = self.new
        return out


class CausalEdge(NamedTuple):
    """``commit`` depends on ``cause``: it read ``target``'s ``field`` as ``cause`` left it
    (kind ``read``), or its record names ``cause`` (kind ``declared``, no field)."""

    commit: str
    cause: str
    kind: str
    target: str
    field: str


class AncestryEdge(NamedTuple):
    """A causal edge between two ancestors of a commit, with their places on the chain."""

    effect: str
    effect_seq: int
    cause: str
    cause_seq: int
    kind: str
    target: str
    field: str


class LastWrite(NamedTuple):
    """The newest commit of a chain that changed a node, and its place on the chain."""

    seq: int
    commit: str


class FieldWriter(NamedTuple):
    """The newest change of a chain to a field or a field containing it (its creation):
    which event made a field what it is. ``value`` is what it wrote at the field, as JSON
    text (None: it removed it)."""

    commit: str
    value: str | None
    source: str  # "diffusion" or "edit"


class EndedName(NamedTuple):
    """A node a commit of a chain removed that carried ``name`` (a normalised name, or its
    id when asked by id) and that no later commit brought back; ``seq`` the commit's place."""

    name: str
    node: str
    commit: str
    seq: int


class EndedNameRow(NamedTuple):
    """A normalised name or alias of a node removed on a chain."""

    norm: str
    node: str


class TimeInForce(NamedTuple):
    """The story time of the newest commit of a chain that set one, and that commit."""

    value: str
    commit: str
    seq: int


class _Stored(NamedTuple):
    """A ``writes`` row as it is inserted (values as JSON text, None when absent)."""

    commit: str
    pos: int
    source: str
    target: str
    field: str
    old: str | None
    new: str | None


class StoryIndex:
    """The event graph's rows, on the catalog's connection (``catalog.graph``)."""

    def __init__(self, catalog: Connection) -> None:
        self._c = catalog

    def follow_chain(self, tip: Commit | None) -> int:
        """Index the commits of ``tip``'s first-parent chain not indexed yet; how many were new.

        Walks back from ``tip`` to the first commit already known (a reset or a
        switch usually finds one at once), then indexes the new ones oldest first,
        so each finds its parent's chain complete when its causes are worked out.
        """
        if tip is None:
            return 0
        db = self._c.db
        fresh: list[pygit2.Commit] = []
        commit: pygit2.Commit | None = git_commit(tip)
        while commit is not None:
            if db.execute("SELECT 1 FROM chain WHERE commit_id=?", (str(commit.id),)).fetchone():
                break
            fresh.append(commit)
            commit = commit.parents[0] if commit.parents else None
        if not fresh:
            return 0
        with self._c.atomic():
            for commit in reversed(fresh):
                self._index_commit(commit)
        return len(fresh)

    def _index_commit(self, commit: pygit2.Commit) -> None:
        db = self._c.db
        cid = str(commit.id)
        parent = str(commit.parents[0].id) if commit.parents else None
        seq = 0
        if parent is not None:
            row = db.execute("SELECT seq FROM chain WHERE commit_id=?", (parent,)).fetchone()
            seq = int(row[0]) + 1 if row else 0
        if parent is not None:
            self.use_chain(parent)
        else:
            self._cur_table()
            db.execute("DELETE FROM cur")
        self._index_record(commit, cid, parent, seq)
        db.execute("INSERT INTO cur VALUES (?,?)", (cid, seq))  # the chain grows by one
        self._c.cur_tip = cid

    def _index_record(self, commit: pygit2.Commit, cid: str, parent: str | None, seq: int) -> None:
        from narrative.store import records

        db = self._c.db
        rec = records.decode_raw(commit.message)
        if rec is None:
            db.execute("INSERT OR REPLACE INTO chain VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (cid, parent, seq, None, "commit", commit.message.strip().split("\n")[0],
                        None, None, None, 0))
            return
        db.execute("INSERT OR REPLACE INTO chain VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (cid, parent, seq, rec["id"], rec["kind"], rec["content"] or "",
                    rec["narrative_text"], rec["timestamp"], rec["created_at"],
                    1 if rec["close_scene"] else 0))
        db.execute("INSERT OR REPLACE INTO events VALUES (?,?)", (rec["id"], cid))
        db.execute("INSERT INTO event_text VALUES (?,?,?)",
                   (cid, rec["content"] or "", rec["narrative_text"] or ""))
        rows: list[_Stored] = []
        for source, changes in (("edit", rec["edits"]), ("diffusion", rec["diffusions"])):
            for ch in changes if isinstance(changes, list) else []:
                if not isinstance(ch, Mapping):
                    continue
                rows.append(_Stored(cid, len(rows), source, str(ch.get("target", "")),
                                    str(ch.get("field", "")),
                                    _dump(ch["old_value"]) if "old_value" in ch else None,
                                    _dump(ch["new_value"]) if "new_value" in ch else None))
        db.executemany("INSERT INTO writes VALUES (?,?,?,?,?,?,?)", rows)
        chapters.index_record(db, cid, rec)
        db.executemany("INSERT INTO ended VALUES (?,?,?)", _ended_names(rows))
        if parent is None:
            return
        deps: set[CausalEdge] = set()
        own_edits = {(r.target, r.field): r.new for r in rows if r.source == "edit"}
        for r in rows:
            if r.source != "diffusion" or r.old is None or r.field == "":
                continue
            if own_edits.get((r.target, r.field), ...) == r.old:
                continue  # it read the hand edit this event records
            writer = self._last_writer(r.target, r.field)
            if writer is not None and writer.value == r.old:
                deps.add(CausalEdge(cid, writer.commit, "read", r.target, r.field))
        for cause in rec["causes"] if isinstance(rec["causes"], list) else []:
            row = db.execute("SELECT chain.commit_id FROM chain JOIN cur USING (commit_id) "
                             "WHERE chain.event_id=?", (str(cause),)).fetchone()
            if row is not None:
                deps.add(CausalEdge(cid, row[0], "declared", "", ""))
        db.executemany("INSERT INTO deps VALUES (?,?,?,?,?)", sorted(deps))

    def last_writer(self, tip: str, target: str, fld: str) -> FieldWriter | None:
        """The newest change on ``tip``'s chain to ``target``'s ``fld`` or a field
        containing it, or None."""
        self.use_chain(tip)
        return self._last_writer(target, fld)

    def _last_writer(self, target: str, fld: str) -> FieldWriter | None:
        """The newest change on the current chain to ``target``'s ``fld`` or a field
        containing it, or None."""
        prefixes = _prefixes(fld)
        marks = ",".join("?" * len(prefixes))
        row = self._c.db.execute(
            "SELECT w.commit_id, w.field, w.new, w.source FROM writes w JOIN cur USING (commit_id)"
            f" WHERE w.target=? AND w.field IN ({marks}) ORDER BY cur.seq DESC, w.pos DESC LIMIT 1",
            (target, *prefixes)).fetchone()
        if row is None:
            return None
        commit, written, new, source = row
        return FieldWriter(commit, _sub_value(new, written, fld), source)

    def use_chain(self, tip: str) -> None:
        """Fill the temporary table ``cur`` with ``tip``'s first-parent chain (indexed already)."""
        if self._c.cur_tip == tip:
            return
        db = self._c.db
        self._cur_table()
        db.execute("DELETE FROM cur")
        db.execute(
            "INSERT INTO cur WITH RECURSIVE c(commit_id, parent, seq) AS ("
            " SELECT commit_id, parent, seq FROM chain WHERE commit_id=?"
            " UNION ALL SELECT chain.commit_id, chain.parent, chain.seq FROM chain"
            " JOIN c ON chain.commit_id = c.parent)"
            " SELECT commit_id, seq FROM c", (tip,))
        self._c.cur_tip = tip

    def _cur_table(self) -> None:
        self._c.db.execute("CREATE TEMP TABLE IF NOT EXISTS cur (commit_id TEXT PRIMARY KEY, seq INTEGER)")

    # --- reading a chain --------------------------------------------------------------

    def chain_events(self, tip: str, limit: int | None = None) -> list[EventInfo]:
        """The commits of ``tip``'s chain, newest first."""
        self.use_chain(tip)
        q = (f"SELECT {_EVENT_COLUMNS} FROM chain JOIN cur USING (commit_id)"
             " ORDER BY cur.seq DESC")
        rows = self._c.db.execute(q + " LIMIT ?", (limit,)) if limit is not None else self._c.db.execute(q)
        return list(map(EventInfo.of_row, rows))

    def merges_on(self, tip: str) -> list[str]:
        """The merge commits of ``tip``'s chain (narr's merges), newest first."""
        self.use_chain(tip)
        return [row[0] for row in self._c.db.execute(
            "SELECT chain.commit_id FROM chain JOIN cur USING (commit_id)"
            " WHERE chain.kind = 'merge' ORDER BY cur.seq DESC")]

    def event_info(self, commit: str) -> EventInfo | None:
        """One indexed commit, or None."""
        row = self._c.db.execute(f"SELECT {_EVENT_COLUMNS} FROM chain WHERE commit_id=?",
                              (commit,)).fetchone()
        return EventInfo.of_row(row) if row is not None else None

    def event_infos(self, commits: Iterable[str]) -> list[EventInfo]:
        """Indexed commits, in no particular order."""
        return list(map(EventInfo.of_row, self._c._where_in(
            f"SELECT {_EVENT_COLUMNS} FROM chain WHERE commit_id IN", sorted(set(commits)))))

    def chain_first(self, tip: str) -> EventInfo | None:
        """The oldest commit of ``tip``'s chain."""
        self.use_chain(tip)
        row = self._c.db.execute(f"SELECT {_EVENT_COLUMNS} FROM chain JOIN cur USING (commit_id)"
                              " ORDER BY cur.seq LIMIT 1").fetchone()
        return EventInfo.of_row(row) if row is not None else None

    def ancestry_edges(self, tip: str, commit: str) -> list[AncestryEdge]:
        """Every causal edge between ``commit``'s ancestors on ``tip``'s chain (``commit``
        included)."""
        self.use_chain(tip)
        return list(map(AncestryEdge._make, self._c.db.execute(
            "WITH RECURSIVE anc(c) AS (SELECT ? UNION"
            " SELECT d.cause FROM deps d JOIN anc ON d.commit_id = anc.c"
            " JOIN cur ON cur.commit_id = d.cause)"
            " SELECT d.commit_id, ce.seq, d.cause, cc.seq, d.kind, d.target, d.field FROM deps d"
            " JOIN anc a1 ON a1.c = d.commit_id JOIN anc a2 ON a2.c = d.cause"
            " JOIN cur ce ON ce.commit_id = d.commit_id JOIN cur cc ON cc.commit_id = d.cause",
            (commit,))))

    def chain_writes(self, tip: str, target: str | None = None) -> list[Write]:
        """The changes recorded on ``tip``'s chain (to ``target``, or every one), oldest first."""
        self.use_chain(tip)
        q = f"SELECT {_WRITE_COLUMNS} FROM writes w JOIN cur USING (commit_id)"
        rows = (self._c.db.execute(q + " ORDER BY cur.seq, w.pos") if target is None else
                self._c.db.execute(q + " WHERE w.target=? ORDER BY cur.seq, w.pos", (target,)))
        return list(map(Write.of_row, rows))

    def commit_writes(self, commit: str, seq: int) -> list[Write]:
        """The changes one commit recorded (``seq`` its place on the chain), hand edits first."""
        return list(map(Write.of_row, self._c.db.execute(
            "SELECT commit_id, ?, pos, source, target, field, old, new FROM writes"
            " WHERE commit_id=? ORDER BY pos", (seq, commit))))

    def last_writes(self, tip: str, targets: Iterable[str],
                    kinds: Iterable[str] = ("event",)) -> dict[str, LastWrite]:
        """For each of ``targets`` that a commit of ``tip``'s chain (of one of ``kinds``:
        ``event``, ``merge``, ``genesis``) changed: the newest such commit."""
        self.use_chain(tip)
        wanted = sorted(set(kinds))
        kmarks = ",".join("?" * len(wanted))
        rows = self._c._where_in(
            "SELECT w.target, max(cur.seq), cur.commit_id FROM writes w"
            " JOIN cur USING (commit_id) JOIN chain ON chain.commit_id = w.commit_id"
            f" WHERE w.target IN (?*) AND chain.kind IN ({kmarks}) GROUP BY w.target",
            sorted(set(targets)), *wanted)
        return {target: LastWrite(int(seq), commit) for target, seq, commit in rows}

    def events_after_each(self, tip: str, seqs: Iterable[int]) -> dict[int, int]:
        """For each of ``seqs``, how many events (and merges) ``tip``'s chain holds after the
        commit at that seq, from one read of the chain.

        A count per question joined the whole chain each time: a brief on a story of 10k
        events with 365 open threads spent 0.8 s there.
        """
        from bisect import bisect_right

        self.use_chain(tip)
        events = [row[0] for row in self._c.db.execute(
            "SELECT cur.seq FROM cur JOIN chain USING (commit_id)"
            " WHERE chain.kind IN ('event', 'merge') ORDER BY cur.seq")]
        return {seq: len(events) - bisect_right(events, seq) for seq in seqs}

    def chain_pointing_at(self, tip: str, node_id: str) -> list[Write]:
        """Like :meth:`chain_writes`, for changes to other nodes that may concern ``node_id``:
        a relation to it, or a whole node whose text names its id (callers check which)."""
        self.use_chain(tip)
        return list(map(Write.of_row, self._c.db.execute(
            f"SELECT {_WRITE_COLUMNS} FROM writes w JOIN cur USING (commit_id) WHERE w.target != ?"
            " AND ((w.field LIKE '/relations/%' AND instr(w.field, ?) > 0)"
            " OR (w.field = '' AND (instr(coalesce(w.new, ''), ?) > 0"
            "  OR instr(coalesce(w.old, ''), ?) > 0))) ORDER BY cur.seq, w.pos",
            (node_id, "/" + node_id, json.dumps(node_id), json.dumps(node_id)))))

    # --- ended nodes, places, the clock ------------------------------------------------

    def ended_by_names(self, tip: str, norms: Iterable[str],
                       ids: Iterable[str] = ()) -> list[EndedName]:
        """The nodes carrying one of ``norms`` (or having one of ``ids``) when a commit of
        ``tip``'s chain removed them and that no later commit of the chain brought back: the
        ended nodes a name may mean. The newest removal comes first."""
        self.use_chain(tip)
        again = ("NOT EXISTS (SELECT 1 FROM writes w JOIN cur c2 USING (commit_id)"
                 " WHERE w.target = e.target AND w.field = '' AND w.new IS NOT NULL"
                 " AND c2.seq > cur.seq)")
        out: list[EndedName] = []
        for column, values in (("e.norm", sorted(set(norms))), ("e.target", sorted(set(ids)))):
            rows = self._c._where_in(
                f"SELECT DISTINCT {column}, e.target, e.commit_id, cur.seq FROM ended e"
                f" JOIN cur USING (commit_id) WHERE {column} IN (?*) AND {again}"
                " ORDER BY cur.seq DESC", values)
            out.extend(map(EndedName._make, rows))
        return out

    def ended_names(self, tip: str) -> list[EndedNameRow]:
        """Every normalised name of every node removed on ``tip``'s chain (for suggestions)."""
        self.use_chain(tip)
        return list(map(EndedNameRow._make, self._c.db.execute(
            "SELECT DISTINCT e.norm, e.target FROM ended e JOIN cur USING (commit_id)")))

    def ever_located(self, tip: str, places: Iterable[str]) -> set[str]:
        """The nodes a change on ``tip``'s chain moved into or out of one of ``places``
        (``state.location``): everyone who stood there at some point of the story line."""
        self.use_chain(tip)
        values = sorted(_dump(p) for p in set(places))
        out: set[str] = set()
        for i in range(0, len(values), 400):  # each value is bound twice
            chunk = values[i : i + 400]
            marks = ",".join("?" * len(chunk))
            out.update(target for (target,) in self._c.db.execute(
                "SELECT DISTINCT w.target FROM writes w JOIN cur USING (commit_id)"
                f" WHERE w.field = '/state/location' AND (w.new IN ({marks}) OR w.old IN ({marks}))",
                (*chunk, *chunk)))
        return out

    def story_time(self, tip: str) -> TimeInForce | None:
        """The newest commit of ``tip``'s chain that set a story time: the time in force,
        since an event without ``--at`` keeps the time it finds."""
        self.use_chain(tip)
        row = self._c.db.execute(
            "SELECT chain.timestamp, chain.commit_id, cur.seq FROM chain JOIN cur USING (commit_id)"
            " WHERE chain.timestamp IS NOT NULL AND chain.timestamp != ''"
            " ORDER BY cur.seq DESC LIMIT 1").fetchone()
        return TimeInForce(str(row[0]), str(row[1]), int(row[2])) if row is not None else None

    def chain_deps(self, tip: str) -> list[CausalEdge]:
        """Every causal edge on ``tip``'s chain."""
        self.use_chain(tip)
        return list(map(CausalEdge._make, self._c.db.execute(
            "SELECT d.commit_id, d.cause, d.kind, d.target, d.field FROM deps d"
            " JOIN cur USING (commit_id) ORDER BY d.commit_id, d.cause, d.target, d.field")))


def _ended_names(rows: list[_Stored]) -> list[tuple[str, str, str]]:
    """``(commit, node, normalised name)`` for every name or alias of a node a commit removed,
    so an ended node is found by name without reading the history."""
    from narrative.ids import normalize_name

    out: list[tuple[str, str, str]] = []
    for r in rows:
        if r.field != "" or r.old is None or r.new is not None:
            continue
        try:
            node = safejson.loads(r.old)
        except ValueError:
            continue
        if not isinstance(node, dict):
            continue
        names = [node.get("name"), *(node.get("aliases") or [])]
        norms = {normalize_name(n) for n in names if isinstance(n, str) and n.strip()}
        out.extend((r.commit, r.target, norm) for norm in sorted(norms))
    return out


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _prefixes(fld: str) -> list[str]:
    """``fld`` and every pointer containing it: ``/a/b`` -> ``["", "/a", "/a/b"]``."""
    parts = fld.split("/")
    return ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]


def _sub_value(new: str | None, written: str, fld: str) -> str | None:
    """The JSON text of ``fld`` inside a value written at ``written`` (a prefix of it)."""
    if new is None or written == fld:
        return new
    from narrative import fields

    value = fields.get(safejson.loads(new), fld[len(written):])
    return None if value is fields.ABSENT else _dump(value)
