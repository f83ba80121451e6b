/* narr studio: both graphs of a narr world and its manuscript in the browser, over the JSON
   API of `narr serve`. Plain JavaScript, no build step: this file (the page's state, its calls,
   the lists, the inspector, the event view and the composer), graph.js (both graphs),
   nodeform.js (a node as a form) and manuscript.js; the libraries are vendored (vendor/). */
"use strict";

// narr's vocabulary, as the server gives it in the page (narrative/ids.py defines it once)
const words = (name) => (document.body.dataset[name] || "").split(" ").filter(Boolean);
const LAYERS = words("layers");
const LIFECYCLES = words("lifecycles");
const MAX_NAME = Number(document.body.dataset.maxName || 200);
const NEAR_DRAW = 80;  // nodes drawn round a focus or of an opened cluster (the overview: the server's 150)

const state = {
  view: "world",
  at: null,          // commit of the time slider, or null for now (HEAD and the hand edits)
  story: [],         // the story line, oldest first
  focus: null,
  selected: null,    // the node shown in the inspector
  loadedNode: "",    // its file as loaded, to tell unsaved changes
  event: null,       // the event shown in the event view
  pending: [],
  eventsData: null,
  worldRequest: 0,
  changes: [],       // the composer's explicit changes: { kind, spec } as narr event's flags take them
  accept: new Set(), // held-back changes to apply (their numbers)
  head: null,        // the commit the page last saw at HEAD: every write carries it (If-Match)
  branch: null,      // and the story line it stood on
  stamp: null,       // the last change notice: what the page shows is true to it
  live: false,       // whether change notices arrive
  depth: 2,          // how many relations away the focus's neighbourhood is drawn
  group: "auto",     // how a selection too big to draw is drawn: clusters by layer, kind, place
  expand: new Set(), // the clusters opened
  loadedNodeData: null,  // the node as the form was filled from it
  offer: null,       // what its form offers (fields of its kind, reference fields, relation types)
  book: null,        // the manuscript as last loaded
};
const timings = {};
window.narrStudio = { state, timings };

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

class ApiError extends Error {
  constructor(body, status) {
    super(body && body.error ? body.error : status === 0 ? "The server is not answering (see the notice at the top)." : `HTTP ${status}`);
    this.body = body || {};
    this.status = status;
    this.offline = status === 0;  // said once, at the top of the page (serverGone), not per panel
  }
  describe() {
    const parts = [this.message];
    for (const d of this.body.details || []) parts.push(`  ${typeof d === "string" ? d : JSON.stringify(d)}`);
    if (this.body.hint) parts.push(`hint: ${this.body.hint}`);
    return parts.join("\n");
  }
}

async function api(path, options = {}) {
  const init = { method: options.method || "GET", credentials: "same-origin",
                 headers: { "X-Narr-Studio": "1", "Accept": "application/json", ...(options.headers || {}) } };
  if (options.body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
  }
  if (init.method !== "GET") {
    // A write happens only on the story the page showed when it was asked for.
    const seen = options.seen || { head: state.head, branch: state.branch };
    if (seen.head !== null && seen.head !== undefined) {
      init.headers["If-Match"] = `"${seen.head}"`;
      init.headers["X-Narr-Branch"] = seen.branch || "";
    }
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    serverGone();
    throw new ApiError(null, 0);
  }
  serverBack();
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  const tag = response.headers.get("ETag");
  if (init.method !== "GET" && tag && response.ok) state.head = tag.replace(/^W\//, "").replace(/"/g, "");
  if (!response.ok) {
    const err = new ApiError(body, response.status);
    if (response.status === 412) refreshAll();  // the story moved: show it as it now stands
    throw err;
  }
  return body;
}

/* --- a server that stopped: said once, with how to start it again ------------------------ */

function serverGone() {
  const box = $("offline");
  if (!box.hidden) return;
  const port = location.port || (location.protocol === "https:" ? "443" : "80");
  box.textContent = `The studio's server (${location.host}) is not answering: it has stopped, so nothing ` +
    "on this page can be loaded or saved, and what it shows may be out of date. Unsaved text in the " +
    "editor stays here.\nStart it again in the world's folder with  narr serve --port " + port +
    "  (this page then works again at once), or  narr studio  (a new page, on the port it picks).";
  box.hidden = false;
  document.body.dataset.offline = "true";
}

function serverBack() {
  const box = $("offline");
  if (box.hidden) return;
  box.hidden = true;
  delete document.body.dataset.offline;
  refreshAll();  // what changed meanwhile
}

function problemText(err) {
  return err instanceof ApiError ? err.describe() : String(err);
}

/* --- staying true to the world: change notices ------------------------------------------- */

function editorDirty() {
  const editor = $("node-editor");
  return state.selected !== null && state.at === null && !editor.readOnly && editor.value !== state.loadedNode;
}

async function refreshAll() {
  try {
    const where = await api("/api/studio/where");
    applyStamp(where, true);
  } catch (err) { /* the notices will tell */ }
}

function applyStamp(stamp, force = false) {
  const before = state.stamp;
  state.stamp = stamp;
  if (before && (before.edits !== stamp.edits || before.head !== stamp.head)) state.names = {};  // renamed, maybe
  state.head = stamp.head;
  state.branch = stamp.branch;
  document.body.dataset.head = stamp.head || "";
  if (!before && !force) return;  // the first notice: the page was just loaded from this
  const moved = !before || before.head !== stamp.head || before.branch !== stamp.branch;
  const edits = !before || before.edits !== stamp.edits;
  const kept = !before || before.kept !== stamp.kept || before.failed !== stamp.failed;
  if (!moved && !edits && !kept && !force) return;
  if (moved || kept || state.view === "events") loadEvents();
  else loadPending();
  if (moved || edits || kept) loadProblems();
  if (moved || edits) {
    loadWorld();
    if (state.selected) refreshNode();
  }
  document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
}

async function refreshNode() {
  // Shown again as it now stands, unless the editor or the form holds changes not yet saved:
  // those are never dropped.
  if (editorDirty()) {
    $("node-message").className = "notice";
    $("node-message").textContent = "The world changed while the editor held unsaved text. Your text is kept: " +
      "save it to write it over the file, or discard it to see the file as it now is.";
    return;
  }
  if (state.at === null && state.loadedNodeData && formDirty()) {
    $("node-message").className = "notice";
    $("node-message").textContent = "The world changed while the form held changes. They are kept: Save writes " +
      "only the fields you changed (a field changed elsewhere too is shown to you first).";
    return;
  }
  await selectNode(state.selected, false, true);
}

function listen() {
  const source = new EventSource("/api/studio/changes");
  source.addEventListener("stamp", (evt) => {
    state.live = true;
    $("live").textContent = "";
    serverBack();
    applyStamp(JSON.parse(evt.data));
  });
  source.addEventListener("error", () => {
    state.live = false;
    $("live").textContent = "not connected: the page may be out of date";
    api("/api/studio/where").catch(() => {});  // a server gone is said at the top (serverGone)
  });
  state.source = source;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === "") continue;
    q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

function cell(c, key) {
  if (!(key in c)) return "—";
  const v = c[key];
  if (!c.field && v && typeof v === "object" && v.id) return `the node “${v.name || v.id}”`;
  return short(v, 160);
}

function short(value, n = 120) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text === undefined) return "—";
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}

/* --- names first: a node is shown by its name, its id only beside it ----------------------- */

const CJK = /[\u3400-\u9fff\uf900-\ufaff]/;
const langOf = (text) => (CJK.test(text) ? "zh" : null);

/* Lists are in the order of the names shown, by the reader's locale; a Chinese name stands
   among the others by the first letter of its pinyin (林远 with the L's), as an index of names
   in a book of both scripts does, and in pinyin order among the Chinese ones. */
const COLLATOR = new Intl.Collator(undefined, { sensitivity: "base", numeric: true });
const PINYIN = new Intl.Collator("zh-u-co-pinyin", { sensitivity: "base", numeric: true });
// the first Han character of each pinyin initial in the pinyin collation's order (A, B, C, ...)
const PINYIN_STARTS = [["A", "阿"], ["B", "八"], ["C", "嚓"], ["D", "咑"], ["E", "妸"], ["F", "发"], ["G", "旮"],
  ["H", "哈"], ["J", "丌"], ["K", "咔"], ["L", "垃"], ["M", "妈"], ["N", "拏"], ["O", "噢"], ["P", "妑"], ["Q", "七"],
  ["R", "呥"], ["S", "仨"], ["T", "他"], ["W", "屲"], ["X", "夕"], ["Y", "丫"], ["Z", "帀"]];

function initialOf(name) {
  const first = [...name.trim()][0] || "";
  if (!CJK.test(first)) return first.normalize("NFD").charAt(0).toUpperCase();
  let letter = "A";
  for (const [l, start] of PINYIN_STARTS) if (PINYIN.compare(first, start) >= 0) letter = l;
  return letter;
}

