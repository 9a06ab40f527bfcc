// Progressive enhancement only: every page works without JavaScript.
"use strict";

// Live status: while an attempt is queued or grading, refresh the attempts list.
function watchAttempts() {
  const box = document.getElementById("attempts");
  if (!box) return;
  const pending = () => box.querySelector('[data-status="queued"], [data-status="grading"]') !== null;
  async function refresh() {
    if (!pending()) return;
    try {
      const response = await fetch(box.dataset.url, { credentials: "same-origin" });
      if (response.ok) render(box, (await response.json()).attempts);
    } catch (error) {
      /* network hiccup: try again on the next tick */
    }
    setTimeout(refresh, 1000);
  }
  setTimeout(refresh, 500);
}

function render(box, attempts) {
  box.replaceChildren(...attempts.map(attemptSection));
}

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  return node;
}

function attemptSection(a) {
  const section = el("section", null, { class: "attempt", id: "attempt-" + a.id, "data-status": a.status });
  const heading = el("h3", "Attempt " + a.number + ": ");
  heading.append(el("span", a.status, { class: "status status-" + a.status }));
  if (a.status === "graded") heading.append(" ", el("span", fmt(a.score) + " / " + fmt(a.max_score), { class: "score" }));
  section.append(heading);
  const meta = el("p", a.filename + ", submitted " + a.submitted, { class: "meta" });
  if (a.gradebook) meta.append(" \u00b7 gradebook: ", el("span", a.gradebook, { class: "gradebook" }));
  section.append(meta);
  if (a.error) section.append(el("p", a.error, { class: "error" }));
  if (a.questions.length) section.append(questionTable(a.questions));
  return section;
}

function questionTable(questions) {
  const table = el("table");
  table.append(el("caption", "Scores by question"));
  const head = el("tr");
  for (const title of ["Question", "Score", "Hidden checks passed", "Feedback from public checks"]) head.append(el("th", title, { scope: "col" }));
  table.append(el("thead")).append(head);
  const body = el("tbody");
  for (const q of questions) {
    const row = el("tr");
    const name = el("th", null, { scope: "row" });
    name.append(el("code", q.name));
    const failed = q.tests.filter((t) => !t.passed);
    const feedback = el("td", failed.length ? null : "public checks passed");
    for (const t of failed) feedback.append(el("pre", t.message));
    row.append(name, el("td", fmt(q.score) + " / " + fmt(q.max_score)), el("td", q.hidden_passed + " of " + q.hidden_total), feedback);
    body.append(row);
  }
  table.append(body);
  return table;
}

function fmt(x) {
  return Number(x).toFixed(2).replace(/\.?0+$/, "");
}

// Deep linking: send the chosen assignment back to the platform at once.
function autosubmit() {
  const form = document.querySelector("form[data-autosubmit]");
  if (form) form.submit();
}

// Dynamic registration: tell the platform we are done (LTI Dynamic Registration, section 3.6.2).
function closeRegistration() {
  if (!document.getElementById("registration-done")) return;
  (window.opener || window.parent).postMessage({ subject: "org.imsglobal.lti.close" }, "*");
}

document.addEventListener("DOMContentLoaded", () => {
  watchAttempts();
  autosubmit();
  closeRegistration();
});
