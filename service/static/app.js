// absa page: no build step, no dependencies. Talks to POST /v1/predict with explain=true.
"use strict";
const $ = (id) => document.getElementById(id);
const picked = []; // aspects chosen by selecting text: {term, start, end}

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

function describeError(status, body) {
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail)) {
    return body.detail.map((e) => `${(e.loc || []).slice(1).join(".") || "request"}: ${e.msg}`).join("; ");
  }
  return `The service answered ${status}.`;
}

function renderChips() {
  const chips = $("chips");
  chips.replaceChildren();
  picked.forEach((a, i) => {
    const chip = document.createElement("span");
    chip.className = "chip";
    chip.textContent = `${a.term} [${a.start}:${a.end}]`;
    const x = document.createElement("button");
    x.type = "button";
    x.textContent = "×";
    x.title = "remove";
    x.onclick = () => { picked.splice(i, 1); renderChips(); };
    chip.appendChild(x);
    chips.appendChild(chip);
  });
}

function shade(weight, max) {
  const level = max > 0 ? weight / max : 0;
  return `rgba(255, 170, 0, ${(0.08 + 0.85 * level).toFixed(3)})`;
}

function heatmap(text, weights, aspect) {
  const div = document.createElement("div");
  div.className = "heat";
  const max = Math.max(...weights.map((w) => w.weight), 0);
  let pos = 0;
  for (const w of weights) {
    div.appendChild(document.createTextNode(text.slice(pos, w.start)));
    const span = document.createElement("span");
    span.className = "w" + (w.start < aspect.end && w.end > aspect.start ? " aspect" : "");
    span.style.background = shade(w.weight, max);
    span.textContent = text.slice(w.start, w.end);
    span.title = `attention ${w.weight.toFixed(3)}`;
    span.dataset.weight = w.weight;
    div.appendChild(span);
    pos = w.end;
  }
  div.appendChild(document.createTextNode(text.slice(pos)));
  return div;
}

function renderResult(text, r) {
  const card = document.createElement("article");
  card.className = "result";
  const h = document.createElement("h2");
  h.append(`“${r.term}” is `);
  const lab = document.createElement("span");
  lab.className = `label ${r.label}`;
  lab.textContent = r.label;
  h.appendChild(lab);
  card.appendChild(h);
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
  card.appendChild(heatmap(text, r.attention || [], r));
  (r.self_attention || []).forEach((row, h) => {
    const note = document.createElement("div");
    note.className = "head";
    note.textContent = `self-attention head ${h + 1} (from the aspect's words)`;
    card.appendChild(note);
    const weights = (r.attention || []).map((w, i) => ({ ...w, weight: row[i] }));
    card.appendChild(heatmap(text, weights, r));
  });
  return card;
}

async function analyse() {
  showError("");
  const text = $("text").value;
  const typed = $("aspects").value.split(",").map((s) => s.trim()).filter(Boolean);
  const aspects = [...typed, ...picked.filter((a) => text.slice(a.start, a.end) === a.term)];
  if (!text.trim()) { showError("Type a sentence first."); return; }
  if (!aspects.length) { showError("Name at least one aspect, or select one in the sentence."); return; }
  const button = $("analyse");
  button.disabled = true;
  $("status").textContent = "Analysing…";
  try {
    const res = await fetch("/v1/predict", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ text, aspects, explain: true }),
    });
    let body = null;
    try { body = await res.json(); } catch (_) { /* not JSON */ }
    if (!res.ok) { showError(describeError(res.status, body)); $("results").replaceChildren(); return; }
    $("results").replaceChildren(...body.results.map((r) => renderResult(text, r)));
  } catch (err) {
    showError(`Could not reach the service: ${err.message}`);
  } finally {
    button.disabled = false;
    $("status").textContent = "";
  }
}

$("add-selection").onclick = () => {
  const t = $("text");
  const start = t.selectionStart, end = t.selectionEnd;
  const term = t.value.slice(start, end);
  if (!term.trim()) { showError("Select a word or phrase in the sentence first."); return; }
  const lead = term.length - term.trimStart().length, trail = term.length - term.trimEnd().length;
  picked.push({ term: term.trim(), start: start + lead, end: end - trail });
  showError("");
  renderChips();
};
$("analyse").onclick = analyse;
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
fetch("/v1/model").then((r) => r.json()).then((m) => { $("model").textContent = `${m.name} ${m.version}`; })
  .catch(() => { $("model").textContent = "unavailable"; });
