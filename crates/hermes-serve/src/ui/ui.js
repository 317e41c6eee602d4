// The hermes inspector's script (ui.rs): a confirmation before a key is revoked, and a button
// that copies a new key. Every page works without it.
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  if (field && navigator.clipboard) {
    navigator.clipboard.writeText(field.value).then(() => { button.textContent = "Copied"; });
  }
});
