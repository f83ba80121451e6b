/* narr studio: a node as a form. Its name, aliases and summary are text boxes, its state and
   traits labelled fields (a field holding a node's id is a name picker showing the name), the
   fields other nodes of its kind have are offered, and Save sends only the fields the writer
   changed, each with the value it had when the form was filled: the server applies them to the
   file as it now is, so another writer's change to another field stays, and a change to the
   same field comes back as a conflict showing both values (narrative/engine/nodeform.py). */
"use strict";

const UNSAFE_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const LONG_TEXT = 60;  // characters past which a text field is a text area

function pointerOf(...tokens) { return tokens.map((t) => `/${String(t).replace(/~/g, "~0").replace(/\//g, "~1")}`).join(""); }

function valueAt(node, ptr) {
  let here = node;
  for (const raw of ptr.split("/").slice(1)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (here === null || typeof here !== "object" || !Object.prototype.hasOwnProperty.call(here, key)) return undefined;
    here = here[key];
  }
  return here;
}

function sameJson(a, b) {
  const canon = (v) => JSON.stringify(v, (k, x) => (x && typeof x === "object" && !Array.isArray(x)
    ? Object.fromEntries(Object.keys(x).sort().map((key) => [key, x[key]])) : x));
  return canon(a) === canon(b);
}

function kindOfValue(value, ptr) {
  if ((state.offer?.references || []).includes(ptr) && (value === undefined || typeof value === "string")) return "ref";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "number") return "number";
  if (Array.isArray(value) && value.every((x) => typeof x === "string" && !x.includes("\n"))) return "list";
  if (value !== null && typeof value === "object") return "json";
  if (value === null) return "json";
  return String(value ?? "").length > LONG_TEXT || String(value ?? "").includes("\n") ? "longtext" : "text";
}

function shownValue(value, kind) {
  if (value === undefined) return "";
  if (kind === "ref") return value ? nameOf(value) : "";
  if (kind === "list") return value.join("\n");
  if (kind === "json") return JSON.stringify(value, null, 1);
  return String(value);
}

function grow(area) {
  area.rows = Math.min(12, Math.max(2, area.value.split("\n").length + Math.floor(area.value.length / 42)));
}

