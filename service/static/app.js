// absa page: no build step, no dependencies. Talks to POST /v1/predict with explain=true.
// Every URL is relative to the page, so it works where a proxy serves the app under a prefix.
"use strict";
const $ = (id) => document.getElementById(id);
const picked = []; // aspects chosen by selecting text: {term, start, end}
// a server or proxy that takes the request and never answers: give up, say so
const ANSWER_WITHIN_S = 60;

// The API counts offsets in code points (Python's str); a JavaScript string counts UTF-16
// units, two for a character past U+FFFF (an emoji). Slice and select in code points.
const cut = (chars, a, b) => chars.slice(a, b).join(""); // chars: Array.from(text)
const codePoints = (s, unit) => Array.from(s.slice(0, unit)).length;

// a term inside an English line, isolated: a right-to-left word does not reorder the line
function bdi(s) {
  const e = document.createElement("bdi");
  e.textContent = s;
  return e;
}

// field: the input the message is about ("text", "aspects", "api-key"), tied to it for a
// screen reader (aria-invalid, aria-describedby); the box is brought into view (zoomed in,
// or on a phone, it was below the screen, and a keyboard user saw nothing happen)
function showError(message, field) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
  for (const id of ["text", "aspects", "api-key"]) {
    if (message && id === field) {
      $(id).setAttribute("aria-invalid", "true");
      $(id).setAttribute("aria-describedby", "error");
    } else {
      $(id).removeAttribute("aria-invalid");
      $(id).removeAttribute("aria-describedby");
    }
  }
  if (message) box.scrollIntoView({ block: "nearest" });
}

// the field a refusal is about: the schema error's (deepest, as describeError reads it), or
// the aspect a service's "aspects[0]: ..." names; undefined for the request as a whole
function errorField(body) {
  const first = deepest(body);
  const field = first ? (first.loc || [])[1] : undefined;
  if (field === "text" || field === "aspects") return field;
  if (body && typeof body.detail === "string" && /^aspects\[/.test(body.detail)) return "aspects";
  return undefined;
}

// the deepest error: a pinned aspect {term, start, end} that fails is also "not a valid
// string" (the other member of the union, listed first); its own field's error is deeper
function deepest(body) {
  const errors = body && Array.isArray(body.errors) ? body.errors : [];
  const depth = (e) => (Array.isArray(e.loc) ? e.loc.length : 0);
  return errors.reduce((a, e) => (a === null || depth(e) > depth(a) ? e : a), null);
}

// each request names one aspect: a body that does not fit the schema (an aspect over the
// length limit, say) is said of that aspect, not as the request's field path
function describeError(status, body, aspect) {
  const first = deepest(body);
  if (first && typeof first.msg === "string") {
    const field = (first.loc || [])[1];
    const short = aspect && aspect.length > 40 ? `${aspect.slice(0, 40)}…` : aspect;
    const what = field === "aspects" && aspect ? `The aspect “${short}”`
      : field === "text" ? "The sentence" : "The request";
    return `${what}: ${first.msg}`;
  }
  // "aspects[0]: ...": the index in a request of one aspect, which the reader never saw
  if (body && typeof body.detail === "string") {
    return aspect ? body.detail.replace(/^aspects\[0\]: /, "") : body.detail;
  }
  if (body && Array.isArray(body.detail)) {
    return body.detail.map((e) => `${(e.loc || []).slice(1).join(".") || "request"}: ${e.msg}`).join("; ");
  }
  return `The service answered ${status}.`;
}

// a 503 (overloaded, loading) says when to ask again: Retry-After, in seconds or a date
function retryHint(res) {
  if (res.status !== 503) return "";
  const after = (res.headers.get("Retry-After") || "").trim();
  return /^\d+$/.test(after) ? ` (try again in ${after} s)` : " (try again shortly)";
}

// A service run with ABSA_API_KEY answers /v1/* with 401 until a key is sent: the page then
// asks for one, and keeps it for this tab only (sessionStorage), never in the page's URL.
const KEY = "absa-api-key";
const NEEDS_KEY = "needs an API key";
// a browser that blocks site data throws on any use of sessionStorage: the page then keeps
// the key for as long as it is open, and works on (it stopped dead at its first line)
let keptKey = null;
function storedKey() {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return keptKey;
  }
}
function storeKey(key) {
  keptKey = key || null;
  try {
    if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
  } catch {
    // kept in keptKey alone
  }
}
const auth = () => {
  const key = storedKey();
  return key ? { Authorization: `Bearer ${key}` } : {};
};

