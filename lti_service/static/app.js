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

// Long work on the dashboard (regrade, re-send): show progress until done; it survives a reload.
function watchJobs() {
  for (const job of document.querySelectorAll("[data-job-url]")) {
    async function refresh() {
      try {
        const response = await fetch(job.dataset.jobUrl, { credentials: "same-origin" });
        if (response.ok) {
          const body = await response.json();
          job.textContent = body.text;
          job.dataset.finished = body.finished ? "1" : "";
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
  autosubmit();
  closeRegistration();
});
