"""Histories made through the library: events of every kind, as a story produces them.

Most events change a few state fields; some relate or unrelate nodes, create
nodes (permanent, scene or event lifecycle), expire nodes, close a scene (so
scene nodes go), or absorb a hand edit of a node file. The mix is seeded, and a
history can be extended: the generator reads what it needs from the world itself.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

STATE_FIELDS = {
    "character": [("mood", ["calm", "anxious", "angry", "hopeful", "wary", "tired"]),
                  ("health", ["unhurt", "wounded", "recovering"]), ("location", None)],
    "item": [("condition", ["intact", "cracked", "glowing", "dull"]), ("holder", None)],
    "ambient": [("intensity", ["faint", "steady", "heavy"])],
    "background": [("status", ["stable", "contested", "forgotten", "rising"])],
}
CONTENT = ["{a} follows the rain to {b}", "{a} hides the letter from {b}", "{a} and {b} argue at the ferry",
           "{a} wakes before dawn", "{a} trades a secret with {b}", "{a} learns what {b} is hiding",
           "林远在渡口等{a}", "{a}把玉令交给了{b}", "A bell rings over {b}", "{a} is wounded near {b}"]


class HistoryMaker:
    def __init__(self, root: Path, seed: int, start: int) -> None:
        from narrative.store.worldrepo import WorldRepo

        self.root = root
        self.rng = random.Random(f"{seed}-{start}")
        self.n = start
        self.wr = WorldRepo.open(root)
        cache = self.wr.catalog
        head = self.wr.head_commit()
        assert head is not None
        cache.sync(self.wr.repo, self.wr.world_tree_id(head.tree), self.wr.config.layout)
        transient = cache.transient()
        self.layer: dict[str, str] = {}
        self.live: list[str] = []
        for node_id, layer in cache.ids():
            self.layer[node_id] = layer
            if node_id not in transient:
                self.live.append(node_id)
        self.places = [i for i in self.live if self.layer[i] == "background"]
        self.characters = [i for i in self.live if self.layer[i] == "character"]
        self.made: list[str] = []  # permanent nodes this history created (candidates for expiry)

    def close(self) -> None:
        self.wr.close()

    def _value(self, node_id: str, key: str, choices: list[str] | None) -> Any:
        if choices is None:
            pool = self.places if key == "location" else self.characters
            return self.rng.choice(pool)
        return self.rng.choice(choices) + ("" if self.rng.random() < 0.7 else f" ({self.n})")

    def _set(self, node_id: str) -> Any:
        from narrative.model import SetOp

        key, choices = self.rng.choice(STATE_FIELDS[self.layer[node_id]])
        value = self._value(node_id, key, choices)
        return SetOp(target=node_id, field=f"/state/{key}", value=value)

    def _hand_edit(self) -> None:
        from narrative.ids import node_path
        from narrative.nodefile import dump

        node_id = self.rng.choice(self.live)
        path = self.root / node_path(node_id, self.layer[node_id], self.wr.config.layout)  # type: ignore[arg-type]
        node = json.loads(path.read_bytes())
        node["state"]["note"] = f"edited by hand before event {self.n}"
        path.write_bytes(dump(node))

    def step(self) -> None:
        from narrative.delta.request import EventRequest
        from narrative.engine.event import run_event
        from narrative.model import CreateOp, Delta, ExpireOp, Node, RelateOp, UnrelateOp

        rng = self.rng
        self.n += 1
        targets = rng.sample(self.live, 3)
        ops: list[Any] = [self._set(t) for t in targets[: rng.choice((1, 2, 3, 3, 3))]]
        close_scene = False
        roll = rng.random()
        if roll < 0.10:
            rtype = rng.choice(["knows", "distrusts", "owes"])
            ops.append(RelateOp(source=targets[0], type=rtype, target=targets[1],
                                attrs={"since": f"event {self.n}"}))
        elif roll < 0.15:
            node = self.wr.catalog.db.execute(
                "SELECT src, type, dst FROM edges WHERE src=? LIMIT 1", (targets[0],)).fetchone()
            if node is not None:
                ops.append(UnrelateOp(source=node[0], type=node[1], target=node[2]))
        elif roll < 0.22:
            lifecycle = rng.choice(["permanent", "permanent", "scene", "event"])
            layer = rng.choice(["character", "item", "ambient", "background"])
            new_id = f"made-{self.n}-{layer}"
            kind = "person" if layer == "character" else "thing"
            node = Node(id=new_id, name=f"Stranger {self.n}", layer=layer, kind=kind,
                        aliases=[f"陌生人{self.n}", f"the stranger of event {self.n}"],
                        summary="Someone, or something, nobody expected.", lifecycle=lifecycle,
                        state={"status": "new"}, relations={"near": {rng.choice(self.places): {}}})
            ops.append(CreateOp(node=node))
            self.layer[new_id] = layer
            if lifecycle == "permanent":
                self.made.append(new_id)
        elif roll < 0.25 and self.made:
            victim = self.made.pop(rng.randrange(len(self.made)))
            if victim in self.live:
                self.live.remove(victim)
            ops = [op for op in ops if getattr(op, "target", None) != victim]
            ops.append(ExpireOp(target=victim))
        elif roll < 0.29:
            close_scene = True
        elif roll < 0.32:
            self._hand_edit()
        a, b = targets[0], targets[1]
        content = rng.choice(CONTENT).format(a=a, b=b)
        run_event(self.wr, EventRequest(content=content, delta=Delta(ops=ops), close_scene=close_scene,
                                        timestamp=f"Day {1 + self.n // 40}"))
        # Created permanent nodes become ordinary targets once recorded.
        for op in ops:
            if isinstance(op, CreateOp) and op.node.lifecycle == "permanent":
                self.live.append(op.node.id)


def extend_history(root: Path, events: int, *, seed: int = 11, start: int = 0,
                   progress: Any = None) -> dict[str, Any]:
    """Add ``events`` events to the world at ``root``; returns timing facts."""
    maker = HistoryMaker(root, seed, start)
    t0 = time.perf_counter()
    try:
        for i in range(events):
            maker.step()
            if progress is not None and (i + 1) % 200 == 0:
                progress(i + 1, events, time.perf_counter() - t0)
    finally:
        maker.close()
    elapsed = time.perf_counter() - t0
    return {"events": events, "seconds": elapsed, "events_per_s": events / elapsed if elapsed else 0.0}
