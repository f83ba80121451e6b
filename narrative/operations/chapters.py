"""The row that tells a chapter: reviewed sentence by sentence, or recorded as one unit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from narrative.errors import InvalidInputError
from narrative.model import Op
from narrative.operations import Operation, Params, Short

if TYPE_CHECKING:
    from narrative.engine.chapter_answers import ChapterAnswer
    from narrative.store import WorldRepo


class AddedParams(Params):
    sentence: Annotated[int, Field(ge=1, le=1_000_000, description="the sentence's number")]
    op: Op


class ChapterParams(Params):
    text: Annotated[str, Field(min_length=1, max_length=200_000,
                               description="the chapter: plain text or Markdown")]
    dry_run: bool = Field(False, description="review only: the scenes, every proposed change "
                                             "numbered with its sentence, the contradictions")
    accept: Literal["all"] | Annotated[list[Annotated[int, Field(ge=1)]],
                                       Field(max_length=100_000)] | None = Field(
        None, description='the changes of the review to record: "all" or their numbers')
    reject: Annotated[list[Annotated[int, Field(ge=1)]], Field(max_length=100_000)] = Field(
        default_factory=list, description="changes to leave out")
    added: Annotated[list[AddedParams], Field(max_length=10_000)] = Field(
        default_factory=list, description="changes added by hand, each at its sentence")
    number: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(
        None, description="the chapter's number (default: its heading's, else the next)")
    title: Short | None = None
    at: Short | None = Field(None, description="the story time the chapter begins at")
    diffuser: Short | None = None
    key: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="idempotency key: a chapter recorded with it is not recorded again")
    budget: Annotated[float, Field(gt=0, le=3600)] | None = Field(
        None, description="seconds the review may take (default 120)")


def run_chapter(wr: WorldRepo, p: ChapterParams) -> ChapterAnswer:
    from narrative.engine import chapter
    from narrative.engine.chapter_answers import ChapterAnswer

    added = [chapter.AddedChange(a.sentence, a.op) for a in p.added]
    kwargs: dict[str, Any] = {"number": p.number, "title": p.title, "diffuser": p.diffuser,
                              "added": added, "at": p.at,
                              "budget": p.budget or chapter.DEFAULT_BUDGET}
    if p.dry_run:
        if p.accept is not None or p.reject:
            raise InvalidInputError("the arguments: a dry run records nothing: leave out accept "
                                    "and reject")
        return ChapterAnswer.model_validate(
            chapter.dry_run_answer(chapter.review(wr, p.text, **kwargs)))
    if p.accept is None:
        raise InvalidInputError("the arguments: /accept: say which changes to record (\"all\" "
                                "or their numbers), or ask for a dry_run first")
    recorded = chapter.record(wr, p.text, accept=p.accept, reject=p.reject, key=p.key, **kwargs)
    return ChapterAnswer.model_validate(recorded.to_json())


CHAPTER = Operation(
    "chapter", "Review a chapter sentence by sentence (dry_run: every change numbered with its "
    "sentence, the contradictions), or record it as one unit with the changes accepted; a key "
    "makes a retried call record nothing twice.",
    ChapterParams, run_chapter, "narrative.engine.chapter_answers:ChapterAnswer", "POST",
    "/api/chapters", "chapter", writes=True, idempotent=False, positional=("text",),
    cli_only={"file": "FILE: the chapter, read into text",
              "sets": "--set S:NODE.FIELD=VALUE: a change added at sentence S (added)",
              "unsets": "--unset S:NODE.FIELD (added)", "relates": "--relate S:... (added)",
              "unrelates": "--unrelate S:... (added)", "diffuser_name": "--diffuser: diffuser",
              "retry": "--retry: record the chapter whose recording failed, as decided"})
ROWS = (CHAPTER,)
