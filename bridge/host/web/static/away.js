// "While you are away" in the inbox: let someone answer in your place until a date
// (POST /v1/delegations), see what you delegated and what is delegated to you, end one.
//
// Like the Decisions view, it follows the inbox's sign-in through the "inbox:signed-in" /
// "inbox:signed-out" events and adds nothing to the page but its own section.

import { ApiError, callJson } from "./api.js";
import { h, utcTime } from "./dom.js";

const ROOT = new URL("../", document.baseURI);
const url = (path) => new URL(path, ROOT).toString();
const state = { auth: null, me: null, seq: 0 };
const $ = (id) => document.getElementById(id);

function row(made) {
  const mine = made.delegator === state.me.principal;
  const ended = Boolean(made.endedAt);
  const over = ended || new Date(made.until).getTime() <= Date.now();
  const who = mine ? `${made.delegate} answers for you` : `You answer for ${made.delegator}`;
  const until = ended ? `ended ${utcTime(made.endedAt)}` : `until ${utcTime(made.until)}`;
  const scope = made.workflows.length ? ` · ${made.workflows.join(", ")}` : "";
  const item = h(
    "li",
    { dataset: { delegationId: made.delegationId }, class: over ? "over" : null },
    h("strong", {}, who),
    ` ${until}${scope}`,
    made.reason ? h("span", { class: "muted" }, ` — ${made.reason}`) : null,
  );
  if (mine && !over) {
    const end = h("button", { type: "button", class: "secondary" }, "End now");
    end.addEventListener("click", async () => {
      end.disabled = true;
      try {
        await callJson(url(`v1/delegations/${encodeURIComponent(made.delegationId)}`), { method: "DELETE", ...state.auth });
        $("away-status").textContent = `${made.delegate} no longer answers for you.`;
      } catch (err) {
        $("away-error").textContent = err.message;
      }
      load();
    });
    item.append(" ", end);
  }
  return item;
}

async function load() {
  const mine = ++state.seq;
  let found;
  try {
    found = await callJson(url("v1/delegations"), state.auth);
  } catch (err) {
    if (mine === state.seq) $("away-error").textContent = err instanceof ApiError ? err.message : String(err);
    return;
  }
  if (mine !== state.seq || !state.auth) return;
  const relevant = found.delegations.filter((d) => [d.delegator, d.delegate].includes(state.me.principal));
  $("away-list").replaceChildren(
    ...(relevant.length ? relevant.map(row) : [h("li", { class: "muted" }, "Nothing is delegated by you or to you.")]),
  );
}

async function submit(event) {
  event.preventDefault();
  const form = event.target;
  $("away-error").textContent = "";
  $("away-status").textContent = "";
  const until = form.elements["away-until"].value; // a local date and time: the browser's zone
  const body = {
    delegate: form.elements["away-delegate"].value.trim(),
    until: until ? new Date(until).toISOString() : "",
    reason: form.elements["away-reason"].value.trim(),
  };
  try {
    const made = await callJson(url("v1/delegations"), { method: "POST", body, ...state.auth });
    $("away-status").textContent = `${made.delegate} answers for you until ${utcTime(made.until)}.`;
    form.reset();
  } catch (err) {
    $("away-error").textContent = err.message;
  }
  load();
}

function show(auth, me) {
  state.auth = auth;
  state.me = me;
  const form = h(
    "form",
    { id: "away-form", class: "away-form", "aria-labelledby": "away-title", novalidate: true },
    h("label", { for: "away-delegate" }, "Who answers for you"),
    h("input", { id: "away-delegate", name: "away-delegate", required: true, autocomplete: "off" }),
    h("label", { for: "away-until" }, "Until"),
    h("input", { id: "away-until", name: "away-until", type: "datetime-local", required: true }),
    h("label", { for: "away-reason" }, "Reason (optional)"),
    h("input", { id: "away-reason", name: "away-reason", maxlength: "500" }),
    h("button", { type: "submit" }, "Delegate"),
  );
  form.addEventListener("submit", submit);
  // The browser's own date picker offers what the host takes: from now, for at most 90 days.
  const local = (ms) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  form.elements["away-until"].min = local(Date.now());
  form.elements["away-until"].max = local(Date.now() + 90 * 86_400_000);
  $("away").replaceChildren(
    h("h2", { id: "away-title" }, "While you are away"),
    h(
      "p",
      { class: "muted" },
      "Someone you name answers in your place until then, with your rights and no more; each of their ",
      "answers is recorded as yours, made by them.",
    ),
    form,
    h("p", { id: "away-status", role: "status" }),
    h("p", { id: "away-error", class: "error", role: "alert" }),
    h("ul", { id: "away-list", class: "away-list" }),
  );
  $("away").hidden = false;
  load();
}

function hide() {
  state.auth = null;
  state.me = null;
  state.seq += 1;
  $("away").hidden = true;
  $("away").replaceChildren();
}

document.addEventListener("inbox:signed-in", (event) => {
  const { auth, me } = event.detail;
  if (me && me.canAnswer) show(auth, me);
  else hide();
});
document.addEventListener("inbox:signed-out", hide);