function byShownName(a, b) {
  const ia = initialOf(a);
  const ib = initialOf(b);
  if (ia !== ib) return COLLATOR.compare(ia, ib);
  const ca = CJK.test(a.trim().charAt(0));
  const cb = CJK.test(b.trim().charAt(0));
  if (ca !== cb) return ca ? 1 : -1;  // under one letter, the Latin names first
  return ca ? PINYIN.compare(a, b) : COLLATOR.compare(a, b);
}

function learnNames(rows) {
  state.names = state.names || {};
  for (const [id, n] of Object.entries(rows || {})) state.names[id] = n;
}

function nameOf(id) {
  const n = (state.names || {})[id];
  return n ? n.name : id;
}

async function withNames(ids) {
  // The names of the ids a table is about to show, asked for once.
  const known = state.names || {};
  const wanted = [...new Set(ids.filter((i) => i && !(i in known)))];
  if (!wanted.length) return;
  try { learnNames((await api(`/api/studio/names${query({ id: wanted.join(",") })}`)).names); } catch (err) { /* ids then */ }
}

function nodeName(id, { link = true } = {}) {
  // A node by its name (its alias in another script beside it), the id small after it; a link to it.
  const n = (state.names || {})[id];
  const parts = [n ? n.name : id];
  if (n && n.aliases && n.aliases.length) parts.push(el("span", { class: "alias", lang: langOf(n.aliases[0]) }, n.aliases[0]));
  if (n) parts.push(el("span", { class: "id" }, id));
  if (!link || !n) return el("span", { class: "node-name" }, ...parts);
  return el("button", { type: "button", class: "link", "data-node": id, onclick: () => { showView("world"); pickNode(id); } },
    ...parts);
}

/* --- confirmation ------------------------------------------------------------------------ */

function confirmAction(title, lines, okText) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  const box = $("confirm-text");
  box.replaceChildren(...lines.map((line) => el("p", {}, line)));
  $("confirm-ok").textContent = okText;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

/* --- tabs and the time slider ------------------------------------------------------------ */

function showView(view) {
  state.view = view;
  for (const [tab, panel, name] of TABS) {
    $(tab).setAttribute("aria-selected", String(name === view));
    $(tab).tabIndex = name === view ? 0 : -1;  // one tab stop for the tab list (roving)
    $(panel).hidden = name !== view;
  }
  if (view === "events") {
    loadEvents().then(() => { if (eventCy) { eventCy.resize(); placeLabels(eventCy); } });
  } else if (view === "book") {
    return loadManuscript();
  } else if (worldCy) {
    worldCy.resize();
    fitWorld();
  }
}

function setStory(events) {
  state.story = events.slice().reverse();  // oldest first
  const slider = $("time-slider");
  slider.max = String(Math.max(state.story.length - 1, 0));
  if (state.at === null) slider.value = slider.max;
  else {
    const i = state.story.findIndex((e) => e.commit === state.at);
    if (i < 0) { state.at = null; slider.value = slider.max; } else slider.value = String(i);
  }
  updateTimeLabel();
}

function updateTimeLabel() {
  // The label for the eye, and the same words for a screen reader (aria-valuetext).
  const label = $("time-label");
  const slider = $("time-slider");
  const n = state.story.length;
  if (state.at === null) {
    label.textContent = "now";
    const last = state.story[n - 1];
    slider.setAttribute("aria-valuetext", last ? `now: after event ${last.seq}, ${last.content}, with the hand edits` : "now");
    return;
  }
  const i = state.story.findIndex((x) => x.commit === state.at);
  const e = state.story[i];
  label.textContent = e ? `#${e.seq} ${e.content}` : state.at.slice(0, 10);
  slider.setAttribute("aria-valuetext", e ? `event ${e.seq} of ${state.story[n - 1].seq}: ${e.content}` : label.textContent);
}

async function onSlide() {
  const slider = $("time-slider");
  const held = unsaved();
  if (held) {
    const discard = await confirmAction("Discard your unsaved changes?",
      [`${held} to ${nameOf(state.selected)} that are not saved; the past cannot be edited.`,
        "Cancel to stay at now with your text; Discard to drop it and look at the past."], "Discard");
    if (!discard) { slider.value = slider.max; return; }
  }
  const i = Number(slider.value);
  const last = state.story.length - 1;
  state.at = i >= last ? null : state.story[i].commit;
  updateTimeLabel();
  loadWorld();
  if (state.selected) selectNode(state.selected, false);
}

/* --- the world view ----------------------------------------------------------------------- */

function viewKey(data) {
  const f = filters();
  if (data.focus) return `focus:${data.focus}:${data.depth}`;
  return `overview:${f.layer}|${f.kind}|${f.lifecycle}|${f.q}|${data.group || ""}|${[...state.expand].sort().join(",")}`;
}

function filters() {
  const layers = [...document.querySelectorAll("#filter-layer input:checked")].map((i) => i.value);
  return {
    layer: layers.length === LAYERS.length ? "" : layers.join(","),
    kind: $("filter-kind").value,
    lifecycle: $("filter-lifecycle").value,
    q: $("search").value.trim(),
  };
}

async function loadWorld() {
  const started = performance.now();
  const ticket = ++state.worldRequest;
  const near = state.focus || state.expand.size;  // a neighbourhood, a cluster opened: what a reader takes in
  const params = { ...filters(), at: state.at, around: state.focus, depth: state.focus ? state.depth : null,
    group: state.focus ? null : state.group || null, expand: state.focus ? null : [...state.expand].join(","),
    draw: near ? NEAR_DRAW : null };
  let data;
  try {
    data = await api(`/api/graph/world${query(params)}`);
  } catch (err) {
    if (err instanceof ApiError && state.focus && err.status === 404) {
      state.focus = null;   // the focus is not in the world at this time: show the selection
      return loadWorld();
    }
    if (!(err instanceof ApiError && err.offline)) $("list-summary").textContent = problemText(err);
    return;
  }
  if (ticket !== state.worldRequest) return;  // a newer request is on its way
  timings.worldFetch = performance.now() - started;
  fillFacets(data.facets);
  renderNodeList(data);
  renderWorldGraph(data);
  describeWorldGraph(data);
  timings.worldRender = performance.now() - started;
  document.body.dataset.worldReady = String(ticket);
}

function fillFacets(facets) {
  const kind = $("filter-kind");
  const chosen = kind.value;
  const kinds = Object.keys(facets.kind || {}).filter(Boolean).sort(byShownName);
  const have = [...kind.options].map((o) => o.value).slice(1);
  if (have.join("\u0000") !== kinds.join("\u0000")) {
    kind.replaceChildren(el("option", { value: "" }, "any"),
      ...kinds.map((k) => el("option", { value: k }, `${k} (${facets.kind[k]})`)));
    kind.value = kinds.includes(chosen) ? chosen : "";
    $("kinds").replaceChildren(...kinds.map((k) => el("option", { value: k })));
  }
}

function renderNodeList(data) {
  if (state.at === null) {
    learnNames(Object.fromEntries(data.nodes.map((n) => [n.id, { name: n.name, aliases: n.aliases, layer: n.layer }])));
  }
  const list = $("node-list");
  const rows = data.nodes.slice().sort((a, b) => byShownName(a.name, b.name) || (a.id < b.id ? -1 : 1));
  const items = rows.map((n) => {
    const alias = n.aliases && n.aliases.length ? n.aliases.join(" · ") : "";
    return el("li", {}, el("button", {
      type: "button", "data-id": n.id, "aria-current": n.id === state.selected ? "true" : null,
      onclick: () => pickNode(n.id),
    }, el("span", { class: `dot ${n.layer}`, "aria-hidden": "true" }),
    el("span", { class: "name", title: n.name }, n.name),
    alias ? el("span", { class: "alias", lang: langOf(alias), title: alias }, alias) : null,
    el("span", { class: "tag" }, n.kind),
    n.edited ? el("span", { class: "tag edited" }, n.edited) : null,
    el("span", { class: "sr" }, `, ${n.layer}, ${n.lifecycle}${n.edited ? ", hand-edited" : ""}, id ${n.id}`)));
  });
  list.replaceChildren(...items);
  const shown = data.nodes.length;
  $("list-summary").textContent = data.truncated
    ? `${shown} of ${data.matched} matching nodes listed (of ${data.total}); search to narrow down`
    : `${data.matched} of ${data.total} nodes`;
}

