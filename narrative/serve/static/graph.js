/* narr studio: the two graphs, drawn so a writer can read them.

   The relation network is laid out by fCoSE (vendor/cytoscape-fcose.js), a force-directed
   layout that leaves room for each label; the same world draws the same way each time (the
   layout's random numbers come from a seed made of the node ids), a node dragged stays where
   it was put (pinned, the others settling round it) and both are kept in the browser.

   Labels never overlap. After every layout, zoom or pan they are placed one by one in order
   of importance (what the pointer or the keyboard is on and its neighbours first, then the
   focus, then the best connected), each at the first of four places round its node (below,
   above, right, left) where it meets no label already placed, no other node and not the
   graph's edge; a label with no such place is not drawn until there is room (zoom in, or
   point at the node: its whole name is then the graph's tooltip). Labels are never drawn
   smaller than the page's text: zoomed out, they are drawn larger in the graph's own units,
   so fewer fit. Relation names are shown the same way, on hover or from close zoom.

   A selection too big to draw (a world of ten thousand nodes) comes as clusters, by layer,
   kind or place, sized by how many nodes they hold; a click opens one, its best connected
   nodes drawn in its place. */
"use strict";

cytoscape.use(cytoscapeFcose);

const LABEL_PX = parseFloat(getComputedStyle(document.documentElement).fontSize) || 14;
const SHAPES = { permanent: "ellipse", scene: "round-rectangle", event: "diamond" };
const PLACES = ["lb", "lt", "lr", "ll"];  // below, above, right, left of its node
const PLACE_CLASSES = `${PLACES.join(" ")} ln`;
const EDGE_LABEL_ZOOM = 1.15;  // relation names shown from this zoom on (and on hover)
const ZOOM_BANDS = [1, 0.8, 0.64, 0.5, 0.4, 0.32, 0.25, 0.2, 0.16, 0.125, 0.1];  // to minZoom
const LABEL_CHARS = 26;  // a name longer than this is cut with an ellipsis in the graph
const HIDDEN = 100000;  // a label's minimum drawn size that hides it
const SETTLED_MOST = 60;  // nodes laid out in full by fCoSE; beyond, its quick (spectral) pass alone
const PROOF_MOST = 30;  // nodes settled at fCoSE's slow cooling; up to SETTLED_MOST, its default

/* --- colours from the page's theme (light or dark) ------------------------------------- */

const probe = document.createElement("span");

function themeColour(name) {
  if (!probe.isConnected) { probe.hidden = true; document.body.append(probe); }
  probe.style.color = `var(${name})`;
  return getComputedStyle(probe).color;
}

function palette() {
  const layers = {};
  for (const layer of LAYERS) layers[layer] = themeColour(`--${layer}`);
  return { layers, text: themeColour("--text"), muted: themeColour("--muted"), bg: themeColour("--panel"),
    edge: themeColour("--edge"), edited: themeColour("--edited"), ring: themeColour("--focus"),
    cause: themeColour("--cause"), spine: themeColour("--line"), chain: themeColour("--chain"),
    selected: themeColour("--selected") };
}

function layerColour(layer) { return themeColour(`--${layer}`) || themeColour("--muted"); }

/* --- names cut for a label ------------------------------------------------------------- */

function cutName(text, most = LABEL_CHARS) {
  // CJK characters are twice as wide: a Chinese name is cut at half the count.
  const chars = [...(text || "")];
  let width = 0;
  for (let i = 0; i < chars.length; i++) {
    width += CJK.test(chars[i]) ? 2 : 1;
    if (width > most) return chars.slice(0, i).join("").trimEnd() + "…";
  }
  return chars.join("");
}

function graphLabel(n) {
  // One line, the alias in the other script after the name (林远 beside Lin Yuan): a label of
  // two lines was drawn cut in half by the renderer's label cache after a zoom.
  const name = cutName(n.name);
  return n.aliases && n.aliases.length ? `${name} · ${cutName(n.aliases[0], 12)}` : name;
}

