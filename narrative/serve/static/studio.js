/* narr studio: both graphs of a narr world in the browser, over the JSON API of `narr serve`.
   Plain JavaScript, no build step; the only library is the vendored Cytoscape.js. */
"use strict";

// narr's vocabulary, as the server gives it in the page (narrative/ids.py defines it once)
const words = (name) => (document.body.dataset[name] || "").split(" ").filter(Boolean);
const LAYERS = words("layers");
const LIFECYCLES = words("lifecycles");
const COLOURS = { character: "#d9534f", item: "#e0a030", ambient: "#3fa7c9", background: "#4f9d5a" };
const SHAPES = { permanent: "ellipse", scene: "round-rectangle", event: "diamond" };

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
  // Shown again as it now stands, unless the editor holds text not yet saved: that is never dropped.
  if (editorDirty()) {
    $("node-message").className = "notice";
    $("node-message").textContent = "The world changed while the editor held unsaved text. Your text is kept: " +
      "save it to write it over the file, or discard it to see the file as it now is.";
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

function nodeLabel(n) {
  return n.aliases && n.aliases.length ? `${n.name}\n${n.aliases[0]}` : n.name;
}

/* --- names first: a node is shown by its name, its id only beside it ----------------------- */

const CJK = /[\u3400-\u9fff\uf900-\ufaff]/;
const langOf = (text) => (CJK.test(text) ? "zh" : null);

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
  return el("button", { type: "button", class: "link", "data-node": id, onclick: () => pickNode(id),
    "aria-label": `${n.name}${n.aliases && n.aliases.length ? ` (${n.aliases[0]})` : ""}, open it` }, ...parts);
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
  for (const [tab, panel, name] of [["tab-world", "world-view", "world"], ["tab-events", "event-view", "events"]]) {
    $(tab).setAttribute("aria-selected", String(name === view));
    $(tab).tabIndex = name === view ? 0 : -1;  // one tab stop for the tab list (roving)
    $(panel).hidden = name !== view;
  }
  if (view === "events") {
    loadEvents().then(() => eventCy && eventCy.resize());
  } else if (worldCy) {
    worldCy.resize();
    worldCy.fit(undefined, 30);
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
  if (editorDirty()) {
    const discard = await confirmAction("Discard your unsaved text?",
      [`The file editor holds changes to ${state.selected} that are not saved; the past cannot be edited.`,
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

let worldCy = null;

function worldStyle() {
  return [
    { selector: "node", style: {
      "label": "data(label)", "text-wrap": "wrap", "text-max-width": "110px", "font-size": LABEL_PX,
      "min-zoomed-font-size": LABEL_PX,
      "text-valign": "bottom", "text-margin-y": 3, "width": 22, "height": 22,
      "font-family": "Noto Sans, Noto Sans CJK SC, sans-serif",
      "background-color": (n) => COLOURS[n.data("layer")] || "#888",
      "shape": (n) => SHAPES[n.data("lifecycle")] || "ellipse",
      "border-width": 1, "border-color": "#fff" } },
    { selector: "node[?edited]", style: { "border-width": 3, "border-style": "dashed", "border-color": "#7b3fbf" } },
    { selector: "node.focus", style: { "width": 32, "height": 32, "border-width": 3, "border-color": "#223", "font-weight": "bold" } },
    { selector: "node:selected", style: { "overlay-opacity": 0.15, "overlay-color": "#224" } },
    { selector: "node.cursor", style: CURSOR_STYLE },
    { selector: "edge", style: {
      "width": 1.2, "line-color": "#b8bccc", "target-arrow-color": "#b8bccc", "target-arrow-shape": "triangle",
      "curve-style": "bezier", "arrow-scale": 0.8, "label": "data(type)", "font-size": LABEL_PX, "color": "#556",
      "min-zoomed-font-size": LABEL_PX,
      "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 0.8 } },
    // where someone stands, who holds a thing: reference fields, drawn apart from relations
    { selector: 'edge[kind = "reference"]', style: { "line-style": "dashed" } },
    ...HIGHLIGHT_STYLE,
  ];
}

/* --- labels that read, positions that stay, neighbours on hover ------------------------- */

// Labels are drawn at the page's own text size or larger: zoomed out too far for that, they are
// hidden (min-zoomed-font-size), never shrunk. The node pointed at and its neighbours (class
// "named") are shown whatever the zoom, and at that size too: below zoom 1 their font grows as the
// zoom shrinks. The stylesheet holds one rule per band of zoom (fixed, written once); a zoom into
// another band moves the few named elements to its class, nothing else is restyled.
const LABEL_PX = parseFloat(getComputedStyle(document.documentElement).fontSize) || 14;
const ZOOM_BANDS = [1, 0.8, 0.64, 0.5, 0.4, 0.32, 0.25, 0.2, 0.16, 0.125, 0.1];  // to the graphs' minZoom
const BAND_CLASSES = ZOOM_BANDS.map((_, i) => `zb${i}`).join(" ");
const CURSOR_STYLE = { "border-width": 4, "border-color": "#2a6ad0", "border-style": "solid",
  "underlay-color": "#2a6ad0", "underlay-opacity": 0.25, "underlay-padding": 6 };
const HIGHLIGHT_STYLE = [
  { selector: ".named", style: { "min-zoomed-font-size": 0, "z-index": 10 } },
  // a band's font drawn at the band's lowest zoom is the page's text size; at any zoom in it, larger
  ...ZOOM_BANDS.map((low, i) => ({ selector: `.named.zb${i}`, style: {
    "font-size": Math.ceil((LABEL_PX / low) * 10) / 10, "text-max-width": `${Math.round(110 / low)}px` } })),
  { selector: ".faded", style: { "opacity": 0.22 } },
];

function zoomBand(zoom) {
  const i = ZOOM_BANDS.findIndex((low) => zoom >= low - 1e-9);
  return `zb${i < 0 ? ZOOM_BANDS.length - 1 : i}`;
}

function nameThem(cy, eles) {
  eles.addClass(`named ${zoomBand(cy.zoom())}`);
}

function unname(cy) {
  cy.elements(".named").removeClass(`named ${BAND_CLASSES}`);
}

function hoverNeighbours(cy) {
  cy.on("mouseover", "node", (evt) => {
    const near = evt.target.closedNeighborhood();
    cy.batch(() => {
      cy.elements().not(near).addClass("faded");
      nameThem(cy, near);
    });
  });
  cy.on("mouseout", "node", () => cy.batch(() => { cy.elements().removeClass("faded"); unname(cy); }));
}

/* --- the graphs by keyboard: a cursor over the drawn nodes ------------------------------- */

// A canvas has no elements to tab to: the graph itself takes focus, arrow keys move a cursor
// (drawn as a ring, said in words below the graph) through its nodes in the order given, and
// Enter or Space opens the one under it as a click would.
function graphKeys(cy, container, { order, open, describe }) {
  const line = $(`${container.id}-cursor`);
  let at = null;  // the id under the cursor
  const show = (node) => {
    cy.batch(() => {
      cy.nodes(".cursor").removeClass("cursor");
      unname(cy);
      if (node) { node.addClass("cursor"); nameThem(cy, node); }
    });
    at = node ? node.id() : null;
    line.textContent = node ? describe(node) : "";
    if (!node) return;
    const box = cy.extent();
    const p = node.position();
    if (p.x < box.x1 || p.x > box.x2 || p.y < box.y1 || p.y > box.y2) cy.center(node);
  };
  container.addEventListener("focus", () => {
    const nodes = order();
    const here = at && nodes.find((n) => n.id() === at);
    show(here || nodes[0] || null);
  });
  container.addEventListener("blur", () => {
    cy.nodes(".cursor").removeClass("cursor");
    unname(cy);
    line.textContent = "";
  });
  container.addEventListener("keydown", (evt) => {
    const nodes = order();
    if (!nodes.length) return;
    let i = nodes.findIndex((n) => n.id() === at);
    if (evt.key === "ArrowRight" || evt.key === "ArrowDown") i = Math.min(i + 1, nodes.length - 1);
    else if (evt.key === "ArrowLeft" || evt.key === "ArrowUp") i = Math.max(i - 1, 0);
    else if (evt.key === "Home") i = 0;
    else if (evt.key === "End") i = nodes.length - 1;
    else if ((evt.key === "Enter" || evt.key === " ") && i >= 0) {
      evt.preventDefault();
      open(nodes[i].id());
      return;
    } else return;
    evt.preventDefault();
    show(nodes[Math.max(i, 0)]);
  });
}

const SHOWN_BAND = new WeakMap();  // each graph's band now (cy.scratch costs ~20 ms a call, at every fit)

function labelState(cy) {
  const zoom = cy.zoom();
  cy.container().dataset.labels = zoom < 1 ? "hidden" : "shown";
  const band = zoomBand(zoom);
  if (SHOWN_BAND.get(cy) === band) return;
  SHOWN_BAND.set(cy, band);
  const named = cy.elements(".named");
  if (named.length) cy.batch(() => named.removeClass(BAND_CLASSES).addClass(band));
}

function positionsKey() { return `narr-positions:${document.body.dataset.world || ""}`; }

function storedPositions() {
  try { return JSON.parse(localStorage.getItem(positionsKey()) || "{}"); } catch (err) { return {}; }
}

function viewKey(focus) {
  const f = filters();
  return focus ? `focus:${focus}` : `overview:${f.layer}|${f.kind}|${f.lifecycle}|${f.q}`;
}

function keepPositions(key, cy) {
  // Kept in this browser, per world and per view, so a graph looks as it did last time.
  const all = storedPositions();
  const here = all[key] || {};
  cy.nodes().forEach((n) => { const p = n.position(); here[n.id()] = [Math.round(p.x), Math.round(p.y)]; });
  delete all[key];
  all[key] = here;
  const keys = Object.keys(all);
  for (const k of keys.slice(0, Math.max(0, keys.length - 40))) delete all[k];  // the last 40 views
  try { localStorage.setItem(positionsKey(), JSON.stringify(all)); } catch (err) { /* full: not kept */ }
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
  const params = { ...filters(), at: state.at, around: state.focus, depth: state.focus ? 2 : null };
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
  timings.worldRender = performance.now() - started;
  document.body.dataset.worldReady = String(ticket);
}

function fillFacets(facets) {
  const kind = $("filter-kind");
  const chosen = kind.value;
  const kinds = Object.keys(facets.kind || {}).filter(Boolean).sort();
  const have = [...kind.options].map((o) => o.value).slice(1);
  if (have.join("\u0000") !== kinds.join("\u0000")) {
    kind.replaceChildren(el("option", { value: "" }, "any"),
      ...kinds.map((k) => el("option", { value: k }, `${k} (${facets.kind[k]})`)));
    kind.value = kinds.includes(chosen) ? chosen : "";
  }
}

function renderNodeList(data) {
  if (state.at === null) {
    learnNames(Object.fromEntries(data.nodes.map((n) => [n.id, { name: n.name, aliases: n.aliases, layer: n.layer }])));
  }
  const list = $("node-list");
  const items = data.nodes.map((n) => {
    const alias = n.aliases && n.aliases.length ? n.aliases.join(" · ") : "";
    const label = `${n.name}${alias ? ` (${alias})` : ""}, ${n.layer} ${n.kind}, ${n.lifecycle}` +
      `${n.edited ? `, hand-edited (${n.edited})` : ""}, id ${n.id}`;
    return el("li", {}, el("button", {
      type: "button", "data-id": n.id, "aria-label": label,
      "aria-current": n.id === state.selected ? "true" : null,
      onclick: () => pickNode(n.id),
    }, el("span", { class: "dot", style: `background:${COLOURS[n.layer] || "#888"}` }), n.name,
    alias ? el("span", { class: "alias", lang: langOf(alias) }, alias) : null,
    el("span", { class: "tag" }, n.kind),
    n.edited ? el("span", { class: "tag edited" }, n.edited) : null));
  });
  list.replaceChildren(...items);
  const shown = data.nodes.length;
  $("list-summary").textContent = data.truncated
    ? `${shown} of ${data.matched} matching nodes listed (of ${data.total}); search to narrow down`
    : `${data.matched} of ${data.total} nodes`;
}

function renderWorldGraph(data) {
  state.drawn = data.graph.nodes.length;
  const elements = [];
  for (const n of data.graph.nodes) {
    elements.push({ group: "nodes", data: { id: n.id, label: nodeLabel(n), layer: n.layer, kind: n.kind,
      lifecycle: n.lifecycle, edited: n.edited || null, degree: n.degree },
      classes: n.id === data.focus ? "focus" : "" });
  }
  data.graph.edges.forEach((e, i) => elements.push({ group: "edges",
    data: { id: `e${i}`, source: e.source, target: e.target, type: e.type, kind: e.kind } }));
  if (!worldCy) {
    worldCy = cytoscape({ container: $("world-graph"), elements: [], style: worldStyle(),
      minZoom: 0.1, maxZoom: 1.5 });  // (labels grow with the zoom: at most half as big again)
    worldCy.on("tap", "node", (evt) => pickNode(evt.target.id()));
    worldCy.on("zoom", () => labelState(worldCy));
    worldCy.on("dragfree", "node", () => keepPositions(state.viewKey, worldCy));
    hoverNeighbours(worldCy);
    graphKeys(worldCy, $("world-graph"), {
      order: () => worldCy.nodes().toArray(),  // as drawn: the focus and its rings, or best connected first
      open: (id) => pickNode(id),
      describe: (n) => `${n.data("label")}: ${n.data("layer")} ${n.data("kind") || ""}, ` +
        `${n.degree(false)} relations drawn. Enter opens it.`,
    });
    window.narrStudio.worldCy = worldCy;
  }
  worldCy.batch(() => {
    worldCy.elements().remove();
    worldCy.add(elements);
  });
  const focus = data.focus;
  const layout = focus
    ? { name: "concentric", animate: false, minNodeSpacing: 28,
        concentric: (n) => (n.id() === focus ? 100 : 100 - n.data("ring")), levelWidth: () => 1 }
    : { name: "concentric", animate: false, minNodeSpacing: 24,
        concentric: (n) => n.data("degree") || 0, levelWidth: () => 2 };
  if (focus) {
    // rings by distance from the focus (breadth-first over the drawn edges)
    const ring = { [focus]: 0 };
    const queue = [focus];
    while (queue.length) {
      const id = queue.shift();
      worldCy.getElementById(id).neighborhood("node").forEach((m) => {
        if (ring[m.id()] === undefined) { ring[m.id()] = ring[id] + 1; queue.push(m.id()); }
      });
    }
    worldCy.nodes().forEach((n) => n.data("ring", ring[n.id()] === undefined ? 9 : ring[n.id()]));
  }
  state.viewKey = viewKey(focus);
  const known = storedPositions()[state.viewKey] || {};
  const drawn = worldCy.nodes();
  if (drawn.length && drawn.every((n) => known[n.id()])) {
    worldCy.layout({ name: "preset", positions: (n) => ({ x: known[n.id()][0], y: known[n.id()][1] }) }).run();
  } else {
    worldCy.layout(layout).run();
    keepPositions(state.viewKey, worldCy);
  }
  worldCy.fit(undefined, 30);
  labelState(worldCy);
  const names = data.graph.nodes.map((n) => n.name).join(", ");
  $("world-graph").setAttribute("aria-label",
    `The relation network: ${data.graph.nodes.length} nodes drawn` + (names ? `: ${short(names, 400)}` : ""));
  const when = state.at ? ` as of ${$("time-label").textContent}` : "";
  $("graph-note").textContent = focus
    ? `The neighbourhood of ${focus} (2 relations away)${when}. ${data.graph.nodes.length} nodes, ${data.graph.edges.length} relations.`
    : `${data.graph.nodes.length} best-connected of ${data.matched} selected nodes${when}; pick one to see its neighbourhood.`;
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
      el("button", { type: "button", class: "retry", "aria-label": `retry “${short(f.content, 60)}”`,
        onclick: () => retryFailed(f) }, "Retry"),
      el("button", { type: "button", class: "drop", "aria-label": `drop “${short(f.content, 60)}”`,
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
  await act(() => api("/api/studio/failed/retry", { method: "POST", body: { key: item.key } }),
    (r) => `Recorded: ${short(r.content || item.content, 80)}`);
  loadProblems();
}

async function dropFailed(item) {
  const lines = [`The failed event “${short(item.content, 120)}” will be forgotten for good.`,
    "Its words are not kept anywhere else: copy them first if you may want them."];
  if (!(await confirmAction("Drop this failed event?", lines, "Drop"))) return;
  await act(() => api("/api/studio/failed/drop", { method: "POST", body: { key: item.key } }),
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

function tabKeys(evt) {
  // The ARIA tabs pattern: arrows move between the tabs (and show them), Home and End too.
  const tabs = ["tab-world", "tab-events"];
  const at = tabs.indexOf(evt.target.id);
  let next = null;
  if (evt.key === "ArrowRight" || evt.key === "ArrowDown") next = (at + 1) % tabs.length;
  else if (evt.key === "ArrowLeft" || evt.key === "ArrowUp") next = (at - 1 + tabs.length) % tabs.length;
  else if (evt.key === "Home") next = 0;
  else if (evt.key === "End") next = tabs.length - 1;
  if (next === null) return;
  evt.preventDefault();
  showView(next === 0 ? "world" : "events");
  $(tabs[next]).focus();
}

async function selectNode(id, scroll = true, again = false) {
  if (!again && id !== state.selected && editorDirty()) {
    const discard = await confirmAction("Discard your unsaved text?",
      [`The file editor holds changes to ${state.selected} that are not saved.`,
        "Cancel to go back to them (and save them); Discard to drop them and open the other node."], "Discard");
    if (!discard) return false;
  }
  state.selected = id;
  for (const b of document.querySelectorAll("#node-list button")) {
    b.setAttribute("aria-current", String(b.dataset.id === id));
  }
  $("inspector-empty").hidden = true;
  $("inspector-body").hidden = false;
  if (!again) $("node-message").textContent = "";
  let node;
  try {
    const view = await api(`/api/studio/node/${encodeURIComponent(id)}${query({ at: state.at })}`);
    learnNames(view.names);
    node = view.node;
    node.__links = view.links || {};
    node.__file = view.file;
  } catch (err) {
    $("node-title").textContent = id;
    $("node-sub").textContent = "";
    $("node-fields").replaceChildren();
    $("node-relations").replaceChildren();
    $("node-editor").value = "";
    $("node-message").textContent = problemText(err);
    return;
  }
  if (state.selected !== id) return;
  if (again && editorDirty()) return refreshNode();  // text typed while it loaded stays
  showNode(node);
  showNodeProblems();
  if (scroll) $("inspector").scrollTop = 0;
  return true;
}

function showNode(node) {
  const links = node.__links || {};
  if ("__file" in node) state.loadedFile = node.__file;
  delete node.__links;
  delete node.__file;
  const aliases = (node.aliases || []).join(" · ");
  $("node-title").replaceChildren(node.name || node.id,
    aliases ? el("span", { class: "alias", lang: langOf(aliases) }, aliases) : "");
  $("node-sub").textContent = `${node.id} · ${node.layer} · ${node.kind} · ${node.lifecycle || "permanent"}`;
  const past = state.at !== null;
  const dl = $("node-fields");
  const rows = [];
  if (node.summary !== undefined) rows.push([["summary"], node.summary]);
  for (const group of ["state", "traits"]) {
    for (const [k, v] of Object.entries(node[group] || {})) rows.push([[group, k], v]);
  }
  dl.replaceChildren(...rows.flatMap(([path, v]) => {
    const label = path.join(".");
    const named = links[label];  // a field holding a node's id: the node, by name, as a link
    const value = past ? (named ? nodeName(named) : short(v, 200)) : el("input", {
      value: typeof v === "string" ? v : JSON.stringify(v), "aria-label": `${node.name || node.id} ${label}`,
      "data-path": label, onchange: (evt) => setField(path, typeof v === "string", evt.target.value) });
    return [el("dt", {}, label), el("dd", {}, value, !past && named ? el("div", { class: "names" }, "→ ", nodeName(named)) : null)];
  }));
  $("field-form").hidden = past;
  const rel = $("node-relations");
  const items = [];
  for (const [type, targets] of Object.entries(node.relations || {})) {
    for (const [target, attrs] of Object.entries(targets || {})) {
      const extra = attrs && Object.keys(attrs).length ? ` ${short(attrs, 60)}` : "";
      const name = nameOf(target);
      const alias = ((state.names || {})[target] || {}).aliases || [];
      items.push(el("li", { class: "relation", "data-type": type, "data-target": target },
        el("button", { type: "button", "aria-label": `${type} ${name}${alias.length ? ` (${alias[0]})` : ""}`,
          onclick: () => pickNode(target) },
        `${type} → ${name}`, alias.length ? el("span", { class: "alias", lang: langOf(alias[0]) }, alias[0]) : null,
        name !== target ? el("span", { class: "id" }, target) : null, extra),
      past ? null : el("button", { type: "button", class: "edit", "aria-label": `edit ${type} → ${name}`,
        title: "change this relation's type, target or attributes", onclick: () => editRelation(type, target, attrs) }, "✎"),
      past ? null : el("button", { type: "button", class: "remove", "aria-label": `remove ${type} → ${name}`,
        title: "remove this relation (a hand edit)", onclick: () => changeRelations(type, target, false) }, "×")));
    }
  }
  $("relation-form").hidden = past;
  $("node-end").hidden = past;
  endRelationEdit();
  rel.replaceChildren(...(items.length ? items : [el("li", {}, "none")]));
  const text = JSON.stringify(node, null, 2);
  state.loadedNode = text;
  const editor = $("node-editor");
  editor.value = text;
  editor.readOnly = past;
  $("node-save").disabled = past;
  $("node-revert").disabled = past;
  if (past) $("node-message").textContent = "This is the node as it was then; move the slider to now to edit it.";
}

function loadedNode() {
  // A field or relation changed in place applies to the file as loaded, never to unsaved editor text.
  if (editorDirty()) {
    $("node-message").className = "error";
    $("node-message").textContent = "The file editor holds unsaved text: save it or discard it first " +
      "(a change here would otherwise save it too, or drop it).";
    return null;
  }
  return JSON.parse(state.loadedNode);
}

function editedNode() {
  try {
    return JSON.parse($("node-editor").value);
  } catch (err) {
    $("node-message").className = "error";
    $("node-message").textContent = `The node file in the editor is not JSON: ${err.message}`;
    return null;
  }
}

function setField(path, asText, text) {
  // As narr event --set: a value that parses as JSON is JSON, else text (always text for a text field).
  let value = text;
  if (!asText) {
    try { value = JSON.parse(text); } catch (err) { value = text; }
  }
  const node = loadedNode();
  if (!node) return;
  let here = node;
  for (const key of path.slice(0, -1)) {
    if (typeof here[key] !== "object" || here[key] === null) here[key] = {};
    here = here[key];
  }
  here[path[path.length - 1]] = value;
  saveNode(JSON.stringify(node, null, 2));
}

function changeRelations(type, target, add, attrs, replaces) {
  // One relation changed in the node's file as it stands (a hand edit); the target by name.
  if (editorDirty()) { loadedNode(); return; }
  const id = state.selected;
  const message = $("node-message");
  message.className = "";
  message.textContent = "saving…";
  const body = { node: id, type, target, remove: !add };
  if (attrs !== undefined) body.attrs = attrs;
  if (replaces) body.replaces = replaces;
  return api("/api/studio/relation", { method: "POST", body }).then(async (answer) => {
    const r = answer.relation;
    await selectNode(id, false, true);
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

const suggestTargets = debounce(async () => {
  const q = $("relation-target").value.trim();
  if (!q) return;
  let data;
  try { data = await api(`/api/graph/world${query({ q, limit: 20, draw: 0 })}`); } catch (err) { return; }
  const options = [];
  for (const n of data.nodes) {
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
  const body = { layer: $("new-layer").value, name: $("new-name").value, kind: $("new-kind").value,
    aliases: $("new-aliases").value, lifecycle: $("new-lifecycle").value, summary: $("new-summary").value };
  if ($("new-pronouns").value) body.pronouns = $("new-pronouns").value;
  if (!body.name.trim()) { $("new-node-message").textContent = "A node needs a name."; return; }
  button.disabled = true;  // a double click makes one node
  try {
    const made = await api("/api/studio/nodes", { method: "POST", body });
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

function openEndNode() {
  const id = state.selected;
  if (!id) return;
  const name = $("node-title").firstChild ? $("node-title").firstChild.textContent : id;
  $("end-node-text").textContent = `An event ends ${name} (${id}): it leaves the world from then on, ` +
    "and stays in the history (the time slider shows it before).";
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
  try {
    const result = await api("/api/studio/compose", { method: "POST", body: { content, expire: [id] } });
    $("end-node").close();
    $("node-message").className = "ok";
    $("node-message").textContent = `Recorded “${short(result.content || content, 80)}”: ${id} has ended.`;
    await loadEvents();
    loadWorld();
    selectNode(id, false, true);
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
      const again = await confirmAction("The file changed elsewhere", [err.message,
        "Your text is kept. Write it over the file as it now is, or cancel (then discard your text to see the file)."],
      "Write over it");
      if (again) {
        state.saving = false;
        return saveNode(body, true);
      }
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

let eventCy = null;

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
    "aria-label": `event ${e.seq}: ${e.content}`, onclick: () => selectEvent(e.commit).then(() => $("event-title").focus()),
  }, el("span", { class: "seq" }, `#${e.seq}`), e.content, el("span", { class: "kind" }, e.kind)))));
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

function renderEventGraph(data) {
  const events = data.events.slice().reverse();
  const index = {};
  events.forEach((e, i) => { index[e.commit] = i; });
  const elements = events.map((e, i) => ({ group: "nodes",
    data: { id: e.commit, label: `#${e.seq} ${short(e.content, 40)}`, kind: e.kind },
    position: { x: i * 150, y: 0 } }));
  for (let i = 1; i < events.length; i++) {
    elements.push({ group: "edges", classes: "spine",
      data: { id: `s${i}`, source: events[i - 1].commit, target: events[i].commit } });
  }
  data.edges.forEach((e, i) => {
    if (index[e.source] === undefined || index[e.target] === undefined) return;
    elements.push({ group: "edges", classes: "cause", data: { id: `c${i}`, source: e.source, target: e.target, label: e.label } });
  });
  data.chains.forEach((c, k) => {
    const base = c.base && index[c.base] !== undefined ? index[c.base] : 0;
    const id = `chain-${c.n}`;
    elements.push({ group: "nodes", classes: "chain",
      data: { id, label: `chain ${c.n}: ${short(c.name, 40)} (${c.length})` },
      position: { x: base * 150 + 75, y: 110 + 70 * (k % 4) } });
    if (c.base && index[c.base] !== undefined) {
      elements.push({ group: "edges", classes: "branch", data: { id: `b${k}`, source: c.base, target: id } });
    }
  });
  if (!eventCy) {
    eventCy = cytoscape({ container: $("event-graph"), elements: [], minZoom: 0.1, maxZoom: 3,
      style: [
        { selector: "node", style: { "label": "data(label)", "text-wrap": "wrap", "text-max-width": "130px",
          "font-size": LABEL_PX, "min-zoomed-font-size": LABEL_PX, "text-valign": "bottom", "text-margin-y": 4,
          "background-color": "#446", "width": 18, "height": 18,
          "font-family": "Noto Sans, Noto Sans CJK SC, sans-serif" } },
        { selector: "node[kind = 'genesis']", style: { "background-color": "#4f9d5a", "shape": "round-rectangle" } },
        { selector: "node.chain", style: { "background-color": "#bbb", "shape": "round-rectangle", "color": "#777" } },
        { selector: "node:selected", style: { "background-color": "#e0a030" } },
        { selector: "node.cursor", style: CURSOR_STYLE },
        { selector: "edge.spine", style: { "width": 2, "line-color": "#ccd", "curve-style": "straight" } },
        { selector: "edge.branch", style: { "width": 1, "line-style": "dashed", "line-color": "#bbb", "curve-style": "straight" } },
        { selector: "edge.cause", style: { "width": 1.5, "line-color": "#d9534f", "target-arrow-color": "#d9534f",
          "target-arrow-shape": "triangle", "curve-style": "unbundled-bezier", "control-point-distances": [-60],
          "control-point-weights": [0.5], "label": "data(label)", "font-size": LABEL_PX, "min-zoomed-font-size": LABEL_PX, "color": "#a33" } },
        ...HIGHLIGHT_STYLE,
      ] });
    eventCy.on("zoom", () => labelState(eventCy));
    hoverNeighbours(eventCy);
    window.narrStudio.eventCy = eventCy;
    eventCy.on("tap", "node", (evt) => {
      if (!evt.target.hasClass("chain")) selectEvent(evt.target.id());
    });
    graphKeys(eventCy, $("event-graph"), {
      order: () => eventCy.nodes().not(".chain").toArray(),  // oldest first, as drawn
      open: (id) => selectEvent(id).then(() => $("event-title").focus()),
      describe: (n) => `${n.data("label")}. Enter opens it.`,
    });
  }
  eventCy.batch(() => { eventCy.elements().remove(); eventCy.add(elements); });
  eventCy.layout({ name: "preset" }).run();
  // A long story line is wide: show its newest events, as many as fit with their labels at the
  // page's text size; pan or zoom out for the rest.
  const fits = Math.max(1, Math.floor(($("event-graph").clientWidth || 600) / 170));
  const recent = eventCy.collection(events.slice(-Math.min(6, fits)).map((e) => eventCy.getElementById(e.commit)));
  eventCy.fit(recent.length ? recent : undefined, 40);
  if (eventCy.zoom() > 1.2) { eventCy.zoom(1.2); eventCy.center(recent.length ? recent : undefined); }
  if (eventCy.zoom() < 1 && recent.length) { eventCy.zoom(1); eventCy.center(recent.last()); }
  labelState(eventCy);
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
    b.current || !data.branch ? null : el("button", { type: "button", class: "merge", "aria-label": `merge ${b.name} into ${data.branch}`,
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
  await lineAction(() => api("/api/studio/switch", { method: "POST", body: { name, set_aside: setAside, create }, seen }),
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
      await lineAction(() => api("/api/studio/branch", { method: "POST", body: { name } }),
        (r) => `Made the story line ${r.name || name} at the current event.`);
    }
    $("branch-new").value = "";
  } finally { button.disabled = false; }
}

async function mergeBranch(name) {
  const seen = { head: state.head, branch: state.branch };
  const lines = [`The events of ${name} that ${state.branch} lacks join it, node by node.`,
    "Where both changed the same field, the merge stops and shows each conflict here, to be resolved " +
    "(ours, theirs or a value) before it finishes; nothing is committed until then."];
  if (!(await confirmAction(`Merge ${name} into ${state.branch}?`, lines, "Merge"))) return;
  await lineAction(() => api("/api/studio/merge", { method: "POST", body: { branch: name }, seen }),
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
  await lineAction(() => api("/api/studio/merge/resolve", { method: "POST", body: { node: c.node, field: c.field, ...how } }),
    () => `Resolved ${nameOf(c.node)} ${c.field || "(whole node)"}.`);
}

async function restoreEdits(item, force) {
  await lineAction(() => api("/api/studio/edits/restore", { method: "POST", body: { which: item.ref, force } }),
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
  await lineAction(() => api("/api/studio/edits/drop", { method: "POST", body: { which: item.ref } }),
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
  const body = { content: $("compose-text").value, close_scene: $("compose-close").checked, dry_run: dryRun,
    at: $("compose-at").value.trim() || null, text: $("compose-prose").value.trim() || null,
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
    const result = await api("/api/studio/compose", { method: "POST", body });
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
    const result = await api("/api/studio/compose", { method: "POST", body });
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

function start() {
  timings.start = performance.now();
  for (const type of ["mousedown", "mouseup", "click"]) window.addEventListener(type, onePressPerDoubleClick, true);
  const fs = $("filter-layer");
  for (const layer of LAYERS) {
    fs.append(el("label", {}, el("input", { type: "checkbox", value: layer, checked: true,
      onchange: () => { state.focus = null; loadWorld(); } }),
    el("span", { class: "dot", style: `background:${COLOURS[layer]}` }), layer));
  }
  const lc = $("filter-lifecycle");
  for (const l of LIFECYCLES) lc.append(el("option", { value: l }, l));
  $("filter-kind").addEventListener("change", () => { state.focus = null; loadWorld(); });
  lc.addEventListener("change", () => { state.focus = null; loadWorld(); });
  $("search").addEventListener("input", debounce(() => { state.focus = null; loadWorld(); }, 200));
  $("tab-world").addEventListener("click", () => showView("world"));
  for (const t of ["tab-world", "tab-events"]) $(t).addEventListener("keydown", tabKeys);
  $("tab-events").addEventListener("click", () => showView("events"));
  $("time-slider").addEventListener("change", onSlide);
  $("time-now").addEventListener("click", () => {
    $("time-slider").value = $("time-slider").max;
    onSlide();
  });
  $("node-save").addEventListener("click", () => saveNode());
  $("field-form").addEventListener("submit", (evt) => {
    evt.preventDefault();
    const path = $("field-path").value.trim().split(".").filter(Boolean);
    if (path.length) setField(path, false, $("field-value").value);
  });
  $("relation-form").addEventListener("submit", (evt) => { evt.preventDefault(); submitRelation(); });
  $("relation-target").addEventListener("input", suggestTargets);
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
    () => api("/api/studio/merge/continue", { method: "POST", body: {} }), (r) => `Merged ${r.branch || ""}.`));
  $("merge-abort").addEventListener("click", async () => {
    if (!(await confirmAction("Abort the merge?", ["The merge stops; the world stays as it was before it began."], "Abort"))) return;
    lineAction(() => api("/api/studio/merge/abort", { method: "POST", body: {} }), () => "The merge was aborted.");
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
    if (editorDirty()) { evt.preventDefault(); evt.returnValue = ""; }
  });
  api("/api/studio/where").then((where) => applyStamp(where)).catch(() => {}).finally(listen);
  loadWorld().finally(() => {
    api("/api/graph/events").then((data) => { state.eventsData = data; setStory(data.events); }).catch(() => {});
    loadPending();
    loadProblems();
  });
}

document.addEventListener("DOMContentLoaded", start);
