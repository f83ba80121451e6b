"""An agent's loop over a narr world, using only the public names of ``narrative``.

It reads the brief, records four events (spelt-out ops and the story's conventions from
``narr.ops``), reads the past, asks why, resets and replays, and handles the errors it can cause.
The test suite runs it on the sample world and type-checks it with ``mypy --strict``.

    python examples/agent.py PATH-TO-WORLD
"""

from __future__ import annotations

import sys

import narrative as narr


def play(path: str) -> list[str]:
    """Run the loop on the world at ``path``; what it saw, one line a step."""
    seen: list[str] = []
    with narr.open_world(path, lock_timeout=5.0) as world:
        pack: narr.Brief = narr.brief(world, "the ferry at dusk", focus=["lin-yuan"], budget=1500)
        seen.append(f"brief: {len(pack.items)} items, {pack.used} characters")

        steps: list[tuple[str, list[narr.Op]]] = [
            ("Lin Yuan walks to the ferry", narr.ops.move("lin-yuan", "ferry")),
            ("Lin Yuan hands Su Qing the black ring",
             narr.ops.give("black-ring", "lin-yuan", "su-qing")),
            ("Su Qing learns where the ring came from", narr.ops.learn("su-qing", "ring-origin")),
            ("Dusk settles on the river",
             [narr.SetOp(target="lin-yuan", field="state.mood", value="wary")]),
        ]
        first: narr.EventResult | None = None
        for content, ops in steps:
            result: narr.EventResult = narr.event(world, content, *ops)
            first = first or result
            changed = ", ".join(f"{c.target} {c.field}" for c in result.record.diffusions)
            seen.append(f"event {result.record.content!r}: {changed}")

        assert first is not None and first.commit is not None
        before = narr.get_value(world, "lin-yuan", "state.location", at=first.commit + "~1")
        seen.append(f"before the walk Lin Yuan was at {before}")
        reason: narr.WhyResult = narr.why(world, "black-ring", "state.holder")
        told = reason.event.content if reason.event is not None else reason.source
        seen.append(f"the ring is with {reason.value} since {told!r}")

        undone: narr.ResetResult = narr.reset(world, "HEAD~2")
        seen.append(f"reset: {len(undone.undone)} events undone")
        chains: narr.Chains = narr.list_chains(world)
        replayed: narr.ReplayResult = narr.replay(world, chains[0], reuse=True)
        seen.append(f"replayed chain {chains[0].number}: {len(replayed.to_json()['events'])} events")

        for mistake in (lambda: narr.SetOp(target="lin-yuan", value=1),  # type: ignore[call-arg]
                        lambda: narr.get_node(world, "nobody"),
                        lambda: narr.reset(world, "HEAD~99")):
            try:
                mistake()
            except narr.NarrError as exc:
                seen.append(f"refused ({type(exc).__name__}, exit {exc.exit_code}): {exc.message}")
    return seen


if __name__ == "__main__":
    for line in play(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(line)