function askForKey() {
  $("key-row").hidden = false;
  $("api-key").focus();
}

function renderChips() {
  const chips = $("chips");
  chips.replaceChildren();
  picked.forEach((a, i) => {
    const chip = document.createElement("span");
    chip.className = "chip";
    chip.append(bdi(a.term), ` [${a.start}:${a.end}]`);
    const x = document.createElement("button");
    x.type = "button";
    x.textContent = "×";
    x.title = "remove";
    x.setAttribute("aria-label", `remove ${a.term}`);
    x.onclick = () => { picked.splice(i, 1); renderChips(); };
    chip.appendChild(x);
    chips.appendChild(chip);
  });
}

const SHADE = [255, 170, 0]; // the heatmap's orange; its opacity says the attention
const opacity = (level) => 0.08 + 0.85 * level;
function shade(weight, max) {
  const level = max > 0 ? weight / max : 0;
  return `rgba(${SHADE.join(", ")}, ${opacity(level).toFixed(3)})`;
}

// Relative luminance (WCAG 2) of [r, g, b] in 0-255, and the contrast of two luminances.
function luminance(rgb) {
  const [r, g, b] = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const contrast = (a, b) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
function cssColour(name) { // a custom property of the page's colour scheme, "#rrggbb"
  const hex = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  return m ? m.slice(1).map((h) => parseInt(h, 16)) : null;
}

// A shaded word's ink: the page's text colour where it reads on the shade (4.5:1, WCAG
// 1.4.3), else black or white, whichever reads better. Light pages need no change; on a
// dark page the page's light text is lost on a strong orange.
function ink(span) {
  const card = cssColour("--card"), fg = cssColour("--fg");
  span.style.color = "";
  if (!card || !fg) return;
  const a = opacity(Number(span.dataset.level));
  const under = luminance(SHADE.map((c, i) => a * c + (1 - a) * card[i]));
  if (contrast(luminance(fg), under) >= 4.5) return;
  span.style.color = contrast(0, under) >= contrast(1, under) ? "#000" : "#fff";
}
// the reader's system switches between light and dark: the words already shown follow
if (window.matchMedia) {
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
    document.querySelectorAll(".heat span.w").forEach(ink);
  });
}

// The tokenizer keeps an emoji sequence (a family joined by U+200D, a flag, a skin tone) in
// one token, but not every user-perceived character (grapheme): one it splits between tokens
// (an Arabic number sign, U+0600, before its digits) is still shown as one
// span here, with its tokens' weights added up, so no span draws a character apart.
function whole(text, weights) {
  if (typeof Intl === "undefined" || !Intl.Segmenter) return weights;
  const edges = new Set([0]); // between characters, in code points
  let at = 0;
  for (const { segment } of new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(text)) {
    at += Array.from(segment).length;
    edges.add(at);
  }
  const out = [];
  for (const w of weights) {
    let start = w.start, end = w.end;
    while (start > 0 && !edges.has(start)) start--;
    while (end < at && !edges.has(end)) end++;
    const last = out[out.length - 1];
    if (last && start < last.end) {
      last.end = Math.max(last.end, end);
      last.weight += w.weight;
      last.oov = last.oov || w.oov;
    } else {
      out.push({ ...w, start, end });
    }
  }
  return out;
}

function heatmap(text, weights, aspect) {
  const div = document.createElement("div");
  div.className = "heat";
  div.dir = "auto"; // a right-to-left sentence reads right to left here too
  const max = Math.max(...weights.map((w) => w.weight), 0);
  const chars = Array.from(text);
  let pos = 0;
  for (const w of weights) {
    div.appendChild(document.createTextNode(cut(chars, pos, w.start)));
    const span = document.createElement("span");
    span.className = "w" + (w.start < aspect.end && w.end > aspect.start ? " aspect" : "")
      + (w.oov ? " oov" : "");
    span.style.background = shade(w.weight, max);
    span.dataset.level = max > 0 ? w.weight / max : 0;
    ink(span);
    span.textContent = cut(chars, w.start, w.end);
    span.title = `attention ${w.weight.toFixed(3)}` + (w.oov ? " · not in the model's vocabulary" : "");
    span.dataset.weight = w.weight;
    div.appendChild(span);
    pos = w.end;
  }
  div.appendChild(document.createTextNode(cut(chars, pos)));
  return div;
}