function describeWorldGraph(data) {
  // The drawing in words: for a screen reader, and under the graph for everyone.
  const graph = data.graph;
  const names = [...graph.clusters.map((c) => `${c.label} (${c.count})`), ...graph.nodes.map((n) => n.name)];
  $("world-graph").setAttribute("aria-label", `The relation network: ${names.length} drawn` +
    (names.length ? `: ${short(names.join(", "), 400)}` : ""));
  const when = state.at ? ` as of ${$("time-label").textContent}` : "";
  const focusName = data.focus ? nameOf(data.focus) : "";
  let note;
  if (data.focus) {
    note = `The neighbourhood of ${focusName} (${data.depth} relation${data.depth === 1 ? "" : "s"} away)${when}. ` +
      `${graph.nodes.length} nodes, ${graph.edges.length} relations.`;
  } else if (data.group) {
    const opened = graph.nodes.length ? ` ${graph.nodes.length} nodes of the opened cluster${state.expand.size > 1 ? "s" : ""} drawn.` : "";
    note = `${data.matched.toLocaleString()} nodes${when} in ${graph.clusters.length} clusters by ${data.group}: ` +
      `click one to open it.${opened}`;
  } else {
    note = `${graph.nodes.length} best-connected of ${data.matched} selected nodes${when}; pick one to see its neighbourhood.`;
  }
  $("graph-note").textContent = note;
  $("world-graph").dataset.focus = data.focus || "";
  $("graph-overview").hidden = !data.focus;
  $("graph-depth-box").hidden = !data.focus;
  $("graph-group-box").hidden = Boolean(data.focus);
  $("graph-opened").replaceChildren(...[...state.expand].map((key) => el("button", { type: "button", class: "close-cluster",
    "data-cluster": key, onclick: () => { state.expand.delete(key); loadWorld(); } },
  `Close ${key.split(":").slice(1).join(":") || key}`)));
}

/* --- problems: what the next event would refuse, and the events that failed -------------- */

async function loadProblems() {
  let data;
  try { data = await api("/api/studio/problems"); } catch (err) { return; }
  state.problems = data.problems;
  $("problems").hidden = !data.problems.length;
  $("problem-list").replaceChildren(...data.problems.map((p) => el("li", {}, p.node
    ? el("button", { type: "button", "data-node": p.node, onclick: () => pickNode(p.node) }, p.text) : p.text)));
  showNodeProblems();
  $("failed").hidden = !data.failed.length;
  $("failed-list").replaceChildren(...data.failed.map((f) => el("li", { "data-key": f.key },
    el("div", {}, `“${short(f.content, 120)}”`),
    el("div", { class: "error" }, short(f.error, 300)),
    el("div", { class: "row" },
      el("button", { type: "button", class: "retry", "aria-label": `Retry “${short(f.content, 60)}”`,
        onclick: () => retryFailed(f) }, "Retry"),
      el("button", { type: "button", class: "drop", "aria-label": `Drop… “${short(f.content, 60)}”`,
        onclick: () => dropFailed(f) }, "Drop…")))));
  document.body.dataset.problems = String(data.problems.length);
  document.body.dataset.failed = String(data.failed.length);
}

function showNodeProblems() {
  const mine = (state.problems || []).filter((p) => p.node && p.node === state.selected);
  $("node-problems").hidden = !mine.length;
  $("node-problems").replaceChildren(...mine.map((p) => el("li", {}, p.text)));
}

async function retryFailed(item) {
  await act(() => api("/api/failed/retry", { method: "POST", body: { which: item.key } }),
    (r) => `Recorded: ${short(r.content || item.content, 80)}`);
  loadProblems();
}

async function dropFailed(item) {
  const lines = [`The failed event “${short(item.content, 120)}” will be forgotten for good.`,
    "Its words are not kept anywhere else: copy them first if you may want them."];
  if (!(await confirmAction("Drop this failed event?", lines, "Drop"))) return;
  await act(() => api("/api/failed/drop", { method: "POST", body: { which: item.key } }),
    () => `Dropped “${short(item.content, 80)}”.`);
  loadProblems();
}

/* --- the inspector: see and edit one node -------------------------------------------------- */

async function pickNode(id) {
  if ((await selectNode(id)) === false) return;  // kept the unsaved text instead
  state.focus = id;
  $("node-title").focus();  // where the node is now shown (the list is drawn again)
  loadWorld();
}

const TABS = [["tab-world", "world-view", "world"], ["tab-events", "event-view", "events"], ["tab-book", "book-view", "book"]];

function tabKeys(evt) {
  // The ARIA tabs pattern: arrows move between the tabs (and show them), Home and End too.
  const at = TABS.findIndex(([tab]) => tab === evt.target.id);
  let next = null;
  if (evt.key === "ArrowRight" || evt.key === "ArrowDown") next = (at + 1) % TABS.length;
  else if (evt.key === "ArrowLeft" || evt.key === "ArrowUp") next = (at - 1 + TABS.length) % TABS.length;
  else if (evt.key === "Home") next = 0;
  else if (evt.key === "End") next = TABS.length - 1;
  if (next === null) return;
  evt.preventDefault();
  showView(TABS[next][2]);
  $(TABS[next][0]).focus();
}

function unsaved() {
  // What would be lost by showing another node: the file editor's text, the form's changes.
  if (editorDirty()) return "The file editor holds changes";
  if (state.selected !== null && state.at === null && formDirty()) return "The form holds changes";
  return null;
}

async function selectNode(id, scroll = true, again = false) {
  const held = !again && id !== state.selected ? unsaved() : null;
  if (held) {
    const discard = await confirmAction("Discard your unsaved changes?",
      [`${held} to ${nameOf(state.selected)} that are not saved.`,
        "Cancel to go back to them (and save them); Discard to drop them and open the other node."], "Discard");
    if (!discard) return false;
  }
  if (id !== state.selected) {  // a form half filled for one node is never carried to the next
    $("field-path").value = "";
    $("field-value").value = "";
    $("conflicts").hidden = true;
    endRelationEdit();
    for (const f of ["relation-type", "relation-target", "relation-attrs"]) $(f).value = "";
  }
  state.selected = id;
  for (const b of document.querySelectorAll("#node-list button")) {
    b.setAttribute("aria-current", String(b.dataset.id === id));
  }
  $("inspector-empty").hidden = true;
  $("ended-note").hidden = true;
  $("inspector-body").hidden = false;
  if (!again) { $("node-message").textContent = ""; $("node-message").className = ""; }
  let view;
  try {
    view = await api(`/api/studio/node/${encodeURIComponent(id)}${query({ at: state.at })}`);
    learnNames(view.names);
  } catch (err) {
    if (state.selected !== id) return;
    $("node-title").textContent = id;
    $("node-sub").textContent = "";
    $("node-main").replaceChildren();
    $("node-fields").replaceChildren();
    $("node-relations").replaceChildren();
    $("node-editor").value = "";
    $("node-message").className = "error";
    $("node-message").textContent = problemText(err);
    return;
  }
  if (state.selected !== id) return;
  if (again && (editorDirty() || (state.at === null && formDirty()))) return refreshNode();  // typed while it loaded: stays
  showNode(view);
  showNodeProblems();
  if (scroll) $("inspector").scrollTop = 0;
  return true;
}

function showNode(view) {
  const node = view.node;
  state.links = view.links || {};
  if (view.file !== undefined) state.loadedFile = view.file;
  const aliases = (node.aliases || []).join(" · ");
  $("node-title").replaceChildren(el("span", { class: "name", title: node.name || node.id }, node.name || node.id),
    aliases ? el("span", { class: "alias", lang: langOf(aliases), title: aliases }, aliases) : "");
  $("node-sub").textContent = `${node.id} · ${node.layer} · ${node.kind} · ${node.lifecycle || "permanent"}`;
  const past = state.at !== null;
  for (const part of ["field-form", "relation-form", "node-end"]) $(part).hidden = past;
  document.querySelector("#node-form .save-row").hidden = past;
  if (past) {
    // As it was then: read, not edited.
    const rows = [];
    if (node.summary) rows.push(["summary", node.summary]);
    for (const group of ["state", "traits"]) {
      for (const [k, v] of Object.entries(node[group] || {})) rows.push([`${group}.${k}`, v]);
    }
    $("node-main").replaceChildren();
    $("node-fields").replaceChildren(el("dl", { class: "past" }, ...rows.flatMap(([label, v]) => [el("dt", {}, label),
      el("dd", {}, state.links[label] ? nodeName(state.links[label]) : short(v, 200))])));
    state.loadedNodeData = null;
    $("form-dirty").textContent = "";
  } else {
    renderForm(node, view.offer);
  }
  showRelations(node, past);
  const text = JSON.stringify(node, null, 2);
  state.loadedNode = text;
  const editor = $("node-editor");
  editor.value = text;
  editor.readOnly = past;
  $("node-save").disabled = past;
  $("node-revert").disabled = past;
  if (past) {
    $("node-message").className = "notice";
    $("node-message").textContent = "This is the node as it was then; move the slider to now to edit it.";
  }
  showMentions(node.id);
}

