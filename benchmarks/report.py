"""Results as JSON and Markdown, and the comparison with the targets of the benchmark issue."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from timing import fmt_s

LIGHT_READ_LIMIT_S = 0.25
QUERY_LIMIT_S = 1.0
STARTUP_LIMIT_S = 0.150
RATIO_LIMIT = 1.5
GROWTH_LIMIT = 2.0
STUDIO_OPEN_LIMIT_S = 3.0
AGENT_READ_LIMIT_S = 0.030
AGENT_EVENT_LIMIT_S = 0.100
IMPORT_LIMIT_S = 10.0
LOREBOOK_LIMIT_S = 3.0  # narr import and narr export lorebook of 2,000 entries
AUDIT_LIMIT_S = 2.0
# narr as installed (its server on, nothing set): the targets of the fast-by-default work,
# as ratios to plain git or as times. Cold figures (NARR_NO_SERVER=1) are shown beside them.
AUTO_RATIOS = {"narr event": 0.8, "narr status": 0.8, "narr reset": 1.0}
AUTO_READ_LIMIT_S = 0.030  # log -n 20, get, show
AUTO_CHECK_LIMIT_S = 0.5  # narr check after one new event on a 10k-event history
FLOOR_RATIO = 1.5  # the first command after an idle exit, against python -c "import click, ..."
LIBRARY_KEPT_OPEN_LIMIT_S = 0.040  # run_event at 10k nodes, the world kept open (watch=True)
SERVER_MEMORY_LIMITS_MB = ((100_000, 400), (10_000, 150))  # MB resident, from that many nodes
MIB_MB = 1.048576


def _t(target: str, where: str, measured: str, limit: str, met: bool, *,
       scale_note: str = "") -> dict[str, Any]:
    out = {"target": target, "where": where, "measured": measured, "limit": limit, "met": met}
    if scale_note:
        out["note"] = scale_note
    return out


def _vs(c: dict[str, Any]) -> str:
    return f"x{c['ratio']:.2f} ({fmt_s(c['narr']['median_s'])} vs {fmt_s(c['git']['median_s'])})"


def targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    comps = res.get("comparisons", [])
    out: list[dict[str, Any]] = []
    big = max((c.get("nodes", 0) for c in comps if c.get("layout") == "sharded"), default=0)
    below = "" if big >= 100_000 else "the target is set at 100k nodes"
    for c in comps:
        nodes = c.get("nodes", 0)
        if c["op"].startswith(("narr event", "narr reset")) and nodes >= 10_000:
            word = "event" if "event" in c["op"] else "reset HEAD~3"
            out.append(_t(f"narr {word} within {RATIO_LIMIT}x of git (aim 1.0x)", c["world"],
                          _vs(c), f"<= {RATIO_LIMIT}x", c["ratio"] <= RATIO_LIMIT))
    if not any("narr reset" in c["op"] for c in comps):
        out.append(_t("narr reset HEAD~3 within 1.5x of git", "-", "not measured: no `narr reset` yet",
                      f"<= {RATIO_LIMIT}x", False))
    out += _auto_targets(res)
    for c in comps:
        if c.get("light_read") and not c.get("auto"):
            ev = c.get("events", 0)
            out.append(_t(f"`{c['op']}` under 0.25 s", c["world"],
                          f"{fmt_s(c['narr']['median_s'])} (git {fmt_s(c['git']['median_s'])}, "
                          f"x{c['ratio']:.1f})",
                          "< 250 ms", c["narr"]["median_s"] < LIGHT_READ_LIMIT_S,
                          scale_note="" if ev >= 10_000 else "the target is set on a 10k-event history"))
    for c in comps:
        if c.get("query"):
            ev = c.get("events", 0)
            out.append(_t(f"`{c['op']}` under 1 s", c["world"], fmt_s(c["narr"]["median_s"]),
                          "< 1 s", c["narr"]["median_s"] < QUERY_LIMIT_S,
                          scale_note="" if ev >= 10_000 else "the target is set on a 10k-event history"))
    for c in comps:
        if (c["op"].startswith("narr status") and c.get("layout") == "sharded" and c.get("nodes") == big
                and "events" not in c):
            out.append(_t(f"{c['op']} within {RATIO_LIMIT}x of git status", c["world"],
                          _vs(c), f"<= {RATIO_LIMIT}x", c["ratio"] <= RATIO_LIMIT, scale_note=below))
    eng = {(e["layout"], e["nodes"]): e for e in res.get("engine", [])}
    sharded = sorted(n for (lay, n) in eng if lay == "sharded")
    if len(sharded) >= 2:
        lo, hi = eng[("sharded", sharded[0])], eng[("sharded", sharded[-1])]
        for key, how in (("events_per_s", "one event at a time"), ("batch_events_per_s", "inside batch()")):
            if key not in lo or key not in hi:
                continue
            share = hi[key] / lo[key]
            out.append(_t(f"in-process events/s at the largest world >= half the 1k figure (sharded, {how})",
                          f"{sharded[-1]} vs {sharded[0]} nodes",
                          f"{hi[key]} vs {lo[key]} events/s ({share:.0%})",
                          ">= 50%", share >= 0.5, scale_note=below))
    g = res.get("growth")
    if g and g.get("ratio") is not None:
        out.append(_t("repository growth per event within 2x of the changed node files, compressed",
                      f"{g['events']} events, {g['nodes']} nodes, {g['layout']}",
                      f"{g['bytes_per_event']:.0f} vs {g['changed_node_files_compressed_per_event']:.0f} "
                      f"bytes (x{g['ratio']:.2f})", f"<= {GROWTH_LIMIT}x", g["ratio"] <= GROWTH_LIMIT))
    for im in res.get("imports", []):
        if im["notes"] >= 2_000:
            out.append(_t(f"narr import of {im['notes']} notes into an empty world in a few seconds",
                          f"{im['notes']} Markdown notes", f"{fmt_s(im['first_s'])} (arbiter "
                          f"{fmt_s(im['first_arbiter_s'])})", f"< {IMPORT_LIMIT_S:.0f} s",
                          im["first_s"] < IMPORT_LIMIT_S))
    for lb in res.get("lorebooks", []):
        if lb["entries"] >= 2_000:
            worst = max(lb["first_s"], lb["export_s"])
            out.append(_t(f"narr import and narr export lorebook of {lb['entries']:,} entries under 3 s each",
                          f"a World Info book of {lb['entries']:,} entries",
                          f"import {fmt_s(lb['first_s'])}, export {fmt_s(lb['export_s'])}", "< 3 s",
                          worst < LOREBOOK_LIMIT_S))
    for au in res.get("audit", []):
        out.append(_t(f"narr audit of a {au['sentences']}-sentence chapter under 2 s (warm catalog)",
                      au["world"], f"{fmt_s(au['median_s'])} median, {fmt_s(au['max_s'])} worst",
                      f"< {AUDIT_LIMIT_S:.0f} s", au["median_s"] < AUDIT_LIMIT_S))
    for ag in res.get("agents", []):
        note = "" if ag["nodes"] >= 10_000 else "the targets are set on a 10k-node world"
        out.append(_t(f"{ag['calls']} MCP reads in a row: median under 30 ms", ag["world"],
                      f"{fmt_s(ag['read_median_s'])} (p90 {fmt_s(ag['read_p90_s'])})", "< 30 ms",
                      ag["read_median_s"] < AGENT_READ_LIMIT_S, scale_note=note))
        out.append(_t(f"{ag['calls']} MCP events in a row: median under 100 ms", ag["world"],
                      f"{fmt_s(ag['event_median_s'])} (p90 {fmt_s(ag['event_p90_s'])})", "< 100 ms",
                      ag["event_median_s"] < AGENT_EVENT_LIMIT_S, scale_note=note))
    for st in res.get("studio", []):
        if st["nodes"] >= 10_000:
            out.append(_t("the studio opens a 10k-node world in under 3 s (headless chromium)", st["world"],
                          f"{fmt_s(st['open_median_s'])} median, {fmt_s(st['open_max_s'])} worst "
                          f"(first, fresh server: {fmt_s(st['open_first_s'])})", "< 3 s",
                          st["open_max_s"] < STUDIO_OPEN_LIMIT_S))
    for c in comps:
        if c["op"] == "narr --version":
            out.append(_t("narr --version under 150 ms", "start-up", fmt_s(c["narr"]["median_s"]), "< 150 ms",
                          c["narr"]["median_s"] < STARTUP_LIMIT_S))
    return out


def _auto_targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``auto`` section's rows against their targets (narr as installed)."""
    out: list[dict[str, Any]] = []
    for c in res.get("comparisons", []):
        if not c.get("auto"):
            continue
        op = c["op"].removeprefix("auto: ")
        small = ("the target is set at 10k nodes and more"
                 if c.get("nodes", 0) < 10_000 and "check" not in op else "")
        if c.get("floor"):
            git_status = next((o["median_s"] for o in c.get("others", [])
                               if o["label"] == "git status"), None)
            floor_s = c["git"]["median_s"]
            beside = (f"; `git status` x{git_status / floor_s:.2f} ({fmt_s(git_status)})"
                      if git_status and floor_s else "")
            out.append(_t(f"`{op}` within {FLOOR_RATIO}x of the floor "
                          f"(`{c['git_op']}`)", c["world"], _vs(c) + beside, f"<= {FLOOR_RATIO}x",
                          c["ratio"] <= FLOOR_RATIO))
            continue
        limit = next((v for k, v in AUTO_RATIOS.items() if op.startswith(k)), None)
        if limit is not None:
            out.append(_t(f"`{op}` within {limit}x of git", c["world"], _vs(c), f"<= {limit}x",
                          c["ratio"] <= limit, scale_note=small))
            continue
        time_limit = AUTO_CHECK_LIMIT_S if "check" in op else AUTO_READ_LIMIT_S
        note = ("the target is set on a 10k-event history"
                if "check" in op and c.get("events", 0) < 10_000 else small)
        out.append(_t(f"`{op}` under {fmt_s(time_limit)}", c["world"],
                      fmt_s(c["narr"]["median_s"]), f"< {fmt_s(time_limit)}",
                      c["narr"]["median_s"] < time_limit, scale_note=note))
    for lib in res.get("library_kept_open", []):
        if lib["nodes"] >= 10_000:
            out.append(_t("library `run_event`, the world kept open (`watch=True`), under "
                          f"{fmt_s(LIBRARY_KEPT_OPEN_LIMIT_S)}", lib["world"],
                          f"{lib['median_ms']:.1f} ms median (p90 {lib['p90_ms']:.1f} ms)",
                          f"< {fmt_s(LIBRARY_KEPT_OPEN_LIMIT_S)}",
                          lib["median_ms"] / 1000 < LIBRARY_KEPT_OPEN_LIMIT_S))
    for mem in res.get("server_memory", []):
        limit = next((mb for nodes, mb in SERVER_MEMORY_LIMITS_MB if mem.get("nodes", 0) >= nodes),
                     None)
        if limit is not None and mem.get("resident_mib") is not None:
            out.append(_t(f"the server's resident memory under {limit} MB",
                          mem["world"], f"{mem['resident_mib'] * MIB_MB:.0f} MB after "
                          f"{mem['requests']} requests", f"< {limit} MB",
                          mem["resident_mib"] * MIB_MB < limit))
    return out