// the words the model read: outside [first word, last word] of the attention, text was cut
function truncated(text, weights) {
  if (!weights.length) return false;
  const chars = Array.from(text);
  const before = cut(chars, 0, weights[0].start), after = cut(chars, weights[weights.length - 1].end);
  const word = /[\p{L}\p{N}_]/u; // in any script, as the tokenizer's (Python's) \w
  return word.test(before) || word.test(after);
}

// the strongest words in words too: the shading alone is lost on a screen reader
// (words: a comma's weight read aloud had no word before it, "friendly 28%, 10%"), and the
// words not in the model's vocabulary, which the shading marks by an underline alone
function strongest(text, weights) {
  const chars = Array.from(text);
  // punctuation and spaces alone are no word; an emoji is one (the model weighs it as one)
  const words = weights.filter((w) => /[^\p{P}\p{Z}\s]/u.test(cut(chars, w.start, w.end)));
  const top = [...words].sort((a, b) => b.weight - a.weight).slice(0, 3);
  const line = document.createElement("div");
  line.className = "top";
  line.append("Most attention: ");
  top.forEach((w, i) => {
    line.append(...(i ? [" · "] : []), bdi(cut(chars, w.start, w.end)), ` ${(w.weight * 100).toFixed(0)}%`);
  });
  const unknown = words.filter((w) => w.oov);
  if (unknown.length) {
    const list = document.createElement("span");
    list.className = "unknown";
    list.append("; not in the model's vocabulary: ");
    unknown.forEach((w, i) => list.append(...(i ? [", "] : []), bdi(cut(chars, w.start, w.end))));
    line.append(list);
  }
  return line;
}

function extractedBadge(confidence) {
  const found = document.createElement("div");
  found.className = "extracted";
  found.textContent = `found by the aspect extractor · confidence ${(confidence * 100).toFixed(0)}%`;
  found.title = "confidence: the extractor's probability of exactly this span";
  return found;
}

async function post(body, aspect, signal) {
  let res;
  try {
    res = await fetch("v1/predict", {
      method: "POST",
      headers: { "Content-Type": "application/json", ...auth() },
      body: JSON.stringify(body),
      signal,
    });
  } catch (err) {
    err.unreached = true; // no answer at all: told apart from the page's own failures
    throw err;
  }
  let answer = null;
  try {
    answer = await res.json();
  } catch (err) {
    if (signal && signal.aborted) throw err; // the deadline passed while the body came
  }
  if (res.status === 401) {
    askForKey();
    return { error: storedKey() ? "That API key was refused." : "This service needs an API key: enter it above." };
  }
  if (!res.ok) {
    return { error: describeError(res.status, answer, aspect) + retryHint(res), field: errorField(answer) };
  }
  if (!answer || !Array.isArray(answer.results)) {
    return { error: `The answer (${res.status}) was not the service's JSON: is a proxy answering for it?` };
  }
  return { results: answer.results };
}