function fieldInput(ptr, label, value, { offered = false, kind = null } = {}) {
  const type = kind || kindOfValue(value, ptr);
  const id = `f${ptr.replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0).toString(16)}`)}`;
  const attrs = { id, "data-ptr": ptr, "data-path": ptr.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~")).join("."),
    "data-kind": type, "data-offered": offered ? "" : null, oninput: markDirty, onchange: markDirty };
  let input;
  if (type === "bool") input = el("input", { ...attrs, type: "checkbox", checked: value === true });
  else if (type === "longtext" || type === "list" || type === "json") {
    input = el("textarea", { ...attrs, spellcheck: type === "json" ? "false" : null,
      placeholder: type === "list" ? "one per line" : type === "json" ? "JSON" : null });
    input.value = shownValue(value, type);
    grow(input);
    input.addEventListener("input", () => grow(input));
  } else {
    input = el("input", { ...attrs, type: type === "number" ? "number" : "text", step: type === "number" ? "any" : null,
      list: type === "ref" ? "target-names" : null, autocomplete: "off",
      placeholder: type === "ref" ? "a name, alias or id" : offered ? "(none yet)" : null });
    input.value = shownValue(value, type);
    if (type === "ref") input.addEventListener("input", () => suggestTargets(input));
  }
  const title = type === "ref" ? " (a node, by name)" : type === "list" ? " (one per line)" : type === "json" ? " (JSON)" : "";
  const named = type === "ref" && value && (state.names || {})[value];
  return el("div", { class: `field-row${offered ? " offered" : ""}`, "data-row": ptr },
    el("label", { for: id, title: `${label}${title}` }, label, title ? el("span", { class: "sr" }, title) : null),
    input,
    offered ? null : el("button", { type: "button", class: "remove-field", "aria-label": `remove the field ${label}`,
      title: "remove this field (saved with the form)", onclick: (evt) => toggleRemoval(evt.target.closest(".field-row")) }, "×"),
    named ? el("div", { class: "names" }, "→ ", nodeName(value)) : null);
}

function toggleRemoval(row) {
  const input = row.querySelector("[data-ptr]");
  const removing = !row.classList.contains("removing");
  row.classList.toggle("removing", removing);
  input.disabled = removing;
  row.querySelector(".remove-field").textContent = removing ? "↺" : "×";
  row.querySelector(".remove-field").setAttribute("aria-label", `${removing ? "keep" : "remove"} the field ${row.querySelector("label").firstChild.textContent}`);
  markDirty();
}

function renderForm(node, offer) {
  state.loadedNodeData = JSON.parse(JSON.stringify(node));
  state.offer = offer || { fields: { state: {}, traits: {} }, references: [], relation_types: [] };
  $("conflicts").hidden = true;
  const main = $("node-main");
  const text = (ptr, label, value, long) => {
    const id = `f-${ptr.slice(1)}`;
    const input = long ? el("textarea", { id, "data-ptr": ptr, "data-path": ptr.slice(1), "data-kind": "longtext", oninput: markDirty })
      : el("input", { id, "data-ptr": ptr, "data-path": ptr.slice(1), "data-kind": "text", oninput: markDirty,
        maxlength: ptr === "/name" ? String(MAX_NAME) : null, list: ptr === "/kind" ? "kinds" : null, autocomplete: "off" });
    input.value = value || "";
    if (long) { grow(input); input.addEventListener("input", () => grow(input)); }
    return [el("label", { for: id }, label), input];
  };
  const aliases = el("textarea", { id: "f-aliases", "data-ptr": "/aliases", "data-path": "aliases", "data-kind": "list",
    placeholder: "one per line", oninput: markDirty });
  aliases.value = (node.aliases || []).join("\n");
  grow(aliases);
  const lifecycle = el("select", { id: "f-lifecycle", "data-ptr": "/lifecycle", "data-path": "lifecycle", "data-kind": "text", onchange: markDirty },
    ...LIFECYCLES.map((l) => el("option", { value: l }, l)));
  lifecycle.value = node.lifecycle || "permanent";
  main.replaceChildren(...text("/name", "Name", node.name), el("label", { for: "f-aliases" }, "Aliases"), aliases,
    ...text("/kind", "Kind", node.kind), el("label", { for: "f-lifecycle" }, "Lifecycle"), lifecycle,
    ...text("/summary", "Summary", node.summary, true));
  const groups = [];
  for (const [group, title] of [["state", "State (what events change)"], ["traits", "Traits (the baseline: events never change them)"]]) {
    const own = node[group] || {};
    const rows = Object.keys(own).sort(byShownText).map((key) => fieldInput(pointerOf(group, key), key, own[key]));
    const others = Object.entries(state.offer.fields[group] || {}).filter(([key]) => !(key in own) && !UNSAFE_KEYS.has(key))
      .sort((a, b) => b[1] - a[1] || byShownText(a[0], b[0]));
    const kind = node.kind || node.layer;
    groups.push(el("fieldset", { id: `f-${group}` }, el("legend", {}, title), ...rows,
      rows.length ? null : el("p", { class: "tag" }, "none yet"),
      others.length ? el("details", { class: "offered" }, el("summary", {}, `Fields other ${kind} nodes have (${others.length})`),
        ...others.map(([key, n]) => fieldInput(pointerOf(group, key), key, undefined,
          { offered: true, kind: state.offer.references.includes(pointerOf(group, key)) ? "ref" : "text" }))) : null));
  }
  const sections = node.sections || {};
  if (Object.keys(sections).length) {
    groups.push(el("fieldset", { id: "f-sections" }, el("legend", {}, "Sections"),
      ...Object.keys(sections).map((title) => fieldInput(pointerOf("sections", title), title, sections[title], { kind: "longtext" }))));
  }
  $("node-fields").replaceChildren(...groups);
  remember($("node-form"));
  $("relation-types").replaceChildren(...(state.offer.relation_types || []).map((t) => el("option", { value: t })));
  markDirty();
}

function byShownText(a, b) { return COLLATOR.compare(a, b); }

function readInput(input) {
  // The value the writer means by what an input shows, or throws with what is wrong.
  const kind = input.dataset.kind;
  if (kind === "bool") return input.checked;
  const text = input.value;
  if (kind === "number") {
    if (text.trim() === "") throw new Error(`${input.dataset.path}: a number, or remove the field`);
    const n = Number(text);
    if (!Number.isFinite(n)) throw new Error(`${input.dataset.path}: ${JSON.stringify(text)} is not a number`);
    return n;
  }
  if (kind === "list") return text.split("\n").map((x) => x.trim()).filter(Boolean);
  if (kind === "json") {
    try { return JSON.parse(text); } catch (err) { throw new Error(`${input.dataset.path}: not JSON (${err.message})`); }
  }
  return text;
}

function formChanges({ strict = true } = {}) {
  // Every field the writer changed: { field, old, new } (a key left out: absent), in the
  // order shown; a reference field typed by name goes with "named" (the server finds the id).
  const loaded = state.loadedNodeData;
  if (!loaded || state.at !== null) return [];
  const out = [];
  for (const input of document.querySelectorAll("#node-form [data-ptr]")) {
    const ptr = input.dataset.ptr;
    const old = valueAt(loaded, ptr);
    const row = input.closest(".field-row");
    const change = { field: ptr };
    if (old !== undefined) change.old = old;
    if (row && row.classList.contains("removing")) {
      if (old !== undefined) out.push(change);
      continue;
    }
    const shown = input.type === "checkbox" ? String(input.checked) : input.value;
    if (shown === input.dataset.initial) continue;  // as it was filled: unchanged
    let value;
    try { value = readInput(input); } catch (err) { if (strict) throw err; continue; }
    if (input.dataset.offered !== undefined && (value === "" || (Array.isArray(value) && !value.length))) continue;
    if (input.dataset.kind === "ref") {
      if (value.trim()) { change.new = value.trim(); change.named = true; } else change.new = "";
      out.push(change);
      continue;
    }
    if (old !== undefined && sameJson(old, value)) continue;
    change.new = value;
    out.push(change);
  }
  return out;
}

function formDirty() {
  try { return formChanges({ strict: false }).length > 0; } catch (err) { return true; }
}

function remember(root) {
  // What each input shows as the form is filled: a field is changed when what it shows is not
  // this any more (a name picker compares names, whatever the page has learnt since).
  for (const input of root.querySelectorAll("[data-ptr]")) {
    input.dataset.initial = input.type === "checkbox" ? String(input.checked) : input.value;
  }
}

function markDirty() {
  const n = (() => { try { return formChanges({ strict: false }).length; } catch (err) { return 0; } })();
  $("form-dirty").textContent = n ? `${n} field${n === 1 ? "" : "s"} changed, not saved` : "";
  $("node-form-undo").disabled = !n;
}

async function saveForm(force = []) {
  const id = state.selected;
  if (!id || state.at !== null || state.saving) return;  // a double click saves once
  const message = $("node-message");
  if (editorDirty()) {
    message.className = "error";
    message.textContent = "The file editor holds unsaved text: save it or discard it first " +
      "(saving the form would leave it behind the file).";
    return;
  }
  let changes;
  try { changes = formChanges(); } catch (err) {
    message.className = "error";
    message.textContent = err.message;
    return;
  }
  if (!changes.length) {
    message.className = "notice";
    message.textContent = "Nothing to save: no field was changed.";
    return;
  }
  await sendChanges({ node: id, changes, force }, changes.map((c) => c.field));
}

async function sendChanges(body, fieldsSaid) {
  const id = body.node;
  const message = $("node-message");
  message.className = "";
  message.textContent = "saving…";
  state.saving = true;
  $("node-form-save").disabled = true;
  let answer;
  try {
    answer = await api("/api/studio/fields", { method: "POST", body });
  } catch (err) {
    message.className = "error";
    message.textContent = problemText(err);
    if (err instanceof ApiError && err.status === 409 && (err.body.conflicts || []).length) {
      showConflicts(err.body.conflicts, body);
    }
    return false;
  } finally {
    state.saving = false;
    $("node-form-save").disabled = false;
  }
  $("conflicts").hidden = true;
  state.loadedNode = JSON.stringify(answer.node, null, 2);
  state.loadedFile = answer.file;
  $("node-editor").value = state.loadedNode;
  renderForm(answer.node, state.offer);  // saved: the form is the file now
  await selectNode(id, false, true);
  message.className = "ok";
  message.textContent = answer.changed.length
    ? `Saved ${answer.changed.map(fieldWords).join(", ")} in ${answer.path}: a hand edit, recorded with the next event.`
    : `Nothing to write: ${fieldsSaid.map(fieldWords).join(", ")} already ${fieldsSaid.length === 1 ? "holds" : "hold"} that.`;
  loadWorld();
  loadPending();
  loadProblems();
  return true;
}

function fieldWords(ptr) {
  return ptr.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~")).join(".");
}

function showConflicts(conflicts, body) {
  // Each field changed meanwhile: the writer's value beside the one now in the file.
  const box = $("conflicts");
  const said = (c, key) => (key in c ? short(c[key], 120) : "(none)");
  const rows = conflicts.map((c) => el("li", { "data-field": c.field },
    el("strong", {}, fieldWords(c.field)),
    el("div", {}, "yours: ", el("span", { class: "new" }, said(c, "yours"))),
    el("div", {}, "now in the file: ", el("span", { class: "old" }, said(c, "now"))),
    el("div", { class: "row" },
      el("button", { type: "button", class: "keep-mine", onclick: () => {
        body.force = [...new Set([...(body.force || []), c.field])];
        const left = conflicts.filter((x) => !body.force.includes(x.field));
        if (left.length) showConflicts(left, body); else sendChanges(body, body.changes ? body.changes.map((x) => x.field) : [c.field]);
      } }, "Keep mine"),
      el("button", { type: "button", class: "take-theirs", onclick: () => {
        takeTheirs(c, body);
        const left = conflicts.filter((x) => x !== c && !(body.force || []).includes(x.field));
        if (left.length) showConflicts(left, body);
        else { box.hidden = true; $("node-message").className = "notice"; $("node-message").textContent = "Kept what the file holds; nothing else was changed."; }
      } }, "Take theirs"))));
  box.replaceChildren(el("h3", {}, "Changed meanwhile"),
    el("p", { class: "tag" }, "Another tab or an editor changed these fields after this form was filled. Nothing was saved."),
    el("ul", {}, ...rows));
  box.hidden = false;
  box.querySelector("button").focus();
}

function takeTheirs(c, body) {
  // The file's value stands: the form shows it, as loaded, and the change is dropped.
  const now = "now" in c ? c.now : undefined;
  const loaded = state.loadedNodeData;
  const tokens = c.field.split("/").slice(1).map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
  let here = loaded;
  for (const t of tokens.slice(0, -1)) {
    if (!Object.prototype.hasOwnProperty.call(here, t) || typeof here[t] !== "object" || here[t] === null) here[t] = {};
    here = here[t];
  }
  if (now === undefined) delete here[tokens[tokens.length - 1]]; else here[tokens[tokens.length - 1]] = now;
  const input = document.querySelector(`#node-form [data-ptr="${CSS.escape(c.field)}"]`);
  if (input) {
    if (input.dataset.kind === "bool") input.checked = now === true;
    else input.value = shownValue(now, input.dataset.kind);
    input.dataset.initial = input.type === "checkbox" ? String(input.checked) : input.value;
  }
  if (body.changes) body.changes = body.changes.filter((x) => x.field !== c.field);
  if (body.edited) {
    let e = body.edited;
    for (const t of tokens.slice(0, -1)) { if (typeof e[t] !== "object" || e[t] === null) e[t] = {}; e = e[t]; }
    if (now === undefined) delete e[tokens[tokens.length - 1]]; else e[tokens[tokens.length - 1]] = now;
  }
  markDirty();
}