function showRelations(node, past) {
  const items = [];
  const rows = [];
  for (const [type, targets] of Object.entries(node.relations || {})) {
    for (const [target, attrs] of Object.entries(targets || {})) rows.push([type, target, attrs]);
  }
  rows.sort((a, b) => COLLATOR.compare(a[0], b[0]) || byShownName(nameOf(a[1]), nameOf(b[1])));
  for (const [type, target, attrs] of rows) {
    const extra = attrs && Object.keys(attrs).length ? ` ${short(attrs, 60)}` : "";
    const name = nameOf(target);
    const alias = ((state.names || {})[target] || {}).aliases || [];
    items.push(el("li", { class: "relation", "data-type": type, "data-target": target },
      el("button", { type: "button", title: `${type} → ${name}${extra}`, onclick: () => pickNode(target) },
        `${type} → `, el("span", { class: "name" }, name),
        alias.length ? el("span", { class: "alias", lang: langOf(alias[0]) }, alias[0]) : null,
        name !== target ? el("span", { class: "id" }, target) : null, extra),
      past ? null : el("button", { type: "button", class: "edit", "aria-label": `edit ${type} → ${name}`,
        title: "change this relation's type, target or attributes", onclick: () => editRelation(type, target, attrs) }, "✎"),
      past ? null : el("button", { type: "button", class: "remove", "aria-label": `remove ${type} → ${name}`,
        title: "remove this relation (a hand edit)", onclick: () => changeRelations(type, target, false) }, "×")));
  }
  $("node-relations").replaceChildren(...(items.length ? items : [el("li", {}, "none")]));
}

function changeRelations(type, target, add, attrs, replaces) {
  // One relation changed in the node's file as it stands (a hand edit); the target by name.
  // The form's other changes, if any, stay as typed (only the relation is written).
  const message = $("node-message");
  if (editorDirty()) {
    message.className = "error";
    message.textContent = "The file editor holds unsaved text: save it or discard it first " +
      "(a change here would otherwise save it too, or drop it).";
    return Promise.resolve(false);
  }
  const id = state.selected;
  message.className = "";
  message.textContent = "saving…";
  const body = { node: id, type, target, remove: !add };
  if (attrs !== undefined) body.attrs = attrs;
  if (replaces) body.replaces = replaces;
  return api("/api/studio/relation", { method: "POST", body }).then(async (answer) => {
    const r = answer.relation;
    if (formDirty()) {
      state.loadedNodeData.relations = answer.node.relations;
      state.loadedNode = JSON.stringify(answer.node, null, 2);
      $("node-editor").value = state.loadedNode;
      await withNames([r.target]);
      showRelations(answer.node, false);
    } else await selectNode(id, false, true);
    message.className = "ok";
    message.textContent = `Saved ${answer.path}: ${r.removed ? "removed" : "the relation"} ${r.type} → ${nameOf(r.target)}` +
      " (a hand edit, recorded with the next event).";
    loadWorld();
    loadPending();
    loadProblems();
    return true;
  }).catch((err) => {
    message.className = "error";
    message.textContent = problemText(err);
    return false;
  });
}

function editRelation(type, target, attrs) {
  state.editingRelation = { type, target };
  $("relation-type").value = type;
  $("relation-target").value = nameOf(target);
  $("relation-attrs").value = attrs && Object.keys(attrs).length ? JSON.stringify(attrs) : "";
  $("relation-add").textContent = "Save relation";
  $("relation-cancel").hidden = false;
  $("relation-type").focus();
}

function endRelationEdit() {
  state.editingRelation = null;
  $("relation-add").textContent = "Add relation";
  $("relation-cancel").hidden = true;
}

async function submitRelation() {
  const type = $("relation-type").value.trim();
  const target = $("relation-target").value.trim();
  const text = $("relation-attrs").value.trim();
  let attrs = {};
  if (text) {
    try { attrs = JSON.parse(text); } catch (err) {
      $("node-message").className = "error";
      $("node-message").textContent = `The attributes are not JSON: ${err.message}. Write an object, e.g. {"since": "spring"}.`;
      return;
    }
    if (!attrs || typeof attrs !== "object" || Array.isArray(attrs)) {
      $("node-message").className = "error";
      $("node-message").textContent = 'The attributes must be a JSON object, e.g. {"since": "spring"}.';
      return;
    }
  }
  const editing = state.editingRelation;
  const replaces = editing || null;  // the relation being edited gives way to the one saved
  const button = $("relation-add");
  button.disabled = true;  // one click, one write
  try {
    if (await changeRelations(type, target, true, attrs, replaces)) {
      $("relation-type").value = "";
      $("relation-target").value = "";
      $("relation-attrs").value = "";
      endRelationEdit();
    }
  } finally { button.disabled = false; }
}

const suggestTargets = debounce(async (input) => {
  const box = input instanceof HTMLElement ? input : $("relation-target");
  const q = box.value.trim();
  if (!q) return;
  let data;
  try { data = await api(`/api/graph/world${query({ q, limit: 20, draw: 0 })}`); } catch (err) { return; }
  const options = [];
  for (const n of data.nodes.slice().sort((a, b) => byShownName(a.name, b.name))) {
    options.push(el("option", { value: n.name, label: `${n.id} · ${n.layer} ${n.kind}` }));
    for (const a of n.aliases || []) options.push(el("option", { value: a, label: `${n.name} (${n.id})` }));
  }
  $("target-names").replaceChildren(...options);
  document.body.dataset.suggested = q;
}, 150);

/* --- creating and ending nodes ------------------------------------------------------------ */

function openNewNode() {
  const layer = $("new-layer");
  if (!layer.options.length) {
    layer.append(...LAYERS.map((l) => el("option", { value: l }, l)));
    $("new-lifecycle").append(...LIFECYCLES.map((l) => el("option", { value: l }, l)));
  }
  $("new-node-message").textContent = "";
  $("new-node").showModal();
  $("new-name").focus();
}

async function createNode() {
  const button = $("new-node-create");
  if (button.disabled) return;
  // The new_node row's arguments, as any program sends them (aliases: the field's names, at commas)
  const body = { layer: $("new-layer").value, name: $("new-name").value.trim(), kind: $("new-kind").value.trim(),
    aliases: $("new-aliases").value.split(",").map((a) => a.trim()).filter(Boolean),
    lifecycle: $("new-lifecycle").value, summary: $("new-summary").value.trim() };
  if ($("new-pronouns").value.trim()) body.pronouns = $("new-pronouns").value.trim();
  if (!body.name) { $("new-node-message").textContent = "A node needs a name."; return; }
  const long = [body.name, ...body.aliases].find((n) => n.length > MAX_NAME);
  if (long !== undefined) {  // the words narr gives, before the request (one limit for names)
    $("new-node-message").textContent = `${long === body.name ? "The name" : "An alias"} is ${long.length} ` +
      `characters long; a name has at most ${MAX_NAME} (say more in the summary).`;
    return;
  }
  button.disabled = true;  // a double click makes one node
  try {
    const made = await api("/api/nodes", { method: "POST", body });
    $("new-node").close();
    for (const id of ["new-name", "new-aliases", "new-kind", "new-summary", "new-pronouns"]) $(id).value = "";
    await pickNode(made.id);
    $("node-message").className = "ok";
    $("node-message").textContent = `Made ${made.name} (${made.id}) in ${made.path}: a hand edit, recorded with the next event.` +
      (made.warnings && made.warnings.length ? `\n${made.warnings.join("\n")}` : "");
    loadPending();
  } catch (err) {
    $("new-node-message").textContent = problemText(err);
  } finally { button.disabled = false; }
}

async function openEndNode() {
  const id = state.selected;
  if (!id) return;
  const name = nameOf(id);
  await loadPending();
  $("end-node-text").textContent = `An event ends ${name} (${id}): it leaves the world from then on, ` +
    "and stays in the history (the time slider shows it before).";
  // An event records every hand edit waiting, whichever node it changed: said before, not after.
  const others = state.pending;
  $("end-node-edits").replaceChildren(...(others.length ? [
    el("p", {}, `The event also records the ${others.length} hand edit${others.length === 1 ? "" : "s"} waiting ` +
      "(every event does):"),
    el("ul", {}, ...others.slice(0, 12).map((e) => el("li", {}, nodeName(e.target, { link: false }),
      ` ${e.field ? fieldWords(e.field) : "(the whole node)"}${"new_value" in e ? `: ${short(e.new_value, 40)}` : ""}`)),
    others.length > 12 ? el("li", {}, `and ${others.length - 12} more`) : null)] : []));
  $("end-content").value = `${name} is gone`;
  $("end-node-message").textContent = "";
  $("end-node").showModal();
  $("end-content").select();
}

async function endNode() {
  const id = state.selected;
  const button = $("end-node-ok");
  if (!id || button.disabled) return;
  const content = $("end-content").value.trim();
  if (!content) { $("end-node-message").textContent = "Say what happens first."; return; }
  button.disabled = true;
  const name = nameOf(id);
  try {
    const result = await api("/api/events", { method: "POST", body: { content, expire: [id] } });
    $("end-node").close();
    // The node is gone: the inspector says what happened, and nothing refreshes it into an error.
    state.selected = null;
    state.focus = null;
    state.loadedNodeData = null;
    $("node-message").textContent = "";
    $("node-message").className = "";
    $("inspector-body").hidden = true;
    const note = $("ended-note");
    note.textContent = `Recorded “${short(result.content || content, 80)}”: ${name} has ended. It stays in the ` +
      "history: move the time slider back to see it.";
    note.hidden = false;
    document.body.dataset.ended = id;
    await loadEvents();
    loadWorld();
  } catch (err) {
    $("end-node-message").textContent = problemText(err);
  } finally { button.disabled = false; }
}

