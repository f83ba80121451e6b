"""What ``narr brief --focus X`` keeps in view: X's traits before its state, and every dead
character that matters to the scene, not only those near X in the graph."""

from __future__ import annotations

from pathlib import Path

from helpers import CLI


def test_the_focus_shows_its_traits_before_its_state(flat_world: Path) -> None:
    narr = CLI(flat_world)
    b = narr.json("brief", "--focus", "lin-yuan")
    line = next(i["text"] for i in b["items"] if i["section"] == "focus")
    assert line.startswith("Lin Yuan (lin-yuan, character/person): Outer disciple of the Qingyun "
                           "Sect, searching for his missing sister. traits: hand=left-handed, ")
    assert "speech=short sentences, never exclaims" in line
    assert line.index("traits: ") < line.index("state: ") < line.index("relations: ")
    small = narr.json("brief", "--focus", "lin-yuan", "--budget", str(len(line)))
    assert [i["text"] for i in small["items"]] == [line]  # within the budget, first of all


def test_who_is_dead_lists_the_dead_the_focus_relates_to_or_the_story_just_named(
        tmp_path: Path) -> None:
    root = tmp_path / "w"
    CLI(tmp_path)("init", str(root), "--rules", "en")
    narr = CLI(root)
    for name in ("Ada Lane", "Tom Reed", "Mayor Hale", "Old Rowe", "Sam Pike"):
        narr("new", "character", name)
    narr("new", "background", "saloon", "--kind", "place")
    narr("new", "background", "old mill", "--kind", "place")
    narr("event", "Old Rowe dies.")
    narr("event", "Sam Pike dies.")
    narr("event", "Tom Reed and Mayor Hale walk to the old mill.", "--set",
         "tom-reed.state.location=old-mill", "--set", "mayor-hale.state.location=old-mill")
    narr("event", "Tom Reed attacks Mayor Hale.")  # enemies: related to Ada only through him
    narr("event", "Mayor Hale dies.")  # Tom stands over him
    narr("event", "Ada Lane suspects Sam Pike.")  # Ada relates to Sam
    for text in ("Ada Lane walks to the saloon.", "Tom Reed walks to the saloon.",
                 "Old Rowe's ghost is mentioned.", "The rain starts."):
        narr("event", text)
    b = narr.json("brief", "--focus", "Ada Lane", "--budget", "100000")
    dead = [i["text"] for i in b["items"] if i["reason"] == "continuity: who is dead"]
    # Sam: Ada suspects him; Old Rowe: the last events name him, though nothing ties him to
    # Ada; Mayor Hale is three steps away and his death six events back
    assert dead == ["Sam Pike is dead", "Old Rowe is dead"]
    # a point of view only sees the dead it can know of
    tom = narr.json("brief", "--pov", "Tom Reed", "--budget", "100000")
    assert [i["text"] for i in tom["items"] if i["reason"] == "continuity: who is dead"] == [
        "Mayor Hale is dead"]
    ada = narr.json("brief", "--pov", "Ada Lane", "--budget", "100000")  # she saw nobody die
    assert [i["text"] for i in ada["items"] if i["reason"] == "continuity: who is dead"] == []
