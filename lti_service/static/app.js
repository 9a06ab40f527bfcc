// Progressive enhancement only: every page works without JavaScript.
"use strict";

// Live status: while an attempt is queued, grading, or its grade is on its way to the gradebook, refresh the
// attempts list (rendered by the server).
function watchAttempts() {
  const box = document.getElementById("attempts");
  if (!box) return;
  const pending = () => box.querySelector("[data-pending]") !== null;
  async function refresh() {
    try {
      const response = await fetch(box.dataset.url, { credentials: "same-origin" });
      if (response.ok) {
        const body = await response.json();
        box.innerHTML = body.html;
        if (!body.pending) return;
      }
    } catch (error) {
      /* network hiccup: try again on the next tick */
    }
    setTimeout(refresh, 1000);
  }
  if (pending()) setTimeout(refresh, 500);
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
          if (body.finished) return;
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

// Dynamic registration: tell the platform we are done (LTI Dynamic Registration, section 3.6.2).
function closeRegistration() {
  if (!document.getElementById("registration-done")) return;
  (window.opener || window.parent).postMessage({ subject: "org.imsglobal.lti.close" }, "*");
}

// An upload error is where a keyboard or screen-reader user should land.
function focusError() {
  const error = document.getElementById("upload-error");
  if (error) error.focus();
}

document.addEventListener("DOMContentLoaded", () => {
  focusError();
  watchAttempts();
  watchJobs();
  uploadWithProgress();
  autosubmit();
  closeRegistration();
});