async function saveNode(text, overwrite = false) {
  const id = state.selected;
  if (!id || state.at !== null || state.saving) return;  // a double click saves once
  const body = typeof text === "string" ? text : $("node-editor").value;
  const message = $("node-message");
  message.className = "";
  message.textContent = "saving…";
  state.saving = true;
  $("node-save").disabled = true;
  let answer;
  try {
    // The file as loaded goes with it: a save never writes over a change this page did not see.
    answer = await api(`/api/studio/save/${encodeURIComponent(id)}`, { method: "PUT", body,
      headers: overwrite || typeof state.loadedFile !== "string" ? {} : { "X-Narr-File-Was": state.loadedFile } });
  } catch (err) {
    message.className = "error";
    message.textContent = problemText(err);
    if (err instanceof ApiError && err.status === 412 && err.message.includes("changed since this page loaded it")) {
      // Written whole, the text would put back every field as this page loaded it, undoing
      // what the other tab or editor changed: only the text's own changes are applied.
      const again = await confirmAction("The file changed elsewhere", [err.message,
        "Your text is kept. Apply only what your text changes to the file as it now is (the other " +
        "changes stay; a field changed on both sides is shown to you), or cancel."],
      "Apply my changes");
      state.saving = false;
      if (again) return applyEditorChanges(body);
    }
    return;
  } finally {
    state.saving = false;
    $("node-save").disabled = state.at !== null;
  }
  state.loadedNode = JSON.stringify(answer.node, null, 2);
  state.loadedFile = answer.file;
  $("node-editor").value = state.loadedNode;
  await selectNode(id, false, true);
  message.className = "ok";
  message.textContent = `Saved ${answer.path}: a hand edit, recorded with the next event (narr status lists it).`;
  loadWorld();
  loadPending();
  loadProblems();
}

/* --- ask -------------------------------------------------------------------------------- */

function changeText(c) {
  const field = c.field || "(the node)";
  const old = "old_value" in c ? short(c.old_value, 60) : "—";
  const now = "new_value" in c ? short(c.new_value, 60) : "—";
  return `${c.target} ${field}: ${old} → ${now}` + (c.by && c.by !== "diffusion" ? ` (${c.by})` : "");
}

function renderWhy(data) {
  const parts = [el("h4", {}, `${data.node} ${data.field || ""} = ${short(data.value, 80)}`)];
  if (data.event) parts.push(el("p", {}, `set by ${data.source === "event" ? "event" : data.source} “${data.event.content}”`));
  else parts.push(el("p", {}, `source: ${data.source}`));
  if ("old_value" in data || "new_value" in data) {
    parts.push(el("p", {}, el("span", { class: "old" }, short(data.old_value, 80)), " → ",
      el("span", { class: "new" }, short(data.new_value, 80))));
  }
  if (data.uncommitted) parts.push(el("p", {}, `a hand edit waiting to be recorded: ${short(data.uncommitted, 120)}`));
  const ancestry = data.ancestry || [];
  parts.push(ancestry.length
    ? el("div", {}, el("p", {}, "because of:"), el("ul", {}, ...ancestry.map((a) => el("li", {}, `“${a.content}”` +
      (a.led_to && a.led_to.length ? ` (wrote ${a.led_to.map((l) => `${l.target}${l.field}`).join(", ")})` : "")))))
    : el("p", { class: "tag" }, "it read nothing an earlier event wrote"));
  $("ask-out").replaceChildren(...parts);
}

function renderHistory(data) {
  const events = data.events || [];
  const parts = [el("h4", {}, `History of ${data.node}` + (data.at_genesis ? " (there since the genesis)" : ""))];
  parts.push(events.length ? el("ol", {}, ...events.map((e) => el("li", {}, el("strong", {}, e.content),
    el("ul", {}, ...(e.changes || []).map((c) => el("li", {}, changeText(c)))))))
    : el("p", { class: "tag" }, "no event has touched it"));
  $("ask-out").replaceChildren(...parts);
}

function renderBrief(data) {
  const parts = [el("h4", {}, `Brief for the next event (${data.used} of ${data.budget} characters)`)];
  let section = null;
  let list = null;
  for (const item of data.items || []) {
    if (item.section !== section) {
      section = item.section;
      list = el("ul", {});
      parts.push(el("h5", {}, section), list);
    }
    list.append(el("li", { title: item.reason }, item.text));
  }
  $("ask-out").replaceChildren(...parts);
}

async function ask(kind) {
  const id = state.selected;
  if (!id) return;
  const out = $("ask-out");
  out.replaceChildren(el("p", {}, "asking…"));
  try {
    if (kind === "why") {
      const field = $("why-field").value.trim();
      renderWhy(await api(`/api/why/${encodeURIComponent(id)}${query({ field, at: state.at })}`));
    } else if (kind === "history") {
      renderHistory(await api(`/api/history/${encodeURIComponent(id)}${query({ at: state.at })}`));
    } else {
      renderBrief(await api(`/api/brief${query({ focus: id })}`));
    }
  } catch (err) {
    out.replaceChildren(el("p", { class: "error" }, problemText(err)));
  }
}

/* --- the event view ----------------------------------------------------------------------- */

// A list drawn afresh (the story moved, another writer's event) replaces the button a keyboard
// user stands on: the focus goes back to the new button with the same mark (its data-
// attribute), not to the page's start.
function focusedMark(lists) {
  const at = document.activeElement;
  if (!at || !lists.some((list) => at.closest && at.closest(list))) return null;
  const mark = [...at.attributes].find((a) => a.name.startsWith("data-"));
  return mark ? { lists, name: mark.name, value: mark.value } : null;
}

function refocus(keep) {
  if (!keep) return;
  const wanted = `[${keep.name}="${CSS.escape(keep.value)}"]`;
  const again = document.querySelector(keep.lists.map((list) => `${list} ${wanted}`).join(", "));
  if (again) again.focus();
}

async function loadEvents() {
  let data;
  try {
    data = await api("/api/graph/events");
  } catch (err) {
    if (!(err instanceof ApiError && err.offline)) $("timeline").replaceChildren(el("li", { class: "error" }, problemText(err)));
    return;
  }
  state.eventsData = data;
  setStory(data.events);
  $("branch-name").textContent = (data.branch ? `(${data.branch})` : "(detached)") +
    (data.total > data.events.length ? ` · the last ${data.events.length} of ${data.total} events` : "");
  const keep = focusedMark(["#timeline", "#chains"]);
  $("timeline").replaceChildren(...data.events.map((e) => el("li", {}, el("button", {
    type: "button", "data-commit": e.commit, "aria-current": e.commit === state.event ? "true" : null,
    title: e.content, onclick: () => selectEvent(e.commit).then(() => $("event-title").focus()),
  }, el("span", { class: "seq" }, `#${e.seq}`), " ", el("span", { class: "what" }, e.content), " ",
  el("span", { class: "kind" }, e.kind)))));
  // What the story-line panel said of a HEAD that is no longer where the story stands goes.
  const said = $("lines-out");
  if (said.dataset.head && said.dataset.head !== (state.head || "")) {
    said.textContent = "";
    said.className = "";
    delete said.dataset.head;
  }
  $("chains").replaceChildren(...(data.chains.length ? data.chains.map((c) => el("li", {},
    el("div", {}, `${c.n}. ${c.name}`),
    el("div", { class: "tag" }, `${c.length} event${c.length === 1 ? "" : "s"}` +
      (c.first ? `, from “${short(c.first.content, 50)}”` : "") + (c.replayed ? (c.replayed_events < c.length ? `, replayed ${c.replayed_events} of ${c.length}` : ", replayed") : "")),
    el("div", { class: "row" },
      el("button", { type: "button", "data-chain": String(c.n), onclick: () => replayChain(c, false) }, "Replay…"),
      el("button", { type: "button", "data-chain-reuse": String(c.n), onclick: () => replayChain(c, true) },
        "Replay as recorded…"))))
    : [el("li", { class: "tag" }, "none")]));
  refocus(keep);
  loadLines();
  renderEventGraph(data);
  await loadPending();
  document.body.dataset.eventsReady = String(Date.now());
}