def _source(m: dict[str, Any]) -> str:
    if m.get("narr_source_is_this_repo", True):
        return ""
    return f"; the code measured was imported from `{m.get('narr_source')}`"


def _load(res: dict[str, Any]) -> str:
    loads = [c["load_1m"] for c in res.get("comparisons", []) if "load_1m" in c]
    return f"{min(loads):.2f} to {max(loads):.2f}" if loads else "-"


def _mib(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f} MiB"


AGENT_TOOLS = ("get_node", "why", "search", "brief", "status")


def _table(items: list[dict[str, Any]], title: str, intro: str, header: list[str],
           row: Callable[[dict[str, Any]], list[str]], *, left: int = 1) -> list[str]:
    """A section of results: its title, what was measured, a row per item (the ``left`` first
    columns read as words, the rest as figures); nothing when nothing was measured."""
    if not items:
        return []
    align = ["---"] * left + ["---:"] * (len(header) - left)
    return ["", f"## {title}", "", intro, "", "| " + " | ".join(header) + " |",
            "| " + " ".join(f"{a} |" for a in align),
            *("| " + " | ".join(row(item)) + " |" for item in items)]


def markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "# narr benchmarks: latest results",
        "",
        f"Profile `{res['profile']}`, run {res['started_at']} in {res['duration_s']:.0f} s. Reproduce with:",
        "",
        "```",
        res["command"],
        "```",
        "",
        "## Machine",
        "",
        "| | |",
        "| --- | --- |",
        f"| CPU | {m['cpu']} ({m['cores']} cores) |",
        f"| memory | {m['memory_gib']} GiB |",
        f"| OS | {m['os']} |",
        f"| Python | {m['python']} ({m['python_impl']}) |",
        f"| pygit2 / libgit2 | {m['pygit2']} / {m['libgit2']} |",
        f"| git | {m['git']} |",
        f"| narr | {m['narr']} at {m['narr_commit']}{_source(m)} |",
        f"| load average (1 min) at each comparison | {_load(res)} |",
        "",
        "## narr against plain git",
        "",
        f"Each command is a fresh process; medians of {res['rounds']} rounds ({res['read_rounds']} for "
        f"reads and status, {res.get('startup_rounds', res['read_rounds'] * 2)} for start-up), the two "
        "sides alternating, after a warm-up round. The git side of an event writes the same three node "
        "files, then runs `git add -A` and `git commit`.",
        "",
        "| operation | plain git | world | narr | git | narr/git |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for c in res.get("comparisons", []):
        lines.append(f"| `{c['op']}` | `{c['git_op']}` | {c['world']} | {fmt_s(c['narr']['median_s'])} | "
                     f"{fmt_s(c['git']['median_s'])} | {c['ratio']:.2f} |")
        for o in c.get("others", []):
            if "with a server" in o["label"] or o["label"].endswith((", auto-served", ", cold")):
                # narr again: through the thin client, or with no server at all
                git_s = c["git"]["median_s"]
                ratio = f"{o['median_s'] / git_s:.2f}" if git_s else ""
                lines.append(f"| `{o['label']}` | | | {fmt_s(o['median_s'])} | | {ratio} |")
            else:
                lines.append(f"| | `{o['label']}` | | | {fmt_s(o['median_s'])} | |")
    eng = res.get("engine", [])
    if eng:
        lines += ["", "## The engine in-process", "",
                  "Events through the library API (`run_event`), three `set` diffusions on three random "
                  "nodes each, one after the other in one process; then as many again inside "
                  "`narrative.store.batch.batch()` (one lock, one scan, one index write).", "",
                  "| world | layout | events | events/s | median | p90 | events/s in `batch()` "
                  "| new objects per event, before gc |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for e in sorted(eng, key=lambda e: (e["layout"], e["nodes"])):
            loose = f"{e['loose_kib_per_event']:,.0f} KiB" if "loose_kib_per_event" in e else "-"
            in_batch = e.get("batch_events_per_s", "-")
            lines.append(f"| {e['nodes']:,} nodes | {e['layout']} | {e['events']} | {e['events_per_s']} | "
                         f"{e['median_ms']:.1f} ms | {e['p90_ms']:.1f} ms | {in_batch} | {loose} |")
    hist = res.get("history_generation", [])
    if hist:
        lines += ["", "Histories (mixed events: sets, relations, creations, expiries, scene closes, "
                  "hand edits), made through the library when first needed:", ""]
        for h in hist:
            span = f"{h['from_event']}..{h['from_event'] + h['events']}"
            lines.append(f"- events {span} on {h['nodes']:,} nodes ({h['layout']}): "
                         f"{h['events_per_s']} events/s")
    ck = res.get("check")
    if ck:
        mem = f", {ck['cli_check_peak_rss_mib']:.0f} MiB peak" if ck.get("cli_check_peak_rss_mib") else ""
        lines += ["", "## narr check", "",
                  f"On a {ck['world']}: the history ({ck['events']} events) checks at "
                  f"**{ck['events_per_s']} events/s** in-process ({ck['history_s']} s); `narr check` "
                  f"(the history, then every node of the current world) takes {ck['cli_check_s']} s{mem}. "
                  f"Result: {'ok' if ck['ok'] else 'PROBLEMS'}."]
    g = res.get("growth")
    if g:
        lines += ["", "## Repository growth", "",
                  f"After `git gc`, {g['events']} events on {g['nodes']:,} nodes ({g['layout']}) grew the "
                  f"pack by {g['pack_growth_bytes']:,} bytes: **{g['bytes_per_event']:.0f} bytes per "
                  f"event**. The node files those events changed are "
                  f"{g['changed_node_files_raw_per_event']:.0f} bytes per event, "
                  f"{g['changed_node_files_compressed_per_event']:.0f} compressed (zlib): ratio "
                  f"**{g['ratio']:.2f}**. The event record in each commit message is "
                  f"{g['record_compressed_per_event']:.0f} bytes compressed. Before `gc` the repository held "
                  f"{g['loose_objects_before_gc']:,} loose objects (narr writes through libgit2, which never "
                  "packs on its own)."]
    lines += _table(
        res.get("imports", []), "Import",
        "`narr import` of a vault of Markdown notes with front matter (the benchmark world's "
        "nodes, one note each), in process: into an empty world, then the same vault again "
        "(everything is found already there and nothing is recorded).",
        ["notes", "first import", "its arbiter", "created", "again", "its arbiter", "load"],
        lambda im: [f"{im['notes']:,}", fmt_s(im["first_s"]), fmt_s(im["first_arbiter_s"]),
                    f"{im['first_created']:,}", fmt_s(im["again_s"]), fmt_s(im["again_arbiter_s"]),
                    str(im["load_1m"])], left=0)
    lines += _table(
        res.get("lorebooks", []), "Lorebooks",
        "`narr import` of a SillyTavern World Info book (the same generated nodes, one entry "
        "each, every fourth with a second entry that becomes a section), into an empty world "
        "and again; `narr export lorebook` of the result, and that export imported into "
        "another empty world.",
        ["entries", "import", "created", "sections", "again", "export", "export imported", "load"],
        lambda lb: [f"{lb['entries']:,}", fmt_s(lb["first_s"]), f"{lb['first_created']:,}",
                    f"{lb['first_sections']:,}", fmt_s(lb["again_s"]), fmt_s(lb["export_s"]),
                    fmt_s(lb["reimport_s"]), str(lb["load_1m"])], left=0)
    lines += _table(
        res.get("audit", []), "Audit",
        "`narr audit CHAPTER` as a fresh process on the sample world, its catalog warm: a "
        "chapter that keeps to the world (deeds, talk and description, English and Chinese), "
        "every sentence simulated and checked.",
        ["world", "sentences", "median", "min", "max", "CPU"],
        lambda au: [au["world"], str(au["sentences"]), fmt_s(au["median_s"]), fmt_s(au["min_s"]),
                    fmt_s(au["max_s"]), fmt_s(au["median_cpu_s"])])
    lines += _table(
        res.get("studio", []), "The studio",
        "Headless chromium opens `narr studio` in a fresh context each round, timed from the "
        "navigation to the first drawing of the world view (the first round against a server "
        "that has just started); then focuses a node, searches, finds a node by name and opens it "
        "(search to node), steps the time slider, and opens the event view.",
        ["world", "open (median)", "worst", "first", "API", "drawing", "focus", "search",
         "search to node", "slider step", "event view", "load"],
        lambda st: [st["world"], *(fmt_s(st[k]) if k in st else "" for k in (
            "open_median_s", "open_max_s", "open_first_s", "api_median_s", "render_median_s",
            "focus_s", "search_s", "search_to_node_s", "slider_step_s", "events_view_s")),
            str(st["load_1m"])])
    lines += _table(
        res.get("agents", []), "Agents (`narr mcp`)",
        "One `narr mcp` over stdio, driven by the `mcp` SDK's client as an agent host drives "
        "it: reads in a row (get_node, why, search, brief, status in turn), then events in a "
        "row (one field each, no diffuser), each timed from request to answer.",
        ["world", "calls", "start", "read (median)", "read p90", *AGENT_TOOLS, "event (median)",
         "event p90", "load"],
        lambda ag: [ag["world"], str(ag["calls"]), fmt_s(ag["start_s"]), fmt_s(ag["read_median_s"]),
                    fmt_s(ag["read_p90_s"]), *(fmt_s(ag["by_tool_median_s"][k]) for k in AGENT_TOOLS),
                    fmt_s(ag["event_median_s"]), fmt_s(ag["event_p90_s"]), str(ag["load_1m"])])
    lines += _table(
        res.get("auto_start", []), "The server, as installed",
        "The first command in a world with no server runs itself and starts the server in the "
        "background; the server answers from then on. Its memory after the rounds above "
        "(resident, `VmRSS`), and events through the library on a world kept open with "
        "`narr.open_world(path, watch=True)`.",
        ["world", "first command", "server answers after", "server memory", "requests",
         "library event, kept open (median)"],
        lambda st: [st["world"], fmt_s(st["first_command_s"]), fmt_s(st["server_ready_s"]),
                    *_server_memory(res, st["world"]), _kept_open(res, st["world"])])
    lines += _table(
        res.get("memory", []), "Memory", "Peak RSS of one process (GNU time), after the timed rounds.",
        ["world", "`narr event`", "`git add -A`", "`git commit`"],
        lambda m: [m["world"], _mib(m["narr_event_mib"]), _mib(m["git_add_mib"]),
                   _mib(m["git_commit_mib"])])
    tg = res.get("targets", [])
    if tg:
        lines += ["", "## Targets", "", "| target | where | measured | limit | met |",
                  "| --- | --- | --- | --- | --- |"]
        for t in tg:
            note = f"; {t['note']}" if t.get("note") else ""
            lines.append(f"| {t['target']} | {t['where']}{note} | {t['measured']} | {t['limit']} | "
                         f"{'yes' if t['met'] else '**no**'} |")
    notes = res.get("notes", [])
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _server_memory(res: dict[str, Any], world: str) -> list[str]:
    mem = next((m for m in res.get("server_memory", []) if m["world"] == world), None)
    if mem is None or mem.get("resident_mib") is None:
        return ["-", "-"]
    return [f"{mem['resident_mib'] * MIB_MB:.0f} MB", str(mem.get("requests") or "-")]


def _kept_open(res: dict[str, Any], world: str) -> str:
    lib = next((x for x in res.get("library_kept_open", []) if x["world"] == world), None)
    return f"{lib['median_ms']:.1f} ms" if lib is not None else "-"


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write(res: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "latest.json", json.dumps(res, indent=2, ensure_ascii=False) + "\n")
    _write(out / "latest.md", markdown(res))