/* --- labels that never overlap ---------------------------------------------------------- */

const LABELS = new WeakMap();  // per graph: { band, first, pointed, timer }
const BAND_CLASSES = ZOOM_BANDS.map((_, i) => `zb${i}`).join(" ");

function zoomBand(cy) {
  // The band of zooms the graph is in: its labels' size is one rule of the stylesheet per band
  // (a class), so the renderer's caches see the change (a size computed by a function is not).
  const zoom = cy.zoom();
  const i = ZOOM_BANDS.findIndex((low) => zoom >= low - 1e-9);
  return `zb${i < 0 ? ZOOM_BANDS.length - 1 : i}`;
}

function bandStyles() {
  // At a band's lowest zoom its labels are drawn at the page's text size; within it, larger.
  return ZOOM_BANDS.map((low, i) => ({ selector: `.zb${i}`,
    style: { "font-size": Math.ceil((LABEL_PX / Math.min(low, 1)) * 10) / 10 } }));
}

function labelsOf(cy) {
  if (!LABELS.has(cy)) LABELS.set(cy, { band: null, first: null, pointed: null, timer: null });
  return LABELS.get(cy);
}

// A label's box, worked out afresh: the renderer's kept boxes lag behind a class just changed.
const LABEL_BOX = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, useCache: false };

function boxesMeet(a, b, pad) {
  return a[0] < b[2] + pad && b[0] < a[2] + pad && a[1] < b[3] + pad && b[1] < a[3] + pad;
}