function undoForm() {
  if (state.loadedNodeData) renderForm(state.loadedNodeData, state.offer);
  $("node-message").textContent = "";
}

/* --- a field the node does not have yet: by name, no path to know ------------------------- */

async function addField() {
  const message = $("node-message");
  let group = $("field-group").value;
  let name = $("field-path").value.trim();
  const text = $("field-value").value;
  if (!name) return;
  for (const g of ["state", "traits", "sections"]) {  // "state.wounds" names its group itself
    if (name.startsWith(`${g}.`)) { group = g; name = name.slice(g.length + 1); }
  }
  const bad = [name, ...name.split(".")].find((t) => UNSAFE_KEYS.has(t));
  if (bad) {
    return fieldRefused(`A field cannot be called “${bad}”: a browser reads __proto__, constructor and prototype ` +
      "as part of its own machinery. Choose another name.");
  }
  if (name.includes("/")) return fieldRefused("A field's name cannot hold '/'.");
  const node = state.loadedNodeData;
  if (node && node[group] && Object.prototype.hasOwnProperty.call(node[group], name)) {
    return fieldRefused(`${state.selected} already has ${group}.${name}: change it in the form above.`);
  }
  let value = text;
  if (group !== "sections") { try { value = JSON.parse(text); } catch (err) { value = text; } }  // as narr event --set
  const ptr = pointerOf(group, name);
  if (value === "" && group !== "sections") value = "";
  const ok = await addOne({ field: ptr, new: value });
  if (ok) {
    $("field-path").value = "";
    $("field-value").value = "";
  }
}

