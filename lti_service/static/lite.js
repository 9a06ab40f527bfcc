// The grading panel of the notebook in the browser (JupyterLite; views/lite.py adds it to the app's page).
// - The student's work is kept by the tool, not by the browser: JupyterLite keeps files in the page's memory,
//   and every file it saves (every few seconds) is sent here to the tool; a reload or a new window starts from it.
//   Each save says which revision of the work this page last saw of the file: the tool refuses it when another
//   window saved the file since, so a stale window or tab never overwrites newer work.
// - "Submit for grading" saves the open notebook, sends it to the tool as an attempt, then shows its status,
//   score and feedback as the assignment page does (the same HTML, from attempts.json).
// - "Leave this computer" makes sure the work is with the tool, signs the window out and clears what the tool's
//   pages keep in this browser. The window also says it is alive while open, and that it closes when it does.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("grader-data").textContent);
  const WORDS = {
    signedOut:
      "This window is signed out, so nothing more can be saved or submitted from it. Download a copy if you " +
      "changed anything in the last few seconds, then open the assignment again from your course.",
    tooLarge: `Your notebook is larger than the ${(config.maxBytes / 1048576).toFixed(1)} MB the grader takes. ` +
      "Clear large outputs (Edit, Clear Outputs of All Cells), then submit again. Nothing was sent.",
    unavailable: "The grader could not take your notebook just now. Nothing was sent: try again in a minute.",
    noNotebook: "Open your notebook in this window first, then submit it.",
    notReady: "The notebook is still loading. Try again in a moment.",
    notSaved:
      "Your latest changes could not be saved with the tool. Nothing was removed from this window: try again, " +
      "or download a copy.",
    recovered: (kept, refused, reason) =>
      "This computer still had files from an earlier version of the tool, kept in this browser. Your " +
      "work saved with the tool was kept as it is." +
      (kept
        ? ` ${kept === 1 ? "One file was" : `${kept} files were`} put beside it, in the folder “recovered from ` +
          "this computer” (reload the page to see it): check them before you use any of them, and delete them " +
          "if they are not yours."
        : "") +
      (refused ? ` ${refused === 1 ? "One file was" : `${refused} files were`} not kept. ${reason}` : ""),
    notRecovered:
      "This computer still has files from an earlier version of the tool, and the tool could not take them just " +
      "now. Your work saved with the tool is as it was. Reload the page to try again.",
  };
  const headers = { "X-CSRF-Token": config.csrf };
  const queues = new Map(); // path -> the promise of its latest save to the tool, so saves arrive in order
  const seen = new Map(); // path -> the revision this page last saved of it (else config.revision: at its load)
  let failedSaves = 0;
  let signedOut = false;

  function build() {
    const panel = document.createElement("aside");
    panel.id = "grader-panel";
    panel.setAttribute("aria-label", "Grading");
    panel.innerHTML =
      '<div class="grader-actions"><button type="button" id="grader-submit">Submit for grading</button>' +
      '<button type="button" id="grader-download">Download a copy</button>' +
      '<button type="button" id="grader-leave">Leave this computer</button></div>' +
      '<p id="grader-saved" aria-live="polite"></p>' +
      '<p id="grader-status" role="status" aria-live="polite"></p><div id="grader-result"></div>';
    document.body.appendChild(panel);
    panel.querySelector("#grader-submit").addEventListener("click", submit);
    panel.querySelector("#grader-download").addEventListener("click", download);
    panel.querySelector("#grader-leave").addEventListener("click", leave);
    keepAlive();
    recoverLegacyStore();
    whenReady((app) => app.serviceManager.contents.fileChanged.connect((_, change) => keep(app, change)));
  }

  // Earlier versions of the tool kept the work in the browser's IndexedDB, where any code of the tool's origin
  // (another student's, on a shared computer) can read and write it. Its files go to the tool once, which keeps
  // them in a folder of their own and never over the work it has; then the store is deleted and the student told.
  async function recoverLegacyStore() {
    const name = config.legacyStore;
    if (!indexedDB.databases || !(await indexedDB.databases()).some((db) => db.name === name)) return;
    const files = (await readStore(name)).filter(
      (file) => file && typeof file.path === "string" && file.type !== "directory",
    );
    let kept = 0;
    let refused = files.length - Math.min(files.length, config.maxRecovered);
    let reason = "";
    for (const file of files.slice(0, config.maxRecovered)) {
      const answer = await recoverOne(file);
      if (!answer) return say(WORDS.notRecovered, true); // left where it is: tried again when next opened
      if (answer.kept) kept += 1;
      if (answer.error) [refused, reason] = [refused + 1, reason || answer.error];
    }
    for (const store of [name, `${name}-settings`]) indexedDB.deleteDatabase(store);
    if (kept || refused) say(WORDS.recovered(kept, refused, reason), Boolean(refused));
  }

  async function readStore(name) {
    const db = await new Promise((ok, fail) => {
      const opening = indexedDB.open(name);
      opening.onsuccess = () => ok(opening.result);
      opening.onerror = fail;
    });
    try {
      if (!db.objectStoreNames.contains("files")) return [];
      return await new Promise((ok) => {
        const reading = db.transaction("files").objectStore("files").getAll();
        reading.onsuccess = () => ok(reading.result || []);
        reading.onerror = () => ok([]);
      });
    } finally {
      db.close();
    }
  }

  async function recoverOne(file) {
    let content;
    try {
      content = body(file);
    } catch (error) {
      return { error: "" }; // not a file JupyterLite could have saved
    }
    try {
      const url = config.recover + file.path.split("/").map(encodeURIComponent).join("/");
      const response = await fetch(url, { method: "PUT", headers, credentials: "same-origin", body: content });
      if (response.status === 401) return signOut();
      const refused = response.status === 400 || response.status === 413;
      return response.ok || refused ? await response.json() : null;
    } catch (error) {
      return null;
    }
  }

  function say(text, isError) {
    const status = document.getElementById("grader-status");
    status.textContent = text;
    status.className = isError ? "grader-error" : "";
  }

  function whenReady(then) {
    if (window.jupyterapp) return then(window.jupyterapp);
    setTimeout(() => whenReady(then), 200);
  }

  // -- the work, kept by the tool ------------------------------------------------------------------------
  function keep(app, change) {
    const gone = change.type === "delete" || change.type === "rename" ? change.oldValue : null;
    const saved = change.type === "delete" ? null : change.newValue;
    if (gone && gone.path && gone.type !== "directory") queue(gone.path, () => request("DELETE", gone.path));
    if (saved && saved.path && saved.type !== "directory") {
      queue(saved.path, async () => {
        const model = await app.serviceManager.contents.get(saved.path, { content: true });
        return request("PUT", saved.path, body(model));
      });
    }
  }

  function body(model) {
    if (model.format === "json") return JSON.stringify(model.content);
    if (model.format === "base64") return Uint8Array.from(atob(model.content), (c) => c.charCodeAt(0));
    return model.content;
  }

  function queue(path, send) {
    const next = (queues.get(path) || Promise.resolve()).then(send).then(
      (ok) => ok,
      () => false,
    );
    queues.set(path, next);
    next.then((ok) => {
      if (!ok) failedSaves += 1;
      if (queues.get(path) === next) queues.delete(path);
    });
    return next;
  }

  async function request(method, path, content) {
    const url = config.drafts + path.split("/").map(encodeURIComponent).join("/");
    const base = String(seen.has(path) ? seen.get(path) : config.revision);
    let response;
    try {
      response = await fetch(url, {
        method,
        headers: { ...headers, "X-Draft-Base": base },
        credentials: "same-origin",
        body: content,
      });
    } catch (error) {
      document.getElementById("grader-saved").textContent = WORDS.notSaved;
      return false;
    }
    if (response.status === 401) return signOut();
    const answer = response.headers.get("Content-Type") === "application/json" ? await response.json() : {};
    const saved = document.getElementById("grader-saved");
    if (response.ok && Number.isInteger(answer.revision)) seen.set(path, answer.revision);
    if (response.status === 409) say(answer.error, true); // another window's newer work: kept, and said so
    if (!response.ok) saved.textContent = answer.error || WORDS.notSaved;
    else if (answer.saved) saved.textContent = `Saved with the tool at ${answer.saved}.`;
    return response.ok;
  }

  async function allSaved() {
    const before = failedSaves;
    while (queues.size) await Promise.all([...queues.values()]);
    return failedSaves === before;
  }

  window.addEventListener("beforeunload", (event) => {
    if (queues.size && !signedOut) event.preventDefault(); // a save is on its way: ask before leaving
  });

  // -- signed in while open ------------------------------------------------------------------------------
  function keepAlive() {
    const beat = async () => {
      try {
        const response = await fetch(config.alive, { method: "POST", headers, credentials: "same-origin" });
        if (response.status === 401) return signOut();
      } catch (error) {
        /* offline for a moment: the next beat says it */
      }
      setTimeout(beat, config.heartbeatMs);
    };
    beat();
    window.addEventListener("pagehide", () => navigator.sendBeacon(config.closing));
  }

  function signOut() {
    signedOut = true;
    say(WORDS.signedOut, true);
    for (const id of ["grader-submit", "grader-leave"]) document.getElementById(id).disabled = true;
    return false;
  }

  async function leave() {
    const button = document.getElementById("grader-leave");
    button.disabled = true;
    say("Saving your work with the tool…");
    try {
      const app = window.jupyterapp;
      if (app) {
        for (const widget of app.shell.widgets("main")) if (widget.context) await widget.context.save();
      }
      if (!(await allSaved())) return say(WORDS.notSaved, true);
      const response = await fetch(config.leave, { method: "POST", headers, credentials: "same-origin" });
      if (!response.ok) return response.status === 401 ? signOut() : say(WORDS.unavailable, true);
      signedOut = true;
      location.replace((await response.json()).left); // no way back to this page: its memory goes with it
    } catch (error) {
      say(WORDS.notSaved, true);
    } finally {
      if (!signedOut) button.disabled = false;
    }
  }

  // -- download and submit -------------------------------------------------------------------------------
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
      button.disabled = signedOut;
    }
  }

  async function send(path, content) {
    if (content.length > config.maxBytes) return say(WORDS.tooLarge, true);
    let response;
    try {
      response = await fetch(config.submit, {
        method: "POST",
        credentials: "same-origin",
        headers: {
          ...headers,
          "Content-Type": "application/x-ipynb+json",
          "X-Notebook-Name": encodeURIComponent(path.split("/").pop()),
        },
        body: content,
      });
    } catch (error) {
      return say(WORDS.unavailable, true);
    }
    if (response.status === 401) return signOut();
    if (response.status === 413) return say(WORDS.tooLarge, true);
    const answer = response.headers.get("Content-Type") === "application/json" ? await response.json() : {};
    if (answer.error) return say(answer.error, true);
    if (!response.ok) return say(WORDS.unavailable, true);
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
        if (response.status === 401) return signOut();
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
