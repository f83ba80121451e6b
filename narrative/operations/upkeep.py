"""Rows of upkeep: making a world, hand edits set aside (list, restore, drop), where HEAD has
been, a check of the history, plain commits adopted, packing the repository, and what narr
depends on (doctor)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from narrative.operations import (
    MAX_LIMIT,
    MAX_STRING,
    NoParams,
    Operation,
    Params,
    Rev,
    Short,
    directory_of,
)

if TYPE_CHECKING:
    from pathlib import Path

    from narrative.answer_models import (
        AdoptAnswer,
        CheckAnswer,
        EditDroppedAnswer,
        EditRestoredAnswer,
        EditsAnswer,
        GcAnswer,
        InitAnswer,
        ReflogAnswer,
    )
    from narrative.engine.doctor import DoctorAnswer
    from narrative.store import WorldRepo

Which = Annotated[str, Field(min_length=1, max_length=MAX_STRING, description=(
    "the set-aside edits: their number (1: the newest), origin/N, or their ref"))]


class RestoreEditsParams(Params):
    which: Which = "1"
    force: bool = Field(False, description=(
        "let the set-aside values win collisions (the current edits are set aside first)"))


class DropEditsParams(Params):
    which: Which


class ReflogParams(Params):
    limit: Annotated[int | None, Field(ge=0, le=MAX_LIMIT, description="at most this many entries")] = None


class CheckParams(Params):
    rev: Rev | None = Field(None, description="check the story line up to this revision (left out: HEAD)")
    history_only: bool = Field(False, description="check the events only, not every node")
    full: bool = Field(False, description="walk every event, not only those since the last check that passed")


class InitParams(Params):
    directory: Short | None = Field(None, description=(
        "where the world goes, relative to the directory narr runs in (left out: that directory)"))
    sample: bool = Field(False, description="start from the sample story world")
    layout: Literal["flat", "sharded"] = Field("flat", description=(
        "flat: world/<layer>/<id>.json; sharded: world/<layer>/<xx>/<id>.json"))
    name: Short | None = Field(None, description="the world's name (default: the directory's)")
    language: Short | None = Field(None, description="the story's main language, e.g. en or zh")
    rules: Literal["en", "zh", "both"] | None = Field(None, description="narr's generic rules")
    here: bool = Field(False, description=(
        "make the existing git repository (history kept) a world, with a genesis commit on top"))


class DoctorParams(Params):
    llm_timeout: Annotated[float, Field(ge=0.1, le=3600, description=(
        "seconds to wait for the llm diffuser's server (asked only when configured)"))] = 30.0


def run_init(where: WorldRepo | Path, p: InitParams) -> InitAnswer:
    from narrative.answer_models import InitAnswer
    from narrative.engine.init import init_world

    target = directory_of(where)
    if p.directory is not None:
        target = target / p.directory  # an absolute directory stays itself
    made = init_world(target, sample=p.sample, layout=p.layout, name=p.name,
                      language=p.language, rules=p.rules, here=p.here)
    return InitAnswer(root=str(made.root), commit=made.commit, id=made.event_id,
                      nodes=made.nodes, layout=made.layout)


def run_doctor(where: WorldRepo | Path, p: DoctorParams) -> DoctorAnswer:
    """The report, problems and all: a problem is an answer here (``ok`` false), and the
    command line's exit code comes from it."""
    from narrative.engine.doctor import DoctorAnswer, doctor

    return DoctorAnswer.model_validate(
        doctor(directory_of(where), llm_timeout=p.llm_timeout).to_json())


def run_edits(wr: WorldRepo, p: NoParams) -> EditsAnswer:
    from narrative.answer_models import EditsAnswer
    from narrative.engine.setaside import list_set_asides

    return EditsAnswer.model_validate({"items": list_set_asides(wr)})


def run_restore_edits(wr: WorldRepo, p: RestoreEditsParams) -> EditRestoredAnswer:
    from narrative.answer_models import EditRestoredAnswer
    from narrative.engine.setaside import restore

    return EditRestoredAnswer.model_validate(restore(wr, p.which, force=p.force).to_json())