function placeLabels(cy, first, pointed) {
  // ``first``: the elements to name before any other (what the pointer or the keyboard is on,
  // and its neighbours); ``pointed``: the node itself, named even where its label must lie over
  // other nodes (never over another label: it is placed first).
  const own = labelsOf(cy);
  if (first !== undefined) { own.first = first; own.pointed = pointed || null; }
  const band = zoomBand(cy);
  if (band !== own.band || cy.elements(`.${band}`).length !== cy.elements().length) {
    own.band = band;
    cy.batch(() => cy.elements().removeClass(BAND_CLASSES).addClass(band));  // the labels' size here
  }
  const zoom = cy.zoom();
  const view = cy.extent();
  const pad = 3 / zoom;
  const inset = 2 / zoom;
  const nodes = cy.nodes(":visible");
  const leading = own.first ? own.first.filter((e) => e.inside()) : cy.collection();
  const must = own.pointed && own.pointed.inside() ? own.pointed : null;
  cy.startBatch();
  cy.elements().removeClass(PLACE_CLASSES);
  cy.edges().removeClass("el");
  nodes.addClass("lb");
  cy.endBatch();
  const bodies = nodes.map((n) => {
    const b = n.boundingBox({ includeLabels: false, includeOverlays: false, useCache: false });
    return [b.x1, b.y1, b.x2, b.y2, n];
  });
  const placed = [];
  const fits = (box, self) => box[0] >= view.x1 + inset && box[1] >= view.y1 + inset
    && box[2] <= view.x2 - inset && box[3] <= view.y2 - inset
    && !placed.some((p) => boxesMeet(p, box, pad))
    && !bodies.some((b) => b[4] !== self && boxesMeet(b, box, 0));
  const rank = (n) => -(n.data("rank") || 0);
  const ordered = [...(must ? [must] : []), ...leading.nodes().not(must || cy.collection()).toArray(),
    ...nodes.not(leading).sort((a, b) => rank(a) - rank(b) || (a.id() < b.id() ? -1 : 1)).toArray()];
  const chosen = new Map();
  for (const n of ordered) {
    const bb = n.boundingBox(LABEL_BOX);
    if (!(bb.w > 0)) continue;
    const p = n.position();
    const hw = n.outerWidth() / 2;
    const hh = n.outerHeight() / 2;
    const gap = Math.max(bb.y1 - (p.y + hh), 0);
    const candidates = {
      lb: [bb.x1, bb.y1, bb.x2, bb.y2],
      lt: [bb.x1, p.y - hh - gap - bb.h, bb.x2, p.y - hh - gap],
      lr: [p.x + hw + gap, p.y - bb.h / 2, p.x + hw + gap + bb.w, p.y + bb.h / 2],
      ll: [p.x - hw - gap - bb.w, p.y - bb.h / 2, p.x - hw - gap, p.y + bb.h / 2],
    };
    let where = PLACES.find((place) => fits(candidates[place], n));
    if (!where && must && n.same(must)) {
      const inView = (b) => b[0] >= view.x1 && b[1] >= view.y1 && b[2] <= view.x2 && b[3] <= view.y2;
      where = PLACES.find((place) => inView(candidates[place])) || "lb";
    }
    chosen.set(n, where || "ln");
    if (where) placed.push(candidates[where]);
  }
  // relation names: those of the node pointed at first, the rest from close zoom
  const edgesFirst = leading.edges();
  const edgeOrder = [...edgesFirst.toArray(), ...(zoom >= EDGE_LABEL_ZOOM ? cy.edges(":visible").not(edgesFirst).toArray() : [])];
  cy.startBatch();
  for (const [n, where] of chosen) if (where !== "lb") n.removeClass("lb").addClass(where);
  cy.endBatch();
  const shown = [];
  for (const e of edgeOrder) {
    e.addClass("el");
    const bb = e.boundingBox(LABEL_BOX);
    const box = [bb.x1, bb.y1, bb.x2, bb.y2];
    if (bb.w > 0 && fits(box, null)) { placed.push(box); shown.push(e); } else e.removeClass("el");
  }
  // What the label boxes say once drawn, checked: any that meets another is hidden after all.
  const drawn = [];
  for (const n of ordered) {
    if (chosen.get(n) === "ln" || !chosen.has(n)) continue;
    const b = n.boundingBox(LABEL_BOX);
    const box = [b.x1, b.y1, b.x2, b.y2];
    if (drawn.some((d) => boxesMeet(d, box, 0))) { n.removeClass(PLACE_CLASSES).addClass("ln"); continue; }
    drawn.push(box);
  }
  for (const e of shown) {
    const b = e.boundingBox(LABEL_BOX);
    const box = [b.x1, b.y1, b.x2, b.y2];
    if (drawn.some((d) => boxesMeet(d, box, 0))) { e.removeClass("el"); continue; }
    drawn.push(box);
  }
  const pan = cy.pan();
  own.seen = { zoom: cy.zoom(), x: pan.x, y: pan.y };
  cy.container().dataset.labels = String(drawn.length);
  document.body.dataset.labelsPlaced = String(Number(document.body.dataset.labelsPlaced || 0) + 1);
}

function placeSoon(cy) {
  // After a zoom or a pan, once it stops; not again for the view a placement just saw (a fit
  // the page made itself fires these events too).
  const own = labelsOf(cy);
  clearTimeout(own.timer);
  own.timer = setTimeout(() => {
    const pan = cy.pan();
    if (own.seen && own.seen.zoom === cy.zoom() && own.seen.x === pan.x && own.seen.y === pan.y) return;
    placeLabels(cy);
  }, 60);
}

/* --- styles ------------------------------------------------------------------------------ */