async function selectEvent(commit) {
  state.event = commit;
  const drawn = eventCy ? eventCy.getElementById(commit) : null;
  if (drawn && drawn.length) {
    eventCy.nodes().unselect();
    drawn.select();
    const box = eventCy.extent();
    const at = drawn.position();
    if (at.x < box.x1 || at.x > box.x2 || at.y < box.y1 || at.y > box.y2) eventCy.center(drawn);
  }
  for (const b of document.querySelectorAll("#timeline button")) {
    b.setAttribute("aria-current", String(b.dataset.commit === commit));
  }
  $("event-empty").hidden = true;
  $("event-body").hidden = false;
  let e;
  try {
    e = await api(`/api/show/${encodeURIComponent(commit)}`);
  } catch (err) {
    $("event-title").textContent = problemText(err);
    return;
  }
  await withNames([...(e.edits || []), ...(e.diffusions || [])].map((c) => c.target));
  if (state.event !== commit) return;
  const info = state.story.find((x) => x.commit === commit);
  $("event-title").textContent = `${info ? `#${info.seq} ` : ""}${e.content}`;
  $("event-sub").textContent = `${e.kind} · ${commit.slice(0, 10)} · ${e.created_at || ""}` +
    (e.diffuser ? ` · diffuser ${e.diffuser}` : "") + (e.narrative_text ? ` · “${short(e.narrative_text, 80)}”` : "");
  const rows = [];
  for (const [source, changes] of [["hand edit", e.edits || []], ["diffusion", e.diffusions || []]]) {
    for (const c of changes) {
      rows.push(el("tr", {}, el("td", {}, source), el("td", {}, nodeName(c.target)), el("td", {}, c.field || "(whole node)"),
        el("td", { class: "old" }, cell(c, "old_value")), el("td", { class: "new" }, cell(c, "new_value"))));
    }
  }
  $("event-changes").tBodies[0].replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: "5" }, "no changes"))]));
  const head = state.story.length ? state.story[state.story.length - 1].commit : null;
  $("event-reset").disabled = commit === head && state.pending.length === 0;
  $("event-revert").disabled = e.kind === "genesis";
}

function laterEvents(commit) {
  const i = state.story.findIndex((x) => x.commit === commit);
  return i < 0 ? [] : state.story.slice(i + 1);
}

async function resetToEvent() {
  const commit = state.event;
  const info = state.story.find((x) => x.commit === commit);
  if (!commit || !info) return;
  const seen = { head: state.head, branch: state.branch };  // what the confirmation describes
  const later = laterEvents(commit);
  const lines = [`The story will stand at event #${info.seq}, “${info.content}”, again.`];
  if (later.length) {
    lines.push(`${later.length} later event${later.length === 1 ? "" : "s"} (from “${short(later[0].content, 60)}”) ` +
      "leave the story line and are kept as an abandoned chain, which can be replayed.");
  }
  if (state.pending.length) {
    lines.push(`${state.pending.length} hand edit${state.pending.length === 1 ? "" : "s"} waiting to be recorded ` +
      "will be set aside (under refs/narr/edits/), not lost.");
  }
  if (!(await confirmAction("Reset the story?", lines, "Reset"))) return;
  await act(async () => {
    const r = await api("/api/reset", { method: "POST", body: { rev: commit }, seen });
    r.chain = r.abandoned ? await chainNamed(r.abandoned) : null;
    return r;
  }, (r) => `Reset to #${info.seq}.` + (r.chain
    ? ` The undone events are kept as the chain ${r.chain.name} (number ${r.chain.n}; Replay below, or narr replay ${r.chain.name}).`
    : r.undone && r.undone.length ? " The undone events were already kept in an abandoned chain." : ""));
}

async function chainNamed(ref) {
  // A chain by the name narr chains and narr reset give it (the library's), not by its ref.
  try {
    const chains = await api("/api/chains");
    return (chains.items || chains).find((c) => c.ref === ref) || null;
  } catch (err) { return null; }
}

async function revertEvent() {
  const commit = state.event;
  const info = state.story.find((x) => x.commit === commit);
  if (!commit || !info) return;
  const seen = { head: state.head, branch: state.branch };
  const lines = [`A new event will undo the changes event #${info.seq}, “${info.content}”, diffused ` +
    "(the hand edits it recorded were yours, and stay).",
    "The events after it stay. If a later event has changed a field it wrote, nothing is undone " +
    "and those fields are named."];
  if (!(await confirmAction("Revert this event?", lines, "Revert"))) return;
  await act(() => api("/api/revert", { method: "POST", body: { rev: commit }, seen }),
    (r) => `Reverted #${info.seq}: ${short(r.content || (r.event && r.event.content) || "", 80)}`);
}

async function replayChain(chain, reuse) {
  const seen = { head: state.head, branch: state.branch };
  const how = reuse
    ? "each makes the changes it made when it was recorded (no diffuser runs); a field changed since stops the replay, and it says which"
    : "each is diffused afresh against the world as it now stands";
  const lines = [`The ${chain.length} event${chain.length === 1 ? "" : "s"} of the abandoned chain “${chain.name}” ` +
    `will run again, one by one, on top of the current story line; ${how}.`, "The chain itself stays kept."];
  if (!(await confirmAction("Replay this chain?", lines, "Replay"))) return;
  await act(() => api("/api/replay", { method: "POST", body: { chain: String(chain.n), reuse }, seen }),
    () => `Replayed chain ${chain.n}${reuse ? " as recorded" : ""}.`);
}

/* --- story lines: switch, create, merge, set-aside edits ---------------------------------- */

async function loadLines() {
  let data;
  try { data = await api("/api/studio/lines"); } catch (err) {
    if (!(err instanceof ApiError && err.offline)) $("lines-out").textContent = problemText(err);
    return;
  }
  state.lines = data;
  $("branches").replaceChildren(...data.branches.map((b) => el("li", { class: b.current ? "current" : "", "data-branch": b.name },
    el("span", {}, `${b.name}${b.current ? " (current)" : ""}`),
    b.current ? null : el("button", { type: "button", class: "switch", "aria-label": `switch to ${b.name}`,
      onclick: () => switchTo(b.name, false) }, "Switch"),
    b.current || !data.branch ? null : el("button", { type: "button", class: "merge", "aria-label": `Merge in ${b.name} (into ${data.branch})…`,
      onclick: () => mergeBranch(b.name) }, "Merge in…"),
    el("span", { class: "what" }, short(b.content, 70)))));
  renderMerge(data.merge);
  $("set-asides").replaceChildren(...(data.set_aside.length ? data.set_aside.map((e) => el("li", { "data-ref": e.ref },
    el("div", {}, `${e.n}. ${e.reason || "set aside"}${e.created_at ? `, ${e.created_at}` : ""}${e.restored_at ? " (restored once)" : ""}`),
    el("div", { class: "tag" }, e.changes.map((c) => `${nameOf(c.target)} ${c.field || "(whole node)"}`).join(", ") +
      (e.raw_files.length ? ` · files: ${e.raw_files.join(", ")}` : "")),
    e.remote ? null : el("div", { class: "row" },
      el("button", { type: "button", class: "restore", onclick: () => restoreEdits(e, false) }, "Restore"),
      el("button", { type: "button", class: "drop", onclick: () => dropEdits(e) }, "Drop…"))))
    : [el("li", { class: "tag" }, "none")]));
  document.body.dataset.linesReady = String(Date.now());
}

async function lineAction(work, describe) {
  const out = $("lines-out");
  try {
    const result = await work();
    out.className = "ok";
    out.textContent = describe(result || {});
  } catch (err) {
    out.className = "error";
    out.textContent = problemText(err);
  }
  out.dataset.head = state.head || "";  // true of this HEAD: said no more once the story moves
  await loadEvents();
  loadWorld();
  loadPending();
  if (state.selected) refreshNode();
}

async function switchTo(name, create) {
  const seen = { head: state.head, branch: state.branch };
  const edited = (state.lines && state.lines.edited_files) || 0;
  let setAside = false;
  if (edited) {
    const lines = [`${edited} file${edited === 1 ? "" : "s"} hold${edited === 1 ? "s" : ""} hand edits not yet recorded.`,
      `They will be set aside (kept under refs/narr/edits/, listed below), so they do not land on ${name}; ` +
      "restore them where you want them."];
    if (!(await confirmAction(`Switch to ${name}?`, lines, "Set aside and switch"))) return;
    setAside = true;
  }
  await lineAction(() => api("/api/switch", { method: "POST", body: { name, set_aside: setAside, create }, seen }),
    (r) => `Now on ${r.branch}: “${short(r.content, 60)}”.` + (r.set_aside ? ` Hand edits set aside as ${r.set_aside.split("/").pop()}.` : ""));
}

async function createLine() {
  const name = $("branch-new").value.trim();
  if (!name) return;
  const button = $("branch-create");
  if (button.disabled) return;
  button.disabled = true;
  try {
    if ($("branch-switch").checked) await switchTo(name, true);
    else {
      await lineAction(() => api("/api/branches", { method: "POST", body: { name } }),
        (r) => `Made the story line ${r.name || name} at the current event.`);
    }
    // Only the name sent: one typed while the line was made (the page refreshes after the
    // answer is shown) is the writer's next, not this one's to clear.
    if ($("branch-new").value.trim() === name) $("branch-new").value = "";
  } finally { button.disabled = false; }
}

async function mergeBranch(name) {
  const seen = { head: state.head, branch: state.branch };
  const lines = [`The events of ${name} that ${state.branch} lacks join it, node by node.`,
    "Where both changed the same field, the merge stops and shows each conflict here, to be resolved " +
    "(ours, theirs or a value) before it finishes; nothing is committed until then."];
  if (!(await confirmAction(`Merge ${name} into ${state.branch}?`, lines, "Merge"))) return;
  await lineAction(() => api("/api/merge", { method: "POST", body: { branch: name }, seen }),
    (r) => (r.fast_forward ? `${state.branch} now stands where ${name} does.` : `Merged ${name}.`));
}

