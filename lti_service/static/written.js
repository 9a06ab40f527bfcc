// Keyboard grading of written answers (the page works without it: every control is a form field or a link).
// Number keys apply rubric items, c goes to the comment, n/p/u move between answers, Ctrl+Enter (or
// Cmd+Enter) saves and opens the next ungraded answer. Keys typed into a field are the field's own.
"use strict";

document.addEventListener("keydown", (event) => {
  const form = document.getElementById("grade-form");
  if (!form) return;
  const typing = event.target.closest("input[type=number], input[type=text], textarea");
  if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
    event.preventDefault();
    form.requestSubmit(document.getElementById("save-next"));
    return;
  }
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  const box = form.querySelector(`input[type=checkbox][data-key="${CSS.escape(event.key)}"]`);
  if (box) {
    event.preventDefault();
    box.checked = !box.checked;
    box.focus();
    return;
  }
  if (event.key === "c") {
    event.preventDefault();
    document.getElementById("comment").focus();
    return;
  }
  const link = document.querySelector(`.answer-nav a[data-key="${CSS.escape(event.key)}"]`);
  if (link) {
    event.preventDefault();
    link.click();
  }
});
