/* narr studio: the manuscript. The story read as prose, by chapter and scene, each passage
   with the changes it made beside it and the world's names marked in it (a click opens the
   node); the same passages by story time where the times parse, else in the order told; and,
   from a node, the passages that name it. The server reads chapters from one place
   (narrative/engine/manuscript.py: chapter records, else the events). */
"use strict";

async function loadManuscript() {
  let data;
  try {
    data = await api("/api/studio/manuscript");
  } catch (err) {
    if (!(err instanceof ApiError && err.offline)) {
      $("book").replaceChildren(el("p", { class: "error" }, problemText(err)));
    }
    return;
  }
  state.book = data;
  for (const [id, name] of Object.entries(data.names || {})) {
    if (!(state.names || {})[id]) learnNames({ [id]: { name, aliases: [], layer: "" } });
  }
  renderManuscript();
  document.body.dataset.bookReady = String(Date.now());
}

function prose(pieces, tag = "p") {
  // The prose with each name of the world a button that opens its node.
  return el(tag, { class: "prose" }, ...(pieces || []).map(([text, node]) => (node
    ? el("button", { type: "button", class: "mark", "data-node": node, title: nameOf(node),
      onclick: () => openFromProse(node) }, text)
    : text)));
}

function openFromProse(node) {
  showView("world");
  pickNode(node);
}

function valueWords(value) {
  // A value as the writer reads it: a node's id as its name.
  if (typeof value === "string" && state.book && value in state.book.names) return state.book.names[value];
  return short(value, 40);
}

function changeLine(c) {
  const name = nameOf(c.target);
  if (!c.field) return "new" in c ? `${name} appears` : `${name} leaves the world`;
  const tokens = c.field.split("/").slice(1).map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (tokens[0] === "relations" && tokens.length === 3) {
    const other = nameOf(tokens[2]);
    if (!("old" in c)) return `${name} ${tokens[1]} → ${other}`;
    if (!("new" in c)) return `${name} no longer ${tokens[1]} → ${other}`;
  }
  const old = "old" in c ? valueWords(c.old) : "—";
  const now = "new" in c ? valueWords(c.new) : "—";
  const what = tokens[0] === "state" ? tokens.slice(1).join(".") : fieldWords(c.field);  // what events change
  return `${name} ${what}: ${old} → ${now}${c.by === "hand edit" ? " (hand edit)" : ""}`;
}

function passageView(p, inProse = false) {
  // In a recorded scene the scene's own prose is the text: the passage is only where a
  // sentence of it was told, named by its opening words, and what it changed.
  const changes = p.changes.map((c) => el("li", {}, changeLine(c)));
  if (p.more_changes) changes.push(el("li", { class: "tag" }, `and ${p.more_changes} more`));
  const words = p.pieces.map(([text]) => text).join("");
  return el("article", { class: `passage${p.reverted ? " reverted" : ""}${inProse ? " in-prose" : ""}`, id: `passage-${p.commit}`, "data-commit": p.commit,
    "aria-label": `Passage ${p.number}` },
  el("div", { class: "text" },
    inProse ? el("p", { class: "tag", title: words }, `${p.sentence ? `Sentence ${p.sentence}: ` : ""}“${short(words, 48)}”`) : null,
    p.told || inProse ? null : el("p", { class: "tag" }, "(the event's words: it has no narrative text)"),
    inProse ? null : prose(p.pieces),
    p.reverted ? el("p", { class: "tag" }, "Undone later by a revert.") : null),
  el("aside", { class: "made", "aria-label": `What passage ${p.number} changed` },
    el("div", { class: "when" }, el("button", { type: "button", class: "link", "data-commit": p.commit,
      onclick: () => { showView("events"); selectEvent(p.commit); } }, `#${p.number}`),
    p.story_time ? ` · ${p.story_time}` : ""),
    changes.length ? el("ul", {}, ...changes) : el("p", { class: "tag" }, "no change")));
}