function labelStyles() {
  const margin = 4;
  return [
    { selector: "node.lb", style: { "text-valign": "bottom", "text-halign": "center", "text-margin-y": margin, "text-margin-x": 0 } },
    { selector: "node.lt", style: { "text-valign": "top", "text-halign": "center", "text-margin-y": -margin, "text-margin-x": 0 } },
    { selector: "node.lr", style: { "text-valign": "center", "text-halign": "right", "text-margin-x": margin, "text-margin-y": 0, "text-justification": "left" } },
    { selector: "node.ll", style: { "text-valign": "center", "text-halign": "left", "text-margin-x": -margin, "text-margin-y": 0, "text-justification": "right" } },
    // A label with no room is not drawn (a size it never reaches): its text stays, as does its
    // box for the layout; set to no text instead, the renderer went on drawing the old one.
    { selector: "node.ln", style: { "min-zoomed-font-size": HIDDEN } },
    { selector: ".faded", style: { "opacity": 0.25 } },
    ...bandStyles(),
  ];
}

function worldStyle(cy) {
  const c = palette();
  const font = LABEL_PX;
  return [
    { selector: "node", style: {
      "label": "data(label)", "text-wrap": "none", "font-size": font,
      "min-zoomed-font-size": LABEL_PX - 0.5, "color": c.text, "text-valign": "bottom", "text-margin-y": 4,
      "width": 22, "height": 22, "font-family": "Noto Sans, Noto Sans CJK SC, sans-serif",
      "background-color": (n) => c.layers[n.data("layer")] || c.muted,
      "shape": (n) => SHAPES[n.data("lifecycle")] || "ellipse",
      "border-width": 1, "border-color": c.bg } },
    { selector: "node[?cluster]", style: {
      "shape": "round-rectangle", "width": (n) => 26 + 8 * Math.log2(1 + (n.data("count") || 1)),
      "height": (n) => 26 + 8 * Math.log2(1 + (n.data("count") || 1)), "border-width": 2,
      "border-style": "double", "border-color": c.text, "font-weight": "bold" } },
    { selector: "node[?edited]", style: { "border-width": 3, "border-style": "dashed", "border-color": c.edited } },
    { selector: "node.pinned", style: { "border-width": 3, "border-style": "solid", "border-color": c.text } },
    { selector: "node.focus", style: { "width": 32, "height": 32, "border-width": 3, "border-color": c.text, "font-weight": "bold" } },
    { selector: "node:selected", style: { "overlay-opacity": 0.15, "overlay-color": c.ring } },
    { selector: "node.cursor", style: { "border-width": 4, "border-color": c.ring, "border-style": "solid",
      "underlay-color": c.ring, "underlay-opacity": 0.25, "underlay-padding": 6 } },
    { selector: "edge", style: {
      "width": 1.2, "line-color": c.edge, "target-arrow-color": c.edge, "target-arrow-shape": "triangle",
      "curve-style": "bezier", "arrow-scale": 0.8, "label": "data(type)", "font-size": font, "color": c.text,
      "min-zoomed-font-size": HIDDEN, "text-background-color": c.bg, "text-background-opacity": 0.9,
      "text-background-padding": 1, "font-family": "Noto Sans, Noto Sans CJK SC, sans-serif" } },
    { selector: "edge.el", style: { "min-zoomed-font-size": LABEL_PX - 0.5 } },
    { selector: 'edge[kind = "reference"]', style: { "line-style": "dashed" } },
    { selector: 'edge[kind = "cluster"]', style: { "width": (e) => 1 + Math.log2(1 + (e.data("count") || 1)),
      "line-style": "solid", "opacity": 0.8 } },
    ...labelStyles(),
  ];
}

