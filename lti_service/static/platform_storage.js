// LTI platform storage (1EdTech "LTI Client Side postMessages" and "Platform Storage"): where the browser keeps
// no cookie for the tool inside the course page, the login's state is kept by the platform's own window.
// The login page stores it there (lti.put_data) before the browser goes on to the platform; the launch page
// reads it back (lti.get_data) and only then asks the tool to open the launch. Messages go to the platform's
// origin only, and only its answers to our own message ids are read.
"use strict";

const ANSWER_TIMEOUT_MS = 5000;
const RESEND_MS = 500; // the platform's storage frame may still be loading when we first ask

// The platform's window: the page framing us, or the one that opened us.
function platformWindow() {
  return window.parent !== window ? window.parent : window.opener;
}

// lti_storage_target names a frame of the platform's window, or "_parent" for that window itself.
function storageFrame(target) {
  const platform = platformWindow();
  if (!platform) return null;
  if (target === "_parent") return platform;
  try {
    return platform.frames[target] || null;
  } catch (error) {
    return null;
  }
}

// Send one message to the platform's storage; resolves with its answer, rejects on an error or no answer.
function ask(box, message) {
  const frame = storageFrame(box.dataset.target);
  const origin = box.dataset.origin;
  // (not crypto.randomUUID: it needs a secure context, which a tool framed by an http:// LMS page is not)
  const id = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  return new Promise((resolve, reject) => {
    if (!frame) {
      reject(new Error("the course page offers no storage frame"));
      return;
    }
    let resend = null;
    let timer = null;
    function finish(settle, value) {
      clearInterval(resend);
      clearTimeout(timer);
      window.removeEventListener("message", onMessage);
      settle(value);
    }
    function onMessage(event) {
      const data = event.data;
      if (event.origin !== origin || event.source !== frame || !data || typeof data !== "object") return;
      if (data.message_id !== id || data.subject !== `${message.subject}.response`) return;
      if (data.error) finish(reject, new Error(`${data.error.code}: ${data.error.message}`));
      else finish(resolve, data);
    }
    window.addEventListener("message", onMessage);
    const send = () => frame.postMessage({ ...message, message_id: id }, origin);
    resend = setInterval(send, RESEND_MS);
    timer = setTimeout(() => finish(reject, new Error("the course page did not answer")), ANSWER_TIMEOUT_MS);
    send();
  });
}

// Login: keep the state in the platform's storage, then go on to the platform.
async function putState(box) {
  await ask(box, { subject: "lti.put_data", key: box.dataset.key, value: box.dataset.value });
  window.location.replace(box.dataset.next);
}

// Launch: the platform's storage must hold this login's state (it does only in the browser that started
// the login); then the tool opens the launch.
async function checkState(box) {
  const answer = await ask(box, { subject: "lti.get_data", key: box.dataset.key });
  if (answer.value !== box.dataset.value) throw new Error("this browser did not start this login");
  const response = await fetch(box.dataset.next, {
    method: "POST",
    headers: { "X-LTI-Storage-Check": "1" },
    body: new URLSearchParams({ state: box.dataset.value }),
    credentials: "same-origin",
  });
  if (!response.ok) throw new Error(`the tool refused the launch (HTTP ${response.status})`);
  window.location.replace((await response.json()).url);
}

document.addEventListener("DOMContentLoaded", () => {
  const box = document.getElementById("platform-storage");
  if (!box) return;
  const step = box.dataset.action === "put" ? putState : checkState;
  step(box).catch((error) => {
    box.className = "meta";
    box.textContent = `Details: ${error.message}.`;
    document.getElementById("storage-failed").hidden = false;
  });
});
