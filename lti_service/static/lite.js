// The grading panel of the notebook in the browser (JupyterLite; views/lite.py adds it to the app's page).
// "Submit for grading" saves the open notebook, sends it to the tool as an attempt of this launch, then shows
// its status, score and feedback as the assignment page does (the same HTML, from attempts.json).
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("grader-data").textContent);
  const WORDS = {
    expired:
      "This page has expired. Open the assignment again from your course and choose “Open in the browser”: " +
      "your work here is kept in this browser.",
    tooLarge: `Your notebook is larger than the ${(config.maxBytes / 1048576).toFixed(1)} MB the grader takes. ` +
      "Clear large outputs (Edit, Clear Outputs of All Cells), then submit again. Nothing was sent.",
    unavailable: "The grader could not take your notebook just now. Nothing was sent: try again in a minute.",
    noNotebook: "Open your notebook in this window first, then submit it.",
    notReady: "The notebook is still loading. Submit again in a moment.",
  };

  function build() {
    const panel = document.createElement("aside");
    panel.id = "grader-panel";
    panel.setAttribute("aria-label", "Grading");
    panel.innerHTML =
      '<div class="grader-actions"><button type="button" id="grader-submit">Submit for grading</button>' +
      '<button type="button" id="grader-download">Download a copy</button></div>' +
      '<p id="grader-status" role="status" aria-live="polite"></p><div id="grader-result"></div>';
    document.body.appendChild(panel);
    panel.querySelector("#grader-submit").addEventListener("click", submit);
    panel.querySelector("#grader-download").addEventListener("click", download);
  }

  function say(text, isError) {
    const status = document.getElementById("grader-status");
    status.textContent = text;
    status.className = isError ? "grader-error" : "";
  }

  function openNotebook() {
    const app = window.jupyterapp;
    const widget = app && app.shell.currentWidget;
    const context = widget && widget.context;
    return context && context.path.endsWith(".ipynb") ? { app, context } : null;
  }

  async function download() {
    const open = openNotebook();
    if (!open) return say(window.jupyterapp ? WORDS.noNotebook : WORDS.notReady, true);
    await open.context.save();
    await open.app.commands.execute("docmanager:download");
  }

  async function submit() {
    const open = openNotebook();
    if (!open) return say(window.jupyterapp ? WORDS.noNotebook : WORDS.notReady, true);
    const button = document.getElementById("grader-submit");
    button.disabled = true;
    try {
      say("Saving and sending your notebook…");
      await open.context.save();
      const model = await open.app.serviceManager.contents.get(open.context.path, { content: true });
      const answer = await send(open.context.path, JSON.stringify(model.content));
      if (answer) await follow(answer);
    } finally {
      button.disabled = false;
    }
  }

  async function send(path, body) {
    if (body.length > config.maxBytes) return say(WORDS.tooLarge, true);
    let response;
    try {
      response = await fetch(config.submit, {
        method: "POST",
        credentials: "same-origin",
        headers: {
          "Content-Type": "application/x-ipynb+json",
          "X-CSRF-Token": config.csrf,
          "X-Notebook-Name": encodeURIComponent(path.split("/").pop()),
        },
        body,
      });
    } catch (error) {
      return say(WORDS.unavailable, true);
    }
    if (response.status === 404) return say(WORDS.expired, true);
    if (response.status === 413) return say(WORDS.tooLarge, true);
    const answer = response.headers.get("Content-Type") === "application/json" ? await response.json() : {};
    if (answer.error) return say(answer.error, true);
    if (!response.ok) return say(WORDS.unavailable, true);
    if (window.opener) window.opener.postMessage("grader:submitted", location.origin); // the assignment page
    return answer;
  }

  // Show the attempt as the assignment page does, until it is graded and its grade has reached the gradebook.
  async function follow(answer) {
    say(
      answer.new
        ? `Sent as attempt ${answer.number}.`
        : `This notebook is the same as your attempt ${answer.number}, so no new attempt was made.`,
    );
    let delay = 1000;
    for (;;) {
      let body = null;
      try {
        const response = await fetch(config.attempts, { credentials: "same-origin" });
        if (response.ok) body = await response.json();
      } catch (error) {
        /* a network hiccup: look again */
      }
      if (body) {
        const row = body.attempts.find((attempt) => attempt.id === answer.attempt);
        const page = new DOMParser().parseFromString(body.html, "text/html");
        const section = page.getElementById(`attempt-${answer.attempt}`);
        if (section) document.getElementById("grader-result").replaceChildren(document.adoptNode(section));
        if (!row || !row.pending) return;
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 1.5, 10000);
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", build);
  else build();
})();
