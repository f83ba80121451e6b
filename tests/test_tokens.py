"""narr's token estimate against real tokenizers' counts of the same texts.

``tests/data/token_counts.json`` holds narr's prompts and some of the repository's prose,
each with its exact token count under four vocabularies local models use (Qwen 2.5 and 3,
Llama 3, OpenAI's o200k), measured once outside narr. The estimate must never fall below
the largest count (a prompt it says fits must fit) and stay within a fifth or so above it
(or narr refuses prompts that would have fit).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from narrative.diffusers.tokens import PER_MESSAGE, PER_REQUEST, estimate, estimate_messages

COUNTS = json.loads((Path(__file__).parent / "data" / "token_counts.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("sample", COUNTS["texts"], ids=lambda s: s["name"])
def test_the_estimate_is_never_below_a_real_count_and_not_far_above(sample: dict[str, Any]) -> None:
    real = max(sample["tokens"].values())
    guess = estimate(sample["text"])
    assert real <= guess <= real * 1.2, (sample["name"], guess, sample["tokens"])


def test_messages_cost_their_template_too() -> None:
    messages = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Go."}]
    assert estimate_messages(messages) == (PER_REQUEST + 2 * PER_MESSAGE + estimate("Answer in JSON.")
                                           + estimate("Go."))


@given(st.text(max_size=200), st.text(max_size=200))
def test_more_text_never_costs_less(a: str, b: str) -> None:
    assert estimate(a + b) >= max(estimate(a), estimate(b)) - 1