function renderResult(text, r, occurrence) {
  const card = document.createElement("article");
  card.className = "result";
  const h = document.createElement("h2");
  h.append("“", bdi(r.term), "” ");
  if (occurrence && occurrence.of > 1) {
    const pos = document.createElement("span");
    pos.className = "occurrence";
    pos.textContent = `(occurrence ${occurrence.n} of ${occurrence.of}, characters ${r.start}–${r.end})`;
    h.append(pos, " ");
  }
  h.append("is ");
  const lab = document.createElement("span");
  lab.className = `label ${r.label}`;
  lab.textContent = r.label;
  h.appendChild(lab);
  card.appendChild(h);
  if (r.extracted) card.appendChild(extractedBadge(r.extracted.confidence));
  const bars = document.createElement("div");
  bars.className = "bars";
  for (const [name, p] of Object.entries(r.scores)) {
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.style.width = `${(p * 100).toFixed(1)}%`;
    const wrap = document.createElement("div");
    wrap.appendChild(bar);
    const nameCell = document.createElement("span");
    nameCell.textContent = name;
    const pct = document.createElement("span");
    pct.className = "pct";
    pct.textContent = `${(p * 100).toFixed(1)}%`;
    bars.append(nameCell, wrap, pct);
  }
  card.appendChild(bars);
  if (truncated(text, r.attention || [])) {
    const flag = document.createElement("div");
    flag.className = "truncated";
    flag.textContent = "The text is longer than the model reads (128 tokens): it saw only the "
      + "shaded part around the aspect.";
    card.appendChild(flag);
  }
  // the attention, then one row per self-attention head; each row's strongest words in
  // words too (the shading alone is lost on a screen reader)
  const attention = r.attention || [];
  const rows = [attention, ...(r.self_attention || []).map(
    (row) => attention.map((w, i) => ({ ...w, weight: row[i] })))];
  rows.forEach((weights, h) => {
    if (h) {
      const note = document.createElement("div");
      note.className = "head";
      note.textContent = `self-attention head ${h} (from the aspect's words)`;
      card.appendChild(note);
    }
    const shown = whole(text, weights);
    card.appendChild(heatmap(text, shown, r));
    if (shown.length) card.appendChild(strongest(text, shown));
  });
  return card;
}

let latest = 0; // the newest analysis: an older one's answer, arriving later, is dropped
let running = null; // the input of the analysis in flight: asked again, it is not sent again
let inFlight = null; // its requests' AbortController: a newer analysis cancels them

// busy: aria-disabled, not disabled, which would drop the keyboard focus to the page's body
function busy(on) {
  if (on) $("analyse").setAttribute("aria-disabled", "true");
  else $("analyse").removeAttribute("aria-disabled");
}

// the answer in a sentence, for the status line (a screen reader says it; the cards are
// there to be read by heading)
function summary(results) {
  const parts = [`${results.length} ${results.length === 1 ? "aspect" : "aspects"}: `];
  results.forEach((r, i) => parts.push(...(i ? [", "] : []), "“", bdi(r.term), `” ${r.label}`));
  return parts;
}

async function analyse() {
  const text = $("text").value;
  const typed = $("aspects").value.split(",").map((s) => s.trim()).filter(Boolean);
  const chars = Array.from(text);
  const aspects = [...typed, ...picked.filter((a) => cut(chars, a.start, a.end) === a.term)];
  const input = JSON.stringify([text, aspects, storedKey()]);
  if (input === running) return; // Enter again while this very analysis runs
  const run = ++latest;
  showError("");
  if (!text.trim()) {
    showError("Type a sentence first.", "text");
    running = null;
    busy(false);
    $("status").textContent = "";
    return;
  }
  running = input;
  busy(true);
  $("status").textContent = "Analysing…";
  const stop = new AbortController(); // one analysis, one deadline for all its requests
  const timer = setTimeout(() => stop.abort(), ANSWER_WITHIN_S * 1000);
  if (inFlight) inFlight.abort(); // the answer it waits for would be dropped: stop asking
  inFlight = stop;
  try {
    // no aspects named: the service finds them (where it has an extractor); else one request
    // per aspect, so an aspect that is not in the text does not hide the others
    const answers = aspects.length
      ? await Promise.all(aspects.map((aspect) => post(
        { text, aspects: [aspect], explain: true }, typeof aspect === "string" ? aspect : aspect.term,
        stop.signal)))
      : [await post({ text, explain: true }, undefined, stop.signal)];
    if (run !== latest) return;
    if (!aspects.length && answers[0].results && !answers[0].results.length) {
      answers[0].error = "No aspects found in this sentence: name one, or select it in the text.";
    }
    const errors = [...new Set(answers.filter((a) => a.error).map((a) => a.error))];
    // the field at fault: the sentence, or a typed aspect (one selected in the text is a
    // chip, not the field)
    const fields = answers.map((a, i) => (
      a.field === "aspects" && typeof aspects[i] !== "string" ? undefined : a.field));
    const field = fields.includes("text") ? "text" : fields.find(Boolean);
    // one card per span: a span asked for twice (typed, and selected too) is answered twice
    const spans = new Set();
    const results = answers.flatMap((a) => a.results || []).filter((r) => {
      const span = `${r.start}:${r.end}`;
      return !spans.has(span) && spans.add(span);
    });
    // a term found several times: tell its occurrences apart by number (in the text's
    // order) and position
    // a Map: in a plain object "constructor" or "__proto__" is already a key (Object's)
    const starts = new Map();
    results.forEach((r) => {
      const key = r.term.toLowerCase();
      if (!starts.has(key)) starts.set(key, []);
      starts.get(key).push(r.start);
    });
    starts.forEach((s) => s.sort((a, b) => a - b));
    const cards = results.map((r) => {
      const s = starts.get(r.term.toLowerCase());
      return renderResult(text, r, { n: s.indexOf(r.start) + 1, of: s.length });
    });
    showError(errors.join("\n"), field);
    $("results").replaceChildren(...cards);
    $("legend").hidden = !cards.length;
    $("status").replaceChildren(...(results.length ? summary(results) : []));
  } catch (err) {
    if (run !== latest) return;
    // the cards of the sentence before would read as the answer to this one
    $("results").replaceChildren();
    $("legend").hidden = true;
    $("status").textContent = "";
    showError(stop.signal.aborted
      ? `The service did not answer in ${ANSWER_WITHIN_S} s: it may be overloaded, or a proxy `
        + "may be holding the request; try again."
      : err.unreached
        ? `Could not reach the service (${err.message}): check that it is running and `
          + "that this device is online, then try again."
        : `The page could not show the service's answer (${err.message}): the page and `
          + "the service may be of different versions; reload the page.");
  } finally {
    clearTimeout(timer);
    if (inFlight === stop) inFlight = null;
    if (run === latest) {
      running = null;
      busy(false);
    }
  }
}