function fieldRefused(text) {
  $("node-message").className = "error";
  $("node-message").textContent = text;
}

async function addOne(change) {
  // One field written at once (only it); the form keeps what else the writer typed.
  const id = state.selected;
  const dirty = formDirty();
  const message = $("node-message");
  try {
    const answer = await api("/api/studio/fields", { method: "POST", body: { node: id, changes: [change] } });
    state.loadedFile = answer.file;
    if (dirty) {
      const tokens = change.field.split("/").slice(1);
      const group = tokens[0];
      const key = tokens[1].replace(/~1/g, "/").replace(/~0/g, "~");
      (state.loadedNodeData[group] = state.loadedNodeData[group] || {})[key] = change.new;
      const box = $(`f-${group}`) || $("node-fields");
      const row = fieldInput(change.field, key, change.new);
      box.append(row);
      remember(row);
      state.loadedNode = JSON.stringify(answer.node, null, 2);
      $("node-editor").value = state.loadedNode;
    } else {
      await selectNode(id, false, true);
    }
    message.className = "ok";
    message.textContent = `Saved ${fieldWords(change.field)} in ${answer.path}: a hand edit, recorded with the next event.`;
    loadWorld();
    loadPending();
    return true;
  } catch (err) {
    message.className = "error";
    message.textContent = problemText(err);
    return false;
  }
}

/* --- the file editor's text, saved over a file that changed meanwhile ----------------------- */

async function applyEditorChanges(text) {
  // Only what the text changes from the node as loaded, onto the file as it now is.
  let edited;
  try { edited = JSON.parse(text); } catch (err) {
    $("node-message").className = "error";
    $("node-message").textContent = `The node file in the editor is not JSON: ${err.message}`;
    return false;
  }
  return sendChanges({ node: state.selected, base: state.loadedNodeData, edited }, []);
}
