"""``narr brief --pov X`` keeps to what X could know, and never names a secret X does not know.

The property: for random worlds and histories (people moving between places, learning,
telling and revealing secrets), no string that names a secret X does not know (its id,
name, aliases, summary, the words of an event that revealed it) appears in X's brief,
as text, Markdown or JSON. Then the exact brief of a secret learned off screen and on screen.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI
from hypothesis import given, settings
from hypothesis import strategies as st

PEOPLE = ["Ada Lane", "Tom Reed", "Mayor Hale"]
PLACES = ["town hall", "saloon", "old mill"]
SECRETS = [  # words found nowhere else in the world or the story
    {"name": "the Vermilion Ledger", "alias": "the ledger", "summary": "Hale skims the grain tax"},
    {"name": "the Widow's Letter", "alias": "Rowe's note", "summary": "Rowe names her true heir"},
]


def _id(name: str) -> str:
    return name.lower().replace("'", "-").replace(" ", "-")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pov") / "w"
    CLI(root.parent)("init", str(root), "--rules", "en")
    narr = CLI(root)
    for name in PEOPLE:
        narr("new", "character", name)
    for name in PLACES:
        narr("new", "background", name, "--kind", "place")
    for s in SECRETS:
        narr("new", "background", s["name"], "--kind", "secret", "--alias", s["alias"],
             "--summary", s["summary"])
    narr("event", "The day begins.")
    return root


person = st.sampled_from(PEOPLE)
secret = st.sampled_from([s["name"] for s in SECRETS])
step = st.one_of(
    st.tuples(st.just("go"), person, st.sampled_from(PLACES)),
    st.tuples(st.just("learn"), person, secret),
    st.tuples(st.just("tell"), person, person, secret),
    st.tuples(st.just("reveal"), secret),
)


def _sentence(s: tuple[Any, ...]) -> str:
    if s[0] == "go":
        return f"{s[1]} walks to the {s[2]}."
    if s[0] == "learn":
        return f"{s[1]} learns {s[2]}."
    if s[0] == "tell":
        return f"{s[1]} tells {s[2]} {s[3]}."
    return f"{s[1]} is revealed."


def forbidden(narr: CLI, pov: str) -> list[str]:
    """What names the secrets ``pov`` does not know, worked out from the world and the log alone."""
    me = json.loads(narr("get", pov).stdout)
    out: list[str] = []
    records = narr.json("log")["items"]
    for s in SECRETS:
        sid = _id(s["name"])
        node = json.loads(narr("get", sid).stdout)
        if sid in (me.get("relations") or {}).get("knows", {}) or node["state"].get("known_widely"):
            continue
        out += [sid, s["name"], s["alias"], s["summary"]]
        for rec in records:
            if any(d["target"] == sid or d["field"] == f"/relations/knows/{sid}"
                   for d in rec.get("diffusions", [])):
                out.append(rec["content"])
    return out


@settings(max_examples=20)
@given(steps=st.lists(step, min_size=1, max_size=6), who=person)
def test_a_point_of_view_never_names_a_secret_it_does_not_know(
        base: Path, tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[Any, ...]],
        who: str) -> None:
    root = tmp_path_factory.mktemp("story") / "w"
    shutil.copytree(base, root)
    narr = CLI(root)
    for s in steps:
        narr("event", _sentence(s))
    pov = _id(who)
    outputs = [narr("brief", "--pov", pov, "--budget", "100000").stdout,
               narr("brief", "--pov", pov, "--budget", "100000", "--format", "md").stdout,
               narr("brief", "--pov", pov, "--budget", "100000", "--json").stdout]
    outputs[2] = json.dumps(json.loads(outputs[2]), ensure_ascii=False)
    for text in forbidden(narr, pov):
        for out in outputs:
            assert text.casefold() not in out.casefold(), (text, out)


@pytest.fixture
def town(tmp_path: Path) -> CLI:
    root = tmp_path / "w"
    CLI(tmp_path)("init", str(root), "--rules", "en")
    narr = CLI(root)
    for name in PEOPLE:
        narr("new", "character", name)
    for name in PLACES[:2]:
        narr("new", "background", name, "--kind", "place")
    narr("new", "background", "the Mayor's affair", "--kind", "secret",
         "--summary", "Hale meets the widow Rowe at night")
    narr("event", "Mayor Hale walks to the town hall.", "--relate", "Mayor Hale:knows:the Mayor's affair")
    narr("event", "Tom Reed walks to the town hall.")
    narr("event", "Ada Lane walks to the saloon.")
    return narr


def test_a_secret_learned_off_screen(town: CLI) -> None:
    narr = town
    narr("event", "Ada Lane learns the Mayor's affair.")  # at the saloon: Tom is at the town hall
    narr("event", "Ada Lane walks to the town hall.")
    head = narr.json("log", "-n", "1")["items"][0]["commit"][:10]
    assert narr("brief", "--pov", "Tom Reed").stdout.splitlines() == [
        f"Story at {head} Ada Lane walks to the town hall.; point of view: tom-reed",
        "",
        "focus:",
        "  Ada Lane (ada-lane, character). state: location=town-hall.",
        "    (changed by the recent event 'Ada Lane walks to the town hall.')",
        "  Tom Reed (tom-reed, character). state: location=town-hall.",
        "    (the point of view)",
        "  Mayor Hale (mayor-hale, character). state: location=town-hall.",
        "    (at town hall, where tom-reed is)",
        "",
        "events:",
        "  Ada Lane walks to the town hall.",
        "    (one of the last events tom-reed knows of)",
        "  Tom Reed walks to the town hall.",
        "    (one of the last events tom-reed knows of)",
        "",
        "continuity:",
        "  Ada Lane is at town hall",
        "    (continuity: where everyone is)",
        "  Tom Reed is at town hall",
        "    (continuity: where everyone is)",
        "  Mayor Hale is at town hall",
        "    (continuity: where everyone is)",
        "",
        "neighbourhood:",
        "  town hall (town-hall, background/place).",
        "    (1 relation from the focus, changed 4 events ago)",
        "",
        "356 of 4000 characters",
    ]
    # the mayor knows his secret, but not that Ada learned it where he was not
    mayor = narr.json("brief", "--pov", "Mayor Hale", "--budget", "100000")
    facts = [i["text"] for i in mayor["items"] if i["section"] == "continuity"]
    assert "Mayor Hale knows the Mayor's affair" in facts
    assert not any("Ada Lane knows" in f for f in facts)
    assert "Ada Lane learns the Mayor's affair." not in json.dumps(mayor)
    # the writer's own brief has it all
    assert "Ada Lane knows the Mayor's affair" in narr("brief", "--focus", "Ada Lane").stdout


def test_a_secret_learned_on_screen(town: CLI) -> None:
    narr = town
    narr("event", "Ada Lane walks to the town hall.")
    narr("event", "Ada Lane learns the Mayor's affair.")  # Tom stands beside her
    log = narr.json("log", "-n", "2")["items"]
    learnt, walked = log[0]["commit"][:10], log[1]["commit"][:10]
    tom = narr("brief", "--pov", "Tom Reed", "--format", "md").stdout
    assert tom.splitlines()[:2] == [
        "# Brief: where the story stands", "",
    ]
    assert tom.splitlines()[2] == (
        f"Story at {learnt} (words withheld); point of view: tom-reed; focus: ada-lane, "
        "tom-reed, mayor-hale.")
    events = [line for line in tom.splitlines() if line.startswith("- ") and "knows of" in line]
    assert events == [
        f"- {learnt} (words withheld): nothing tom-reed could see changed *(one of the last events "
        "tom-reed knows of: its words would tell tom-reed what tom-reed does not know)*",
        "- Ada Lane walks to the town hall. *(one of the last events tom-reed knows of)*",
        "- Tom Reed walks to the town hall. *(one of the last events tom-reed knows of)*",
    ]
    assert "affair" not in tom.casefold() and "rowe" not in tom.casefold()
    # the mayor saw her learn it: he knows she knows
    mayor = narr.json("brief", "--pov", "Mayor Hale", "--budget", "100000")
    assert "Ada Lane knows the Mayor's affair" in [i["text"] for i in mayor["items"]]
    # then Ada tells Tom: now he knows the secret, and that she knows it
    narr("event", "Ada Lane tells Tom Reed the Mayor's affair.")
    told = narr.json("brief", "--pov", "Tom Reed", "--budget", "100000")
    facts = [i["text"] for i in told["items"] if i["section"] == "continuity"]
    assert {"Tom Reed knows the Mayor's affair", "Ada Lane knows the Mayor's affair"} <= set(facts)
    assert not any(f.startswith("Mayor Hale knows") for f in facts)  # he never saw the mayor learn it
    assert told["head"]["content"] == "Ada Lane tells Tom Reed the Mayor's affair."
    assert f"{walked} " not in json.dumps(told)  # no event is given by its commit alone now