function renderMerge(merge) {
  $("merge-panel").hidden = !merge;
  if (!merge) return;
  $("merge-title").textContent = `Merging ${merge.branch}: ${merge.unresolved} of ${merge.conflicts.length} conflicts to resolve`;
  $("merge-conflicts").tBodies[0].replaceChildren(...merge.conflicts.map((c) => {
    const value = el("input", { "aria-label": `a value for ${c.node} ${c.field}`, placeholder: "JSON or text",
      value: c.resolved && "resolution" in c ? JSON.stringify(c.resolution) : null });
    const chosen = c.resolved ? ("resolution" in c ? short(c.resolution, 40) : "(removed)") : null;
    return el("tr", { "data-node": c.node, "data-field": c.field, class: c.resolved ? "resolved" : "" },
      el("td", {}, nodeName(c.node, { link: false })), el("td", {}, c.field || "(whole node)"),
      el("td", { class: "old" }, "ours" in c ? short(c.ours, 80) : "—"),
      el("td", { class: "new" }, "theirs" in c ? short(c.theirs, 80) : "—"),
      el("td", {},
        el("button", { type: "button", class: "take-ours", onclick: () => resolveConflict(c, { take: "ours" }) }, "Ours"),
        el("button", { type: "button", class: "take-theirs", onclick: () => resolveConflict(c, { take: "theirs" }) }, "Theirs"),
        value,
        el("button", { type: "button", class: "take-value", onclick: () => {
          let v = value.value;
          try { v = JSON.parse(v); } catch (err) { /* a bare word is text, as narr resolve --value */ }
          resolveConflict(c, { value: v });
        } }, "Set"),
        chosen !== null ? el("div", { class: "tag" }, `chosen: ${chosen}`) : null));
  }));
  $("merge-continue").disabled = merge.unresolved > 0;
}

async function resolveConflict(c, how) {
  await lineAction(() => api("/api/merge/resolve", { method: "POST", body: { node: c.node, field: c.field, ...how } }),
    () => `Resolved ${nameOf(c.node)} ${c.field || "(whole node)"}.`);
}

async function restoreEdits(item, force) {
  await lineAction(() => api("/api/edits/restore", { method: "POST", body: { which: item.ref, force } }),
    (r) => `Restored ${r.changes.length} change${r.changes.length === 1 ? "" : "s"} as hand edits.`).then(async () => {
    const out = $("lines-out");
    if (out.className === "error" && !force && out.textContent.includes("changed since")) {
      const again = await confirmAction("Let the set-aside values win?",
        [out.textContent, "Your current hand edits are set aside first (nothing is lost)."], "Restore anyway");
      if (again) await restoreEdits(item, true);
    }
  });
}

async function dropEdits(item) {
  const lines = [`The set-aside hand edits “${item.reason || item.ref}” will be forgotten for good:`,
    item.changes.map((c) => `${nameOf(c.target)} ${c.field || "(whole node)"}`).join(", ") || "(files)"];
  if (!(await confirmAction("Drop these set-aside edits?", lines, "Drop"))) return;
  await lineAction(() => api("/api/edits/drop", { method: "POST", body: { which: item.ref } }),
    () => "Dropped the set-aside edits.");
}

async function act(work, describe) {
  const out = $("compose-out");
  try {
    const result = await work();
    out.replaceChildren(el("p", { class: "ok" }, describe(result || {})));
  } catch (err) {
    out.replaceChildren(el("p", { class: "error" }, problemText(err)));
  }
  state.event = null;
  $("event-body").hidden = true;
  $("event-empty").hidden = false;
  await loadEvents();
  loadWorld();
}

/* --- the composer ------------------------------------------------------------------------- */

async function loadPending() {
  let status;
  try { status = await api("/api/status"); } catch (err) { return; }
  state.pending = status.edits || [];
  await withNames(state.pending.map((e) => e.target));
  const items = state.pending.map((e) => el("li", {}, nodeName(e.target), ` ${e.field || "(whole node)"}: `,
    el("span", { class: "old" }, "old_value" in e ? short(e.old_value, 60) : "—"), " → ",
    el("span", { class: "new" }, "new_value" in e ? short(e.new_value, 60) : "—")));
  $("pending").replaceChildren(...(items.length ? items : [el("li", { class: "tag" }, "none")]));
  $("world-status").textContent = state.pending.length
    ? `${state.pending.length} hand edit${state.pending.length === 1 ? "" : "s"} waiting to be recorded` : "";
}

const CHANGE_HINTS = { set: "Lin Yuan.state.mood=wary", unset: "Lin Yuan.state.wounds",
  relate: "苏晴:suspects:林远", unrelate: "Su Qing:distrusts:Lin Yuan", expire: "Old Zhou" };

function composeBody(dryRun) {
  // The event row's arguments, as any program sends them
  const body = { content: $("compose-text").value.trim(), close_scene: $("compose-close").checked, dry_run: dryRun,
    story_time: $("compose-at").value.trim() || null, text: $("compose-prose").value.trim() || null,
    diffuser: $("compose-diffuser").value || null, accept: [...state.accept] };
  for (const c of state.changes) (body[c.kind] = body[c.kind] || []).push(c.spec);
  return body;
}

function renderChanges() {
  $("compose-changes").replaceChildren(...state.changes.map((c, i) => el("li", {},
    el("span", { class: "tag" }, c.kind), el("code", {}, c.spec),
    el("button", { type: "button", "aria-label": `remove the change ${c.kind} ${c.spec}`,
      onclick: () => { state.changes.splice(i, 1); renderChanges(); } }, "×"))));
}

function addChange() {
  const spec = $("change-spec").value.trim();
  if (!spec) return;
  state.changes.push({ kind: $("change-kind").value, spec });
  $("change-spec").value = "";
  renderChanges();
}

async function loadDiffusers() {
  let data;
  try { data = await api("/api/studio/diffusers"); } catch (err) { return; }
  const select = $("compose-diffuser");
  const chosen = select.value;
  select.replaceChildren(el("option", { value: "" }, data.default ? `the default (${data.default})` : "the default"),
    ...data.names.map((n) => el("option", { value: n }, n)));
  select.value = chosen;
}

function clearComposer() {
  // Recorded: the next event starts blank (the diffuser chosen stays chosen).
  $("compose-text").value = "";
  $("compose-prose").value = "";
  $("compose-at").value = "";
  $("compose-close").checked = false;
  state.changes = [];
  state.accept = new Set();
  renderChanges();
}

function renderHeld(held, recorded, content) {
  if (!held.length) return [];
  const items = held.map((h) => {
    const what = `${h.n}. “${short(h.words, 120)}”: ${short(h.reason, 160)}` +
      (h.flags && h.flags.length ? ` (${h.flags.filter((f, i) => i % 2 === 1).join(", ")})` : "");
    if (!recorded) {
      return el("li", {}, el("label", {}, el("input", { type: "checkbox", class: "accept", value: String(h.n),
        checked: state.accept.has(h.n), onchange: (evt) => {
          if (evt.target.checked) state.accept.add(h.n); else state.accept.delete(h.n);
        } }), " apply: ", what));
    }
    return el("li", {}, what, " ", el("button", { type: "button", class: "apply", "data-held": String(h.n),
      onclick: (evt) => applyHeld(h, evt.target) }, "Apply"));
  });
  const note = recorded
    ? "Not written with the event. Apply records each as an event of its own, with exactly its changes."
    : "Tick the ones to apply, then Dry run again or Record.";
  return [el("h4", {}, "Held back (narr is not sure the words say so)"),
    el("p", { class: "tag" }, note), el("ul", { class: "held" }, ...items)];
}

async function applyHeld(held, button) {
  const FLAGS = { "--set": "set", "--unset": "unset", "--relate": "relate", "--unrelate": "unrelate", "--expire": "expire" };
  const body = { content: held.words, diffuser: "explicit" };
  for (let i = 0; i + 1 < (held.flags || []).length; i += 2) {
    const key = FLAGS[held.flags[i]];
    if (key) (body[key] = body[key] || []).push(held.flags[i + 1]);
  }
  button.disabled = true;
  try {
    const result = await api("/api/events", { method: "POST", body });
    button.replaceWith(el("span", { class: "ok" }, `applied: “${short(result.content, 60)}” recorded`));
    await loadEvents();
    loadWorld();
  } catch (err) {
    button.disabled = false;
    button.after(el("p", { class: "error" }, problemText(err)));
  }
}