function eventStyle(cy) {
  const c = palette();
  const font = LABEL_PX;
  return [
    { selector: "node", style: { "label": "data(label)", "text-wrap": "none",
      "font-size": font, "min-zoomed-font-size": LABEL_PX - 0.5, "color": c.text, "text-valign": "bottom",
      "text-margin-y": 4, "background-color": c.muted, "width": 18, "height": 18,
      "font-family": "Noto Sans, Noto Sans CJK SC, sans-serif" } },
    { selector: "node[kind = 'genesis']", style: { "background-color": c.layers.background, "shape": "round-rectangle" } },
    { selector: "node.chain", style: { "background-color": c.chain, "shape": "round-rectangle", "color": c.muted } },
    { selector: "node:selected", style: { "background-color": c.selected } },
    { selector: "node.cursor", style: { "border-width": 4, "border-color": c.ring, "border-style": "solid",
      "underlay-color": c.ring, "underlay-opacity": 0.25, "underlay-padding": 6 } },
    { selector: "edge.spine", style: { "width": 2, "line-color": c.spine, "curve-style": "straight" } },
    { selector: "edge.branch", style: { "width": 1, "line-style": "dashed", "line-color": c.chain, "curve-style": "straight" } },
    { selector: "edge.cause", style: { "width": 1.5, "line-color": c.cause, "target-arrow-color": c.cause,
      "target-arrow-shape": "triangle", "curve-style": "unbundled-bezier", "control-point-distances": [-60],
      "control-point-weights": [0.5], "label": "data(label)", "font-size": font, "min-zoomed-font-size": HIDDEN,
      "color": c.cause, "text-background-color": c.bg, "text-background-opacity": 0.9 } },
    { selector: "edge.cause.el", style: { "min-zoomed-font-size": LABEL_PX - 0.5 } },
    ...labelStyles(),
  ];
}

function restyleGraphs() {
  // The theme changed: the graphs take its colours.
  if (worldCy) worldCy.style(worldStyle(worldCy));
  if (eventCy) eventCy.style(eventStyle(eventCy));
}

/* --- pointing at a node: it and its neighbours named, the rest faded ---------------------- */

function hoverNeighbours(cy, describe) {
  cy.on("mouseover", "node", (evt) => {
    const near = evt.target.closedNeighborhood();
    cy.batch(() => cy.elements().not(near).addClass("faded"));
    placeLabels(cy, near, evt.target);
    cy.container().title = describe(evt.target);
  });
  cy.on("mouseout", "node", () => {
    cy.batch(() => cy.elements().removeClass("faded"));
    placeLabels(cy, null);
    cy.container().title = "";
  });
}

/* --- the graphs by keyboard: a cursor over the drawn nodes ------------------------------- */

