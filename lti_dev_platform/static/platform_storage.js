// The platform's side of LTI platform storage (1EdTech "LTI Client Side postMessages" and "Platform
// Storage"), as Canvas answers it: lti.put_data / lti.get_data from the registered tool's origin only, with
// the data kept per tool origin for as long as the course page is open.
"use strict";

(() => {
  const toolOrigin = document.currentScript.dataset.toolOrigin;
  const stored = new Map();

  function answer(event, data, reply) {
    event.source.postMessage({ subject: `${data.subject}.response`, message_id: data.message_id, ...reply }, event.origin);
  }

  window.addEventListener("message", (event) => {
    const data = event.data;
    if (!data || typeof data !== "object" || !["lti.put_data", "lti.get_data"].includes(data.subject)) return;
    if (event.origin !== toolOrigin) return; // only the tool registered with this platform may use it
    if (typeof data.key !== "string" || !data.key) {
      answer(event, data, { error: { code: "bad_request", message: "a key is required" } });
    } else if (data.subject === "lti.put_data") {
      stored.set(`${event.origin} ${data.key}`, data.value);
      answer(event, data, { key: data.key, value: data.value });
    } else if (stored.has(`${event.origin} ${data.key}`)) {
      answer(event, data, { key: data.key, value: stored.get(`${event.origin} ${data.key}`) });
    } else {
      answer(event, data, { error: { code: "bad_request", message: "there is no value stored for this key" } });
    }
  });
})();
