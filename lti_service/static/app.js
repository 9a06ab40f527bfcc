// Progressive enhancement only: every page works without JavaScript.
"use strict";

// Live status: while an attempt is queued, grading, or its grade is on its way to the gradebook, refresh the
// parts of the page that show it (rendered by the server: the student's attempts; the dashboard's roster and
// attempt lists). Checks slow down while nothing changes (a gradebook outage can last hours), and start again
// at once when a long job on the page finishes.
const liveBoxes = [];

function watchLive(box, url) {
  let delay = 1000;
  let last = "";
  let timer = null;
  async function refresh() {
    timer = null;
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (response.ok) {
        const body = await response.json();
        const parts = body.parts || { [box.id]: body.html };
        const text = JSON.stringify(parts);
        delay = text === last ? Math.min(delay * 1.5, 15000) : 1000;
        last = text;
        for (const [id, html] of Object.entries(parts)) replaceIfChanged(document.getElementById(id), html);
        if (!body.pending) return;
      }
    } catch (error) {
      /* network hiccup: try again on the next tick */
    }
    timer = setTimeout(refresh, delay);
  }
  const wake = () => {
    delay = 1000;
    if (timer === null) refresh();
    else {
      clearTimeout(timer);
      timer = setTimeout(refresh, 0);
    }
  };
  liveBoxes.push(wake);
  if (box.dataset.pending || box.querySelector("[data-pending]")) timer = setTimeout(refresh, 500);
}

// Only what changed is replaced: a keyboard user's focus stays where it is while nothing moves.
function replaceIfChanged(part, html) {
  if (!part) return;
  const incoming = document.createElement("template");
  incoming.innerHTML = html;
  if (incoming.innerHTML !== part.innerHTML) part.innerHTML = html;
}

function watchAttempts() {
  const box = document.getElementById("attempts");
  if (box) watchLive(box, box.dataset.url);
  for (const live of document.querySelectorAll("[data-live-url]")) watchLive(live, live.dataset.liveUrl);
}

// The notebook in the browser runs in a window of its own that holds no handle on this page (it runs the
// student's code): once it is opened, look for new attempts now and then, and whenever this page is shown again.
function watchNotebookWindow() {
  const form = document.getElementById("open-in-browser-form");
  if (!form) return;
  const wakeAll = () => liveBoxes.forEach((wake) => wake());
  form.addEventListener("submit", () => {
    if (!form.dataset.watching) setInterval(wakeAll, 5000);
    form.dataset.watching = "1";
  });
  document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && wakeAll());
}

// Long work (regrade, re-send, an assignment's build, a link's move): show progress until done; it survives a
// reload. Where the finished page shows more (data-reload), load it again then.
function watchJobs() {
  for (const job of document.querySelectorAll("[data-job-url]")) {
    async function refresh() {
      try {
        const response = await fetch(job.dataset.jobUrl, { credentials: "same-origin" });
        if (response.ok) {
          const body = await response.json();
          job.textContent = body.text;
          job.dataset.finished = body.finished ? "1" : "";
          if (body.finished && job.dataset.reload) window.location.reload();
          if (body.finished) return liveBoxes.forEach((wake) => wake());
        }
      } catch (error) {
        /* try again */
      }
      setTimeout(refresh, 1000);
    }
    if (!job.dataset.finished) setTimeout(refresh, 500);
  }
}

// An assignment's files can be large: upload them with a progress bar, then open the build's page (without
// scripts the form posts as usual).
function uploadWithProgress() {
  for (const form of document.querySelectorAll("form[data-upload-progress]")) {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const bar = form.querySelector("progress");
      const status = form.querySelector(".upload-status");
      const button = form.querySelector("button[type=submit]");
      const request = new XMLHttpRequest();
      request.open("POST", form.action);
      request.setRequestHeader("Accept", "application/json");
      request.upload.addEventListener("progress", (progress) => {
        if (!progress.lengthComputable) return;
        bar.value = progress.loaded / progress.total;
        status.textContent = `Uploading: ${Math.round(100 * bar.value)}%`;
      });
      request.addEventListener("load", () => {
        let body = {};
        try {
          body = JSON.parse(request.responseText);
        } catch (error) {
          body.error = request.status === 413 ? "The files are too large: nothing was stored." : `The upload failed (HTTP ${request.status}).`;
        }
        if (body.url) return window.location.assign(body.url);
        status.textContent = body.error;
        button.disabled = false;
      });
      request.addEventListener("error", () => {
        status.textContent = "The upload failed: check your connection and try again.";
        button.disabled = false;
      });
      bar.hidden = false;
      button.disabled = true;
      request.send(new FormData(form));
    });
  }
}

// Deep linking: send the chosen assignment back to the platform at once.
function autosubmit() {
  const form = document.querySelector("form[data-autosubmit]");
  if (form) form.submit();
}

// Dynamic registration: ask the platform to close its dialog (LTI Dynamic Registration, section 3.6.2), at once
// when registered, with the Close button when not (the dialog offers only Cancel). Opened at the top of a
// window, there is no dialog to close: the button stays hidden.
function closeRegistration() {
  const platform = window.opener || (window.parent !== window ? window.parent : null);
  if (!platform) return;
  const close = () => platform.postMessage({ subject: "org.imsglobal.lti.close" }, "*");
  const closing = document.getElementById("registration-close"); // the Close button's paragraph
  if (closing) {
    closing.hidden = false;
    closing.querySelector("button").addEventListener("click", close);
  }
  if (document.getElementById("registration-done")) close();
}

// An error about the form just sent is where a keyboard or screen-reader user should land.
function focusError() {
  const error = document.getElementById("upload-error") || document.getElementById("choice-error");
  if (error) error.focus();
}

document.addEventListener("DOMContentLoaded", () => {
  focusError();
  watchAttempts();
  watchNotebookWindow();
  watchJobs();
  uploadWithProgress();
  autosubmit();
  closeRegistration();
});
