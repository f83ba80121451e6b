"""A chapter read with the ``llm`` diffuser: the review asks the model once a sentence and is
kept, so recording the same chapter on the same world takes the proposals the writer saw; the
model writes the chapter's summary, and when it cannot, the summary made from the changes
stands."""

from __future__ import annotations

from pathlib import Path

import test_llm
from helpers import CLI, read_node
from llm_stubs import Stub
from test_llm import error, reply

llm = test_llm.llm  # the fake model's server, and no settings of the machine's own
no_user_settings = test_llm.no_user_settings

CHAPTER = ("# Chapter 1\n\nLin Yuan walks to the ferry. The rain goes on.\n\n* * *\n\n"
           "Su Qing frowns at him.\n")
MOVE = {"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "ferry"}]}
FROWN = {"ops": [{"op": "set", "target": "su-qing", "field": "/state/mood", "value": "cross"}]}


def test_the_review_is_kept_and_the_model_writes_the_summary(flat_world: Path, tmp_path: Path,
                                                              llm: Stub) -> None:
    narr = CLI(flat_world)
    path = tmp_path / "ch.md"
    path.write_text(CHAPTER, "utf-8")
    llm.answer(reply(MOVE), reply({"ops": []}), reply(FROWN))
    review = narr.json("chapter", str(path), "--dry-run", "--diffuser", "llm")["review"]
    assert [(c["sentence"], c["changes"][0]["new_value"]) for c in review["changes"]] == [
        (1, "ferry"), (3, "cross")]
    assert len(llm.requests) == 3  # one question a sentence
    # were the model asked again it would propose something else: the kept review is what counts
    llm.answer(reply({"summary": "Lin Yuan reaches the ferry; Su Qing is cross with him."}))
    llm.default = reply(FROWN)
    out = narr.json("chapter", str(path), "--accept", "all", "--diffuser", "llm")
    assert len(llm.requests) == 4  # the summary only
    assert out["chapter"]["summary"] == "Lin Yuan reaches the ferry; Su Qing is cross with him."
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert read_node(flat_world, "su-qing")["state"]["mood"] == "cross"


def test_a_model_that_cannot_summarise_leaves_the_summary_made_from_the_changes(
        flat_world: Path, tmp_path: Path, llm: Stub) -> None:
    narr = CLI(flat_world)
    path = tmp_path / "ch.md"
    path.write_text(CHAPTER, "utf-8")
    llm.answer(reply(MOVE), reply({"ops": []}), reply(FROWN), error(400, "no"), error(400, "no"),
               error(400, "no"))
    out = narr.json("chapter", str(path), "--accept", "all", "--diffuser", "llm")
    assert out["chapter"]["summary"] == ("Lin Yuan goes to Cold River Ferry; Su Qing's mood "
                                         "becomes cross.")
    assert any("the model did not write the chapter's summary" in w for w in out["warnings"])