def run_drop_edits(wr: WorldRepo, p: DropEditsParams) -> EditDroppedAnswer:
    from narrative.answer_models import EditDroppedAnswer
    from narrative.engine.setaside import drop_set_aside

    return EditDroppedAnswer.model_validate(drop_set_aside(wr, p.which).to_json())


def run_reflog(wr: WorldRepo, p: ReflogParams) -> ReflogAnswer:
    from narrative.answer_models import ReflogAnswer
    from narrative.engine.branches import reflog

    return ReflogAnswer.model_validate({"items": reflog(wr, p.limit)})


def run_check(wr: WorldRepo, p: CheckParams) -> CheckAnswer:
    """The report, passing or not: a failed check is an answer here (``ok`` false), and the
    command line's exit code comes from it."""
    from narrative.answer_models import CheckAnswer
    from narrative.engine.check import check

    report = check(wr, p.rev, world=not p.history_only, full=p.full)
    return CheckAnswer.model_validate(report.to_json())


def run_adopt(wr: WorldRepo, p: NoParams) -> AdoptAnswer:
    from narrative.answer_models import AdoptAnswer
    from narrative.engine.adopt import adopt

    return AdoptAnswer.model_validate(adopt(wr).to_json())


def run_gc(wr: WorldRepo, p: NoParams) -> GcAnswer:
    from narrative.answer_models import GcAnswer
    from narrative.store import gc

    return GcAnswer.model_validate(gc(wr).to_json())


A = "narrative.answer_models"
EDITS = Operation(
    "edits", "Hand edits set aside by a reset or a switch, newest first, with their changes.",
    NoParams, run_edits, f"{A}:EditsAnswer", "GET", "/api/edits", "edits")
RESTORE_EDITS = Operation(
    "restore_edits", "Put set-aside hand edits back (1: the newest); the next event records them.",
    RestoreEditsParams, run_restore_edits, f"{A}:EditRestoredAnswer", "POST", "/api/edits/restore",
    "edits restore", writes=True, idempotent=False, positional=("which",))
DROP_EDITS = Operation(
    "drop_edits", "Forget set-aside hand edits for good.",
    DropEditsParams, run_drop_edits, f"{A}:EditDroppedAnswer", "POST", "/api/edits/drop",
    "edits drop", writes=True, destructive=True, idempotent=False, positional=("which",))
REFLOG = Operation(
    "reflog", "Where HEAD has been: every event, reset, replay and switch, newest first.",
    ReflogParams, run_reflog, f"{A}:ReflogAnswer", "GET", "/api/reflog", "reflog")
CHECK = Operation(
    "check", "Check that every event explains its commit and every node is valid; writes "
    "nothing but the mark of a check that passed.",
    CheckParams, run_check, f"{A}:CheckAnswer", "POST", "/api/check", "check", writes=True,
    positional=("rev",))
ADOPT = Operation(
    "adopt", "Make plain git commits on top of the last event hand edits again (the commits are kept).",
    NoParams, run_adopt, f"{A}:AdoptAnswer", "POST", "/api/adopt", "adopt", writes=True,
    idempotent=False)
GC = Operation(
    "gc", "Pack the repository (git gc); nothing narr keeps is pruned.",
    NoParams, run_gc, f"{A}:GcAnswer", "POST", "/api/gc", "gc", writes=True)
INIT = Operation(
    "init", "Create a new world: a git repository with narr.toml, world/ and a genesis commit.",
    InitParams, run_init, f"{A}:InitAnswer", "POST", "/api/init", "init", writes=True,
    idempotent=False, positional=("directory",), needs_world=False,
    unserved="it makes a world where none is; a server serves the world it runs in")
DOCTOR = Operation(
    "doctor", "Check the libraries narr needs, the machine and the world; name each problem's fix.",
    DoctorParams, run_doctor, "narrative.engine.doctor:DoctorAnswer", "GET", "/api/doctor", "doctor",
    needs_world=False)
ROWS = (INIT, EDITS, RESTORE_EDITS, DROP_EDITS, REFLOG, CHECK, ADOPT, GC, DOCTOR)
