// The signed-link page: shows the one interrupt the link points at and, for a
// resolve link, answers it by POSTing to the link itself (no sign-in needed).

import { ApiError, callJson } from "./api.js";
import { h } from "./dom.js";
import { renderInterrupt } from "./forms.js";
import { confirmation, keyBound } from "./passkeys.js";

const AUTH_REQUIRED_PROFILE = "openwop-interrupt-auth-required";

const view = JSON.parse(document.getElementById("interrupt-view").textContent);
const mount = document.getElementById("interrupt");
const linkUrl = window.location.pathname;
const data = (view.payload && view.payload.data) || {};
// A gate that needs several approvals counts people: a link that names no one cannot vote on it.
const unnamedQuorum = view.kind === "approval" && !view.subject && (data.requiredApprovals || 1) > 1;
let keyField = null;

/** Some interrupts want a signed-in answer even through a link: ask for a key then. */
function showKeyField(reason) {
  if (keyField) return keyField;
  const input = h("input", {
    id: "link-api-key",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": "link-api-key-hint",
  });
  keyField = input;
  mount.prepend(
    h(
      "div",
      { class: "field key-field" },
      h("label", { for: "link-api-key" }, "Your API key"),
      h("p", { id: "link-api-key-hint", class: "hint" }, reason),
      input,
    ),
  );
  return input;
}

async function submit(resumeValue) {
  const key = keyField && keyField.value.trim() ? keyField.value.trim() : null;
  try {
    const headers = keyBound(view)
      ? await confirmation(new URL("../../ui/api/passkeys/challenge", window.location.href).toString(),
          { token: linkUrl.split("/").pop(), resumeValue }, { key })
      : {};
    return await callJson(linkUrl, { method: "POST", key, headers, body: { resumeValue } });
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || (err.status === 403 && unnamedQuorum))) {
      showKeyField("This request also needs the API key of someone allowed to answer it.").focus();
    }
    throw err;
  }
}

const panel = renderInterrupt(view, { mode: view.intent === "resolve" ? "answer" : "read", submit });
mount.replaceChildren(panel.element);
if (view.intent === "resolve" && data.profile === AUTH_REQUIRED_PROFILE) {
  showKeyField("This request needs the API key of someone allowed to answer it, as well as this link.");
} else if (view.intent === "resolve" && unnamedQuorum) {
  showKeyField("Each approval must come from a named person: your key says who you are.");
}
if (view.intent === "resolve" && keyBound(view)) {
  mount.prepend(
    h("p", { class: "notice", id: "passkey-needed" }, "This decision is confirmed with your passkey: your browser will ask for it when you submit."),
  );
}
