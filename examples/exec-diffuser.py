#!/usr/bin/env python3
"""An example diffuser for narr's ``exec`` protocol: movement sentences become location changes.

narr writes one JSON request on stdin (schemas/exec-request.schema.json); this
program prints one JSON answer on stdout (schemas/exec-response.schema.json). It
understands plain movement sentences in English and Chinese:

    Lin Yuan walks to the ferry            林远来到渡口
    Lin Yuan and Su Qing return to the gate   苏晴和林远回到山门

The characters named just before a movement verb move to the place named just
after it: their ``state.location`` becomes the place's id. Names come from the
request's ``mentions`` (narr has already matched the world's names and aliases),
so the program knows nothing about any particular world. Standard library only,
no network, no part of narr imported.

Use it:

    export NARR_EXEC_COMMAND="python3 /path/to/exec-diffuser.py"
    narr event --diffuser exec "Lin Yuan walks to the ferry"
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

PLACE_KINDS = {"place", "location", "room", "building", "town", "city", "region", "area"}

_EN_VERB = (
    r"walks?|walked|goes|go|went|runs?|ran|heads?|headed|hurries|hurried|returns?|returned|"
    r"comes?|came|travels?|travell?ed|rides?|rode|sails?|sailed|climbs?|climbed|wanders?|"
    r"wandered|moves?|moved|rushes|rushed|flees|fled|slips?|slipped|arrives?|arrived|"
    r"reaches|reached|enters?|entered|gets?|got"
)
# What may stand between the last mover and the place: "walks to the", "slowly returns to".
EN_GAP = re.compile(
    rf"^\s+(?:\w+ly\s+)?(?:{_EN_VERB})(?:\s+\w+ly)?(?:\s+(?:back|up|down|over|out|off|away|home))?"
    r"(?:\s+(?:to|into|towards?|at|in|onto|inside|for))?(?:\s+the)?\s+$",
    re.IGNORECASE,
)
ZH_GAP = re.compile(
    r"^\s*(?:悄悄|慢慢|匆匆|独自|一路|连夜|急忙|终于|又|也)?地?"
    r"(?:来到|走到|走进|走向|跑到|跑进|赶到|赶往|回到|返回|到了|到达|抵达|前往|去往|去了|进入|来了|去|到)了?$"
)
# Between two movers: "Lin Yuan and Su Qing", "林远和苏晴".
CONJ = re.compile(r"^\s*(?:,|&|and|,\s*and|和|与|跟|同|、|，)\s*$", re.IGNORECASE)


def pick(mention: dict[str, Any], nodes: dict[str, Any], want: str) -> str | None:
    """The id a mention names, if it is a character (want="character") or a place."""
    for node_id in mention["ids"]:
        node = nodes.get(node_id)
        if node is None:
            continue
        if want == "character" and node["layer"] == "character":
            return str(node_id)
        if want == "place" and node.get("kind", "").lower() in PLACE_KINDS:
            return str(node_id)
    return None


def movers_before(k: int, mentions: list[dict[str, Any]], text: str,
                  nodes: dict[str, Any]) -> list[str]:
    """Characters named right before mention ``k`` with a movement verb between, joined by 'and'."""
    if k == 0:
        return []
    prev = mentions[k - 1]
    gap = text[prev["end"]:mentions[k]["start"]]
    who = pick(prev, nodes, "character")
    if who is None or not (EN_GAP.match(gap) or ZH_GAP.match(gap)):
        return []
    movers = [who]
    j = k - 1
    while j > 0:
        before = mentions[j - 1]
        other = pick(before, nodes, "character")
        if other is None or not CONJ.match(text[before["end"]:mentions[j]["start"]]):
            break
        movers.insert(0, other)
        j -= 1
    return movers


def propose(request: dict[str, Any]) -> dict[str, Any]:
    text, nodes, mentions = request["content"], request["nodes"], request["mentions"]
    moves: dict[str, str] = {}
    notes = []
    for k, mention in enumerate(mentions):
        place = pick(mention, nodes, "place")
        if place is None:
            continue
        for who in movers_before(k, mentions, text, nodes):
            moves[who] = place
    ops = []
    for who, place in moves.items():
        if nodes[who].get("state", {}).get("location") == place:
            notes.append(f"{who} is already at {place}")
            continue
        ops.append({"op": "set", "target": who, "field": "/state/location", "value": place})
        notes.append(f"{who} moves to {place}")
    if not moves:
        notes.append("no movement found in the event")
    return {"delta": {"ops": ops}, "notes": notes}


def main() -> int:
    try:
        request = json.load(sys.stdin)
    except ValueError as exc:
        print(f"exec-diffuser: the request on stdin is not JSON: {exc}", file=sys.stderr)
        return 2
    if request.get("protocol") != 1:
        print(f"exec-diffuser: unknown protocol version {request.get('protocol')!r}", file=sys.stderr)
        return 2
    json.dump(propose(request), sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