$("add-selection").onclick = () => {
  const t = $("text");
  const start = t.selectionStart, end = t.selectionEnd;
  const term = t.value.slice(start, end);
  if (!term.trim()) { showError("Select a word or phrase in the sentence first.", "text"); return; }
  const lead = term.length - term.trimStart().length, trail = term.length - term.trimEnd().length;
  picked.push({
    term: term.trim(),
    start: codePoints(t.value, start + lead),
    end: codePoints(t.value, end - trail),
  });
  showError("");
  renderChips();
};
$("analyse").onclick = () => { if ($("analyse").getAttribute("aria-disabled") !== "true") analyse(); };
// Enter submits (Shift+Enter: a new line in the sentence)
for (const id of ["text", "aspects"]) {
  $(id).addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); analyse(); }
  });
}
$("text").addEventListener("input", () => { picked.length = 0; renderChips(); });
document.querySelectorAll(".example").forEach((b) => {
  b.onclick = () => {
    $("text").value = b.dataset.text;
    $("aspects").value = b.dataset.aspects;
    picked.length = 0;
    renderChips();
    analyse();
  };
});
let modelCall = 0; // the newest model line asked for: an older answer, arriving later, is dropped
function loadModel() {
  const call = ++modelCall;
  const stale = new Error("stale");
  fetch("v1/model", { headers: auth() }).then((r) => {
    if (call !== modelCall) throw stale; // a 401 from before the key was typed, say
    if (r.status === 401) { askForKey(); throw new Error(NEEDS_KEY); }
    if (!r.ok) throw new Error(`answered ${r.status}`); // an error's body is no model
    return r.json();
  }).then((m) => {
    if (call !== modelCall) return;
    $("model").textContent = `${m.name} ${m.version}` + (m.extractor ? ` · extractor ${m.extractor}` : "");
    // this service cannot find aspects: do not offer it (the lead, an example that only errs)
    $("lead-auto").hidden = $("example-auto").hidden = !m.extractor;
    if (!m.extractor) { // nor invite an empty box
      document.querySelector("label[for=aspects]").textContent = "Aspects (comma-separated)";
      $("aspects").placeholder = "burger, fries";
    }
  })
    .catch((err) => {
      if (err === stale || call !== modelCall) return;
      $("model").textContent = err.message === NEEDS_KEY ? NEEDS_KEY : "unavailable";
    });
}
$("api-key").value = storedKey() || "";
$("api-key").addEventListener("change", () => {
  const key = $("api-key").value.trim();
  // a header value fetch can send: other characters made every call "Could not reach"
  if (/[^\x21-\x7e]/.test(key)) {
    showError("An API key is plain ASCII text (no spaces): this one has other characters.", "api-key");
    return;
  }
  storeKey(key);
  showError("");
  loadModel();
});
loadModel();