function renderProposal(result, recorded) {
  const parts = [];
  const changes = [...(result.edits || []).map((c) => ["hand edit", c]), ...(result.diffusions || []).map((c) => ["change", c])];
  parts.push(el("h4", {}, recorded ? `Recorded: ${result.content}` : "What would change (dry run)"));
  if (changes.length) {
    parts.push(el("table", { class: "changes" }, el("thead", {}, el("tr", {}, el("th", {}, "node"), el("th", {}, "field"),
      el("th", {}, "old"), el("th", {}, "new"))),
    el("tbody", {}, ...changes.map(([kind, c]) => el("tr", {}, el("td", { title: kind },
      kind === "hand edit" ? "✎ " : "", nodeName(c.target)),
      el("td", {}, c.field || "(whole node)"), el("td", { class: "old" }, cell(c, "old_value")),
      el("td", { class: "new" }, cell(c, "new_value")))))));
  } else parts.push(el("p", {}, "Nothing would change."));
  const proposal = result.proposal || {};
  const refused = proposal.refused || [];
  if (refused.length) {
    parts.push(el("h4", {}, "Refused"), el("ul", {}, ...refused.map((r) => el("li", {}, short(r, 300)))));
  }
  const notes = proposal.notes || [];
  if (notes.length) {
    parts.push(el("h4", {}, "The diffuser's notes (clauses matched and skipped, and why)"),
      el("ul", {}, ...notes.map((n) => el("li", {}, short(n, 300)))));
  }
  if (result.expired && Object.keys(result.expired).length) {
    parts.push(el("p", {}, `Ends: ${Object.entries(result.expired).map(([k, v]) => `${k} (${v})`).join(", ")}`));
  }
  for (const w of result.warnings || []) parts.push(el("p", { class: "error" }, short(w, 300)));
  parts.push(...renderHeld(proposal.held || [], recorded, result.content));
  $("compose-out").replaceChildren(...parts);
}

async function compose(dryRun) {
  const body = composeBody(dryRun);
  if (!body.content.trim()) {
    $("compose-out").replaceChildren(el("p", { class: "error" }, "Say what happens first."));
    return;
  }
  if (state.composing) return;  // a double click records once
  state.composing = true;
  for (const b of ["compose-dry", "compose-record"]) $(b).disabled = true;
  $("compose-out").replaceChildren(el("p", {}, dryRun ? "asking the diffuser…" : "recording…"));
  try {
    const result = await api("/api/events", { method: "POST", body });
    await withNames([...(result.edits || []), ...(result.diffusions || [])].map((c) => c.target));
    renderProposal(result, !dryRun);
    if (!dryRun) {
      clearComposer();
      await loadEvents();
      loadWorld();
    }
  } catch (err) {
    $("compose-out").replaceChildren(el("p", { class: "error" }, problemText(err)));
    if (!dryRun) loadProblems();  // a failed event is kept, with Retry and Drop
  } finally {
    state.composing = false;
    for (const b of ["compose-dry", "compose-record"]) $(b).disabled = false;
  }
}

/* --- start -------------------------------------------------------------------------------- */

function debounce(fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

/* A double click is one press. Its second press would save or create twice once the first
   write has answered (a slow machine takes longer between the two than the server needs), or,
   where the first closed a dialog, land on whatever lay beneath it: a node of the graph, which
   takes presses, not clicks, opens then. So the second press of a button, of the graphs, or
   of anything other than what the first pressed goes nowhere; a double click on text still
   selects a word, and text fields keep theirs. */
let firstPressed = null;

function onePressPerDoubleClick(evt) {
  if (evt.detail < 2) {
    if (evt.type === "mousedown") firstPressed = evt.target;
    return;
  }
  const target = evt.target;
  if (!(target instanceof Element) || target.closest("input, textarea, select")) return;
  if (target === firstPressed && !target.closest("button, summary, .graph")) return;
  evt.preventDefault();
  evt.stopImmediatePropagation();
}

/* --- the theme: as the system says, or as the writer chose (kept in this browser) ----------- */

function applyTheme(choice) {
  if (choice) document.documentElement.dataset.theme = choice;
  else delete document.documentElement.dataset.theme;
  restyleGraphs();
}

function setTheme(choice) {
  try {
    if (choice) localStorage.setItem("narr-theme", choice); else localStorage.removeItem("narr-theme");
  } catch (err) { /* not kept */ }
  applyTheme(choice);
}

function start() {
  timings.start = performance.now();
  let theme = "";
  try { theme = localStorage.getItem("narr-theme") || ""; } catch (err) { theme = ""; }
  $("theme").value = theme;
  applyTheme(theme);
  $("theme").addEventListener("change", () => setTheme($("theme").value));
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => restyleGraphs());
  for (const type of ["mousedown", "mouseup", "click"]) window.addEventListener(type, onePressPerDoubleClick, true);
  $("new-name").maxLength = MAX_NAME;
  const fs = $("filter-layer");
  const filtered = () => { state.focus = null; state.expand = new Set(); loadWorld(); };
  for (const layer of LAYERS) {
    fs.append(el("label", {}, el("input", { type: "checkbox", value: layer, checked: true, onchange: filtered }),
      el("span", { class: `dot ${layer}`, "aria-hidden": "true" }), layer));
  }
  const lc = $("filter-lifecycle");
  for (const l of LIFECYCLES) lc.append(el("option", { value: l }, l));
  $("filter-kind").addEventListener("change", filtered);
  lc.addEventListener("change", filtered);
  $("search").addEventListener("input", debounce(filtered, 200));
  for (const [tab, , name] of TABS) {
    $(tab).addEventListener("click", () => showView(name));
    $(tab).addEventListener("keydown", tabKeys);
  }
  $("graph-depth").addEventListener("change", () => { state.depth = Number($("graph-depth").value); loadWorld(); });
  $("graph-group").addEventListener("change", () => { state.group = $("graph-group").value; state.expand = new Set(); loadWorld(); });
  $("graph-overview").addEventListener("click", () => { state.focus = null; loadWorld(); });
  $("graph-arrange").addEventListener("click", rearrange);
  $("graph-unpin").addEventListener("click", unpinAll);
  $("book-order").addEventListener("change", renderManuscript);
  $("node-form").addEventListener("submit", (evt) => { evt.preventDefault(); saveForm(); });
  $("node-form-undo").addEventListener("click", undoForm);
  $("time-slider").addEventListener("change", onSlide);
  $("time-now").addEventListener("click", () => {
    $("time-slider").value = $("time-slider").max;
    onSlide();
  });
  $("node-save").addEventListener("click", () => saveNode());
  $("field-form").addEventListener("submit", (evt) => { evt.preventDefault(); addField(); });
  $("relation-form").addEventListener("submit", (evt) => { evt.preventDefault(); submitRelation(); });
  $("relation-target").addEventListener("input", () => suggestTargets($("relation-target")));
  $("relation-cancel").addEventListener("click", () => {
    endRelationEdit();
    for (const f of ["relation-type", "relation-target", "relation-attrs"]) $(f).value = "";
  });
  $("new-node-open").addEventListener("click", openNewNode);
  $("new-node-cancel").addEventListener("click", () => $("new-node").close());
  $("new-node-form").addEventListener("submit", (evt) => { evt.preventDefault(); createNode(); });
  $("node-end").addEventListener("click", openEndNode);
  $("end-node-cancel").addEventListener("click", () => $("end-node").close());
  $("end-node-form").addEventListener("submit", (evt) => { evt.preventDefault(); endNode(); });
  $("node-revert").addEventListener("click", () => { $("node-editor").value = state.loadedNode; $("node-message").textContent = ""; });
  $("ask-why").addEventListener("click", () => ask("why"));
  $("ask-history").addEventListener("click", () => ask("history"));
  $("ask-brief").addEventListener("click", () => ask("brief"));
  $("event-reset").addEventListener("click", resetToEvent);
  $("branch-form").addEventListener("submit", (evt) => { evt.preventDefault(); createLine(); });
  $("merge-continue").addEventListener("click", () => lineAction(
    () => api("/api/merge/continue", { method: "POST", body: {} }), (r) => `Merged ${r.branch || ""}.`));
  $("merge-abort").addEventListener("click", async () => {
    if (!(await confirmAction("Abort the merge?", ["The merge stops; the world stays as it was before it began."], "Abort"))) return;
    lineAction(() => api("/api/merge/abort", { method: "POST", body: {} }), () => "The merge was aborted.");
  });
  $("event-revert").addEventListener("click", revertEvent);
  $("compose-dry").addEventListener("click", () => compose(true));
  $("change-add").addEventListener("click", addChange);
  $("compose-text").addEventListener("input", () => { state.accept = new Set(); });  // numbers of other words
  $("change-spec").addEventListener("keydown", (evt) => { if (evt.key === "Enter") { evt.preventDefault(); addChange(); } });
  $("change-kind").addEventListener("change", () => { $("change-spec").placeholder = CHANGE_HINTS[$("change-kind").value]; });
  $("compose-more").addEventListener("toggle", () => { if ($("compose-more").open) loadDiffusers(); });
  $("compose-record").addEventListener("click", () => compose(false));
  // The world view first; the story line (for the time slider) and the hand edits after it.
  window.addEventListener("beforeunload", (evt) => {
    if (unsaved()) { evt.preventDefault(); evt.returnValue = ""; }
  });
  api("/api/studio/where").then((where) => applyStamp(where)).catch(() => {}).finally(listen);
  loadWorld().finally(() => {
    api("/api/graph/events").then((data) => { state.eventsData = data; setStory(data.events); }).catch(() => {});
    loadPending();
    loadProblems();
  });
}

document.addEventListener("DOMContentLoaded", start);
