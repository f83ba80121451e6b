"""Rows of the told story: a chapter reviewed sentence by sentence or recorded as one unit, the
chapters of a story line, and the book so far."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from narrative.errors import InvalidInputError
from narrative.model import Op
from narrative.operations import Operation, Paged, Params, Rev, Short

if TYPE_CHECKING:
    from narrative.answer_models import StoryAnswer
    from narrative.engine.chapter_answers import ChapterAnswer, ChaptersAnswer
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
    story_time: Short | None = Field(None, description="the story time the chapter begins at")
    diffuser: Short | None = None
    key: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="idempotency key: a chapter recorded with it is not recorded again")
    budget: Annotated[float, Field(gt=0, le=3600)] | None = Field(
        None, description="seconds the review may take (default 120)")


class ChaptersParams(Paged):
    rev: Rev = Field("HEAD", description="the story line's tip")


class StoryParams(Params):
    start: Rev | None = Field(None, description="start after this event (left out: the beginning)")
    end: Rev | None = Field(None, description="end with this event (left out: HEAD)")


def run_chapter(wr: WorldRepo, p: ChapterParams) -> ChapterAnswer:
    from narrative.engine import chapter
    from narrative.engine.chapter_answers import ChapterAnswer

    added = [chapter.AddedChange(a.sentence, a.op) for a in p.added]
    kwargs: dict[str, Any] = {"number": p.number, "title": p.title, "diffuser": p.diffuser,
                              "added": added, "at": p.story_time,
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


def run_chapters(wr: WorldRepo, p: ChaptersParams) -> ChaptersAnswer:
    """Newest first, those merged lines brought too (marked with their line)."""
    from narrative.engine.chapter_answers import ChaptersAnswer
    from narrative.engine.chapters import chapters_on_line

    found = chapters_on_line(wr, None if p.rev == "HEAD" else p.rev, merged=True)
    return ChaptersAnswer.model_validate({"items": [c.to_json() for c in reversed(found)]})


def run_story(wr: WorldRepo, p: StoryParams) -> StoryAnswer:
    from narrative.answer_models import StoryAnswer
    from narrative.engine.book import book

    return StoryAnswer.model_validate(book(wr, p.start, p.end).to_json())


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
              "at": "--at: the old spelling of --story-time",
              "retry": "--retry: record the chapter whose recording failed, as decided"})
CHAPTERS = Operation(
    "chapters", "The chapters of a story line, newest first, with their summaries (those a merge "
    "brought too, marked with their line).",
    ChaptersParams, run_chapters, "narrative.engine.chapter_answers:ChaptersAnswer", "GET",
    "/api/chapters", "log", positional=("rev",))
STORY = Operation(
    "story", "The book so far: the story line's events oldest first, with story time, narrative "
    "text and the chapters that tell them.",
    StoryParams, run_story, "narrative.answer_models:StoryAnswer", "GET", "/api/story", "story",
    cli_only={"fmt": "--format: md to read, or json (as --json)"})
ROWS = (CHAPTER, CHAPTERS, STORY)
