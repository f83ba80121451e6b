#!/usr/bin/env python
"""An agent's calls through ``narr mcp``: per-call time of reads and events over stdio.

    python benchmarks/agents.py WORLD [--calls 200]     # prints the figures as JSON

``run.py`` calls :func:`measure` in its ``agents`` section on the 10k-node worlds. One
``narr mcp`` process is started with the ``mcp`` SDK's own stdio client, as an agent host
starts it; then ``calls`` reads in a row (get_node, why, search, brief, status in turn) and
``calls`` events in a row (each sets one field, no diffuser), each timed from the request to
its answer. The process start and the handshake are timed apart. Needs the ``mcp`` package.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

READ_LIMIT_S = 0.030
EVENT_LIMIT_S = 0.100


def unavailable() -> str | None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        return "the mcp package is not installed (pip install 'narr[mcp]')"
    return None


def _ids(root: Path, layer: str, n: int) -> list[str]:
    found = sorted(p.stem for p in (root / "world" / layer).rglob("*.json"))
    return found[:n]


def measure(root: Path, calls: int = 200) -> dict[str, Any]:
    """``calls`` reads and ``calls`` events through ``narr mcp`` on the world at ``root``."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    people = _ids(root, "character", 20)
    reads: list[tuple[str, dict[str, Any]]] = []
    for i in range(calls):
        who = people[i % len(people)]
        reads.append([("get_node", {"node": who}),
                      ("why", {"node": who, "field": "state.location"}),
                      ("search", {"q": "sister", "limit": 5}),
                      ("brief", {"focus": [who], "budget": 1500}),
                      ("status", {})][i % 5])
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "narrative", "-C", str(root), "mcp"],
                                   env=dict(os.environ), cwd=str(root))
    out: dict[str, Any] = {}

    async def session() -> None:
        t0 = time.perf_counter()
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as client:
                await client.initialize()
                out["start_s"] = time.perf_counter() - t0
                by_tool: dict[str, list[float]] = {}
                read_times: list[float] = []
                for name, args in reads:
                    t = time.perf_counter()
                    result = await client.call_tool(name, args)
                    took = time.perf_counter() - t
                    if result.is_error:
                        raise RuntimeError(f"{name} failed: {result.content}")
                    read_times.append(took)
                    by_tool.setdefault(name, []).append(took)
                event_times: list[float] = []
                for i in range(calls):
                    who = people[i % len(people)]
                    t = time.perf_counter()
                    result = await client.call_tool("event", {
                        "content": f"{who} pauses ({i})", "diffuser": "none",
                        "ops": [{"op": "set", "target": who, "field": "/state/mood", "value": f"m{i}"}]})
                    event_times.append(time.perf_counter() - t)
                    if result.is_error:
                        raise RuntimeError(f"event failed: {result.content}")
        out["read_median_s"] = statistics.median(read_times)
        out["read_p90_s"] = statistics.quantiles(read_times, n=10)[-1]
        out["event_median_s"] = statistics.median(event_times)
        out["event_p90_s"] = statistics.quantiles(event_times, n=10)[-1]
        out["by_tool_median_s"] = {k: statistics.median(v) for k, v in sorted(by_tool.items())}

    anyio.run(session)
    out["calls"] = calls
    out["load_1m"] = round(os.getloadavg()[0], 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("world", type=Path)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    why = unavailable()
    if why:
        parser.error(why)
    print(json.dumps(measure(args.world.resolve(), args.calls), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