function renderManuscript() {
  const data = state.book;
  if (!data) return;
  const byTime = $("book-order").value === "time";
  const out = [];
  const nav = [];
  if (!data.chapters.length) {
    out.push(el("p", { class: "tag" }, "No events yet: the manuscript grows with the story (the composer, or narr event … --text)."));
  }
  if (data.total > data.shown) {
    out.push(el("p", { class: "tag" }, `The last ${data.shown} of ${data.total} passages.`));
  }
  if (byTime) {
    out.push(...timeline(data));
  } else {
    for (const ch of data.chapters) {
      // Events told outside a recorded chapter stand where they were told, under their own heading.
      const loose = data.source === "records" ? "Told outside a chapter" : "The story so far";
      const title = (ch.heading || (ch.title ? `Chapter ${ch.number}: ${ch.title}` : ch.recorded ? `Chapter ${ch.number}` : loose))
        + (ch.line ? ` (from ${ch.line})` : "");
      const cid = ch.recorded ? `chapter-${ch.number}` : `told-${ch.number}`;
      nav.push(el("li", {}, el("a", { href: `#${cid}` }, title),
        el("ol", {}, ...ch.scenes.map((s) => el("li", {}, el("a", { href: `#${cid}-scene-${s.number}` },
          `Scene ${s.number}${s.story_time ? ` · ${s.story_time}` : ""}`))))));
      out.push(el("section", { class: "chapter", id: cid, "aria-labelledby": `${cid}-title` },
        el("h2", { id: `${cid}-title` }, title),
        ch.recorded || data.source === "records" ? null : el("p", { class: "tag" }, "No chapter is recorded yet: the events, told in order, cut into scenes where a scene closes."),
        ch.summary ? el("p", { class: "summary" }, ch.summary) : null,
        ...ch.scenes.map((s) => el("section", { class: "scene", id: `${cid}-scene-${s.number}`, "aria-labelledby": `${cid}-scene-${s.number}-title` },
          el("h3", { id: `${cid}-scene-${s.number}-title` }, `Scene ${s.number}`, s.story_time ? el("span", { class: "tag" }, s.story_time) : null),
          s.pieces ? prose(s.pieces, "div") : null,
          ...s.passages.map((p) => passageView(p, Boolean(s.pieces)))))));
    }
  }
  $("book-nav").replaceChildren(...nav);
  $("book").replaceChildren(...out);
}

function timeline(data) {
  // The passages by story time: a time that parses is a place on the axis; one that does not
  // keeps the place of the passage before it (as told), so nothing moves on a guess.
  const passages = data.chapters.flatMap((ch) => ch.scenes.flatMap((s) => s.passages));
  let carry = null;
  const keyed = passages.map((p, i) => {
    if (p.time_key) carry = p.time_key;
    return { p, key: p.time_key || carry, i };
  });
  const cmp = (a, b) => {
    const ka = a.key || [];
    const kb = b.key || [];
    for (let k = 0; k < Math.max(ka.length, kb.length); k++) {
      const d = (ka[k] ?? -1) - (kb[k] ?? -1);
      if (d) return d;
    }
    return a.i - b.i;
  };
  keyed.sort(cmp);
  const out = [];
  let heading = null;
  let list = null;
  for (const { p } of keyed) {
    const when = p.story_time || "no story time";
    if (when !== heading) {
      heading = when;
      list = el("div", { class: "time-group" });
      out.push(el("h2", { class: "time" }, when, p.time_key ? null : el("span", { class: "tag" }, " (not a time narr can place: in the order told)")), list);
    }
    list.append(passageView(p));
  }
  return out;
}

async function showMentions(id) {
  const box = $("node-mentions");
  box.replaceChildren(el("li", { class: "tag" }, "looking…"));
  let data;
  try { data = await api(`/api/studio/mentions/${encodeURIComponent(id)}`); } catch (err) {
    box.replaceChildren(el("li", { class: "tag" }, err instanceof ApiError && err.offline ? "" : problemText(err)));
    return;
  }
  if (state.selected !== id) return;
  $("node-mentions-count").textContent = data.total ? `(${data.total})` : "";
  box.replaceChildren(...(data.passages.length ? data.passages.map((m) => el("li", {},
    el("button", { type: "button", class: "passage-link", "data-commit": m.commit, onclick: () => openPassage(m.commit) },
      `#${m.number}, scene ${m.scene}: `, ...m.excerpt.map(([text, node]) => (node ? el("mark", {}, text) : text)))))
    : [el("li", { class: "tag" }, "No passage names it yet.")]));
}

async function openPassage(commit) {
  await showView("book");  // (the manuscript as it now stands)
  $("book-order").value = "told";
  renderManuscript();
  const at = document.getElementById(`passage-${commit}`);
  if (!at) return;
  at.classList.add("found");
  at.scrollIntoView({ block: "center" });
  at.tabIndex = -1;
  at.focus();
}