// A canvas has no elements to tab to: the graph itself takes focus, arrow keys move a cursor
// (drawn as a ring, said in words below the graph) through its nodes in the order given, and
// Enter or Space opens the one under it as a click would.
function graphKeys(cy, container, { order, open, describe }) {
  const line = $(`${container.id}-cursor`);
  let at = null;  // the id under the cursor
  const show = (node) => {
    cy.batch(() => cy.nodes(".cursor").removeClass("cursor"));
    at = node ? node.id() : null;
    line.textContent = node ? describe(node) : "";
    if (!node) { placeLabels(cy, null); return; }
    node.addClass("cursor");
    const box = cy.extent();
    const p = node.position();
    if (p.x < box.x1 || p.x > box.x2 || p.y < box.y1 || p.y > box.y2) cy.center(node);
    placeLabels(cy, node.closedNeighborhood(), node);
  };
  container.addEventListener("focus", () => {
    const nodes = order();
    const here = at && nodes.find((n) => n.id() === at);
    show(here || nodes[0] || null);
  });
  container.addEventListener("blur", () => {
    cy.nodes(".cursor").removeClass("cursor");
    line.textContent = "";
    placeLabels(cy, null);
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

/* --- positions and pins, kept in this browser per world and per view ---------------------- */

function stored(kind) {
  try { return JSON.parse(localStorage.getItem(`narr-${kind}:${document.body.dataset.world || ""}`) || "{}"); }
  catch (err) { return {}; }
}

function store(kind, all) {
  const keys = Object.keys(all);
  for (const k of keys.slice(0, Math.max(0, keys.length - 40))) delete all[k];  // the last 40 views
  try { localStorage.setItem(`narr-${kind}:${document.body.dataset.world || ""}`, JSON.stringify(all)); }
  catch (err) { /* full: not kept */ }
}

function keepPositions(key, cy) {
  const all = stored("positions");
  const here = all[key] || {};
  cy.nodes().forEach((n) => { const p = n.position(); here[n.id()] = [Math.round(p.x), Math.round(p.y)]; });
  delete all[key];
  all[key] = here;
  store("positions", all);
}

function pinsOf(key) { return new Set(stored("pins")[key] || []); }

function setPins(key, pins) {
  const all = stored("pins");
  delete all[key];
  if (pins.size) all[key] = [...pins];
  store("pins", all);
}

function seeded(seed, work) {
  // The layout's random numbers from a seed: the same world draws the same way each time.
  const random = Math.random;
  let s = seed >>> 0;
  Math.random = () => {
    s = (s + 0x6D2B79F5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  try { return work(); } finally { Math.random = random; }
}

function seedOf(ids) {
  let h = 2166136261;
  for (const id of ids) for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  return h >>> 0;
}

function arrange(cy, { initial, animate, pins, done }) {
  // fCoSE run at once (seeded), the pinned nodes held where they were put; then, if asked,
  // the nodes moved there in a short animation (the others settling round what was dragged).
  // Up to SETTLED_MOST nodes the layout is settled in full, leaving room for every label; a
  // bigger drawing gets fCoSE's spectral pass alone (a settled layout of 150 nodes took a
  // second of a loaded machine's time, its spectral pass a fifth of that), and a node dragged
  // in it is pinned without the others moving.
  const fixed = [...pins].map((id) => cy.getElementById(id)).filter((n) => n.length)
    .map((n) => ({ nodeId: n.id(), position: { ...n.position() } }));
  const start = new Map(cy.nodes().map((n) => [n.id(), { ...n.position() }]));
  cy.batch(() => cy.nodes().removeClass(PLACE_CLASSES).addClass("lb"));  // room for every label
  const n = cy.nodes().length;
  const full = n <= SETTLED_MOST;
  if (!full && !initial) {
    if (done) done();
    return;
  }
  const quality = !full ? "draft" : n <= PROOF_MOST || !initial ? "proof" : "default";  // (incremental needs proof)
  const layout = cy.layout({ name: "fcose", quality, randomize: initial || !full,
    animate: false, fit: false,
    nodeDimensionsIncludeLabels: true, uniformNodeDimensions: false, packComponents: true,
    nodeRepulsion: () => 12000, idealEdgeLength: () => 70 + Math.min(n, 60), edgeElasticity: () => 0.35,
    gravity: 0.3, gravityRange: 3.0, numIter: 2500, tile: true, tilingPaddingVertical: 24,
    tilingPaddingHorizontal: 24, nodeSeparation: 90, fixedNodeConstraint: fixed.length ? fixed : undefined });
  seeded(seedOf(cy.nodes().map((x) => x.id()).sort()), () => layout.run());
  const target = new Map(cy.nodes().map((x) => [x.id(), { ...x.position() }]));
  for (const f of fixed) target.set(f.nodeId, f.position);  // exactly where they were put
  if (!animate) {
    cy.nodes().positions((x) => target.get(x.id()));
    if (done) done();
    return;
  }
  cy.nodes().positions((x) => start.get(x.id()) || target.get(x.id()));
  cy.nodes().forEach((x) => { x.animate({ position: target.get(x.id()) }, { duration: 300 }); });
  setTimeout(() => { cy.nodes().positions((x) => target.get(x.id())); if (done) done(); }, 330);
}

/* --- the world view's graph --------------------------------------------------------------- */

let worldCy = null;

function worldNodeName(n) {
  return n.data("cluster") === true ? `${n.data("full")}: ${n.data("count")} nodes, a cluster (Enter or a click opens it)`
    : `${n.data("full")}${n.data("alias") ? ` (${n.data("alias")})` : ""}: ${n.data("layer")} ${n.data("kind") || ""}`;
}

function makeWorldCy() {
  worldCy = cytoscape({ container: $("world-graph"), elements: [], minZoom: 0.1, maxZoom: 2.5,
    boxSelectionEnabled: false });
  worldCy.style(worldStyle(worldCy));
  worldCy.on("tap", "node", (evt) => openGraphNode(evt.target));
  worldCy.on("zoom pan", () => placeSoon(worldCy));
  worldCy.on("grab", "node", (evt) => { state.dragging = evt.target.id(); });
  worldCy.on("dragfree", "node", (evt) => pinHere(evt.target));
  hoverNeighbours(worldCy, worldNodeName);
  graphKeys(worldCy, $("world-graph"), {
    order: () => worldCy.nodes().toArray(),  // as drawn: the focus and its rings, or best connected first
    open: (id) => openGraphNode(worldCy.getElementById(id)),
    describe: (n) => `${worldNodeName(n)}, ${n.degree(false)} relations drawn. Enter opens it.`,
  });
  window.narrStudio.worldCy = worldCy;
  window.narrStudio.placeLabels = placeLabels;
}

function openGraphNode(node) {
  if (node.data("cluster") === true) {
    state.expand.add(node.id());
    loadWorld();
  } else pickNode(node.id());
}

function pinHere(node) {
  const pins = pinsOf(state.viewKey);
  pins.add(node.id());
  setPins(state.viewKey, pins);
  node.addClass("pinned");
  arrange(worldCy, { initial: false, animate: true, pins, done: () => {
    keepPositions(state.viewKey, worldCy);
    placeLabels(worldCy);
  } });
  keepPositions(state.viewKey, worldCy);
}

function unpinAll() {
  setPins(state.viewKey, new Set());
  if (worldCy) worldCy.nodes().removeClass("pinned");
  rearrange();
}

function rearrange() {
  if (!worldCy) return;
  arrange(worldCy, { initial: true, animate: true, pins: pinsOf(state.viewKey), done: () => {
    keepPositions(state.viewKey, worldCy);
    fitWorld();
  } });
}

function fitWorld() {
  worldCy.fit(undefined, 24);
  if (worldCy.zoom() > 1.25) { worldCy.zoom(1.25); worldCy.center(); }
  placeLabels(worldCy);
}

function renderWorldGraph(data) {
  const graph = data.graph;
  state.drawn = graph.nodes.length + graph.clusters.length;
  const elements = [];
  for (const n of graph.nodes) {
    elements.push({ group: "nodes", data: { id: n.id, label: graphLabel(n), full: n.name,
      alias: n.aliases && n.aliases.length ? n.aliases[0] : "", layer: n.layer, kind: n.kind,
      lifecycle: n.lifecycle, edited: n.edited || null, degree: n.degree, rank: (n.id === data.focus ? 1e6 : 0) + (n.degree || 0),
      member: n.cluster || null },
    classes: n.id === data.focus ? "focus" : "" });
  }
  for (const c of graph.clusters) {
    elements.push({ group: "nodes", data: { id: c.key, label: `${cutName(c.label)} · ${c.count.toLocaleString()}`,
      full: c.label, cluster: true, count: c.count, layer: c.layer, lifecycle: "permanent", rank: 1e5 + c.count } });
  }
  graph.edges.forEach((e, i) => elements.push({ group: "edges",
    data: { id: `e${i}`, source: e.source, target: e.target, type: e.type, kind: e.kind } }));
  graph.cluster_edges.forEach((e, i) => elements.push({ group: "edges",
    data: { id: `k${i}`, source: e.source, target: e.target, type: `${e.count.toLocaleString()} relations`,
      kind: "cluster", count: e.count } }));
  if (!worldCy) makeWorldCy();
  worldCy.batch(() => {
    worldCy.elements().remove();
    worldCy.add(elements);
  });
  labelsOf(worldCy).first = null;
  state.viewKey = viewKey(data);
  const pins = pinsOf(state.viewKey);
  const known = stored("positions")[state.viewKey] || {};
  const drawn = worldCy.nodes();
  drawn.forEach((n) => { if (pins.has(n.id())) n.addClass("pinned"); });
  if (drawn.length && drawn.every((n) => known[n.id()])) {
    worldCy.nodes().positions((n) => ({ x: known[n.id()][0], y: known[n.id()][1] }));
  } else if (drawn.length) {
    drawn.forEach((n) => { if (known[n.id()] && pins.has(n.id())) n.position({ x: known[n.id()][0], y: known[n.id()][1] }); });
    const started = performance.now();
    arrange(worldCy, { initial: true, animate: false, pins });
    timings.layout = performance.now() - started;
    keepPositions(state.viewKey, worldCy);
  }
  const started = performance.now();
  fitWorld();
  timings.labels = performance.now() - started;
}

/* --- the event view's graph ---------------------------------------------------------------- */

let eventCy = null;

function makeEventCy() {
  eventCy = cytoscape({ container: $("event-graph"), elements: [], minZoom: 0.1, maxZoom: 3,
    boxSelectionEnabled: false });
  eventCy.style(eventStyle(eventCy));
  eventCy.on("zoom pan", () => placeSoon(eventCy));
  hoverNeighbours(eventCy, (n) => n.data("full") || n.data("label"));
  window.narrStudio.eventCy = eventCy;
  eventCy.on("tap", "node", (evt) => {
    if (!evt.target.hasClass("chain")) selectEvent(evt.target.id());
  });
  graphKeys(eventCy, $("event-graph"), {
    order: () => eventCy.nodes().not(".chain").toArray(),  // oldest first, as drawn
    open: (id) => selectEvent(id).then(() => $("event-title").focus()),
    describe: (n) => `${n.data("full") || n.data("label")}. Enter opens it.`,
  });
}

function renderEventGraph(data) {
  const events = data.events.slice().reverse();
  const index = {};
  events.forEach((e, i) => { index[e.commit] = i; });
  const elements = events.map((e, i) => ({ group: "nodes",
    data: { id: e.commit, label: `#${e.seq} ${cutName(e.content, 24)}`, full: `#${e.seq} ${e.content}`, kind: e.kind,
      rank: i },
    position: { x: i * 160, y: 0 } }));
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
      data: { id, label: `chain ${c.n}: ${cutName(c.name, 20)} (${c.length})`, full: `chain ${c.n}: ${c.name}`, rank: -1 },
      position: { x: base * 160 + 80, y: 110 + 70 * (k % 4) } });
    if (c.base && index[c.base] !== undefined) {
      elements.push({ group: "edges", classes: "branch", data: { id: `b${k}`, source: c.base, target: id } });
    }
  });
  if (!eventCy) makeEventCy();
  eventCy.batch(() => { eventCy.elements().remove(); eventCy.add(elements); });
  labelsOf(eventCy).first = null;
  eventCy.layout({ name: "preset" }).run();
  // A long story line is wide: show its newest events, as many as fit with their labels at the
  // page's text size; pan or zoom out for the rest. A label the graph's edge would cut is not
  // drawn (placeLabels): the events at the edge are named once they are in view.
  const width = $("event-graph").clientWidth || 600;
  const fits = Math.max(1, Math.floor((width - 40) / 160));
  const recent = eventCy.collection(events.slice(-Math.min(6, fits)).map((e) => eventCy.getElementById(e.commit)));
  eventCy.fit(recent.length ? recent : undefined, 60);
  if (eventCy.zoom() > 1.2) { eventCy.zoom(1.2); eventCy.center(recent.length ? recent : undefined); }
  if (eventCy.zoom() < 1 && recent.length) {
    eventCy.zoom(1);
    const last = recent.last().renderedBoundingBox({ includeLabels: true });
    eventCy.panBy({ x: width - 24 - last.x2, y: 0 });
  }
  placeLabels(eventCy);
}
