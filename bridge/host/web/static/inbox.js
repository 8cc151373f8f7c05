// The operator inbox: sign in (through the organisation's identity provider, or with an API key),
// list pending interrupts live, open one, answer it.
//
// Signed in through the provider, the host's HttpOnly session cookie authenticates every call
// (the page never sees it). A pasted key lives in this tab's sessionStorage and travels only in
// the Authorization header. The list is re-read from GET /v1/interrupts whenever the host says it may
// have changed (/ui/api/inbox/events), and on every reconnection of that stream.

import { ApiError, callJson, followEvents } from "./api.js";
import { confirmation, keyBound, setupPasskeyButton } from "./passkeys.js";
import { clearSelection, keepSelection, selectionCell, setupBatch } from "./batch.js";
import { duration, h, utcTime } from "./dom.js";
import { renderInterrupt } from "./forms.js";
import { KIND_LABELS, conversationTurns } from "./summary.js";

const KEY_STORAGE = "openwop.inbox.apiKey";
const ROOT = new URL("../", document.baseURI);

const $ = (id) => document.getElementById(id);
const hostUrl = (path) => new URL(path, ROOT).toString();
const uiUrl = (path) => new URL(path, document.baseURI).toString();
const enc = encodeURIComponent;

const state = {
  key: null,
  session: false,
  me: null,
  kind: "",
  pageSize: 20,
  cursors: [null],
  page: 0,
  nextCursor: null,
  items: [],
  // interruptId -> {own, for: [{delegator, delegationId, until}]}: whom the person may answer for there.
  standIns: {},
  total: 0,
  fetchedAt: 0,
  open: null,
  live: null,
  refreshTimer: null,
};
let loadSeq = 0;
let openSeq = 0;

// --- signing in and out ------------------------------------------------------------

async function signIn(key, { restoring = false } = {}) {
  const error = $("sign-in-error");
  error.replaceChildren();
  if (!key) {
    error.textContent = "Paste an API key first.";
    return;
  }
  let me;
  try {
    me = await callJson(uiUrl("api/me"), { key });
  } catch (err) {
    if (restoring) sessionStorage.removeItem(KEY_STORAGE);
    showSignIn();
    error.textContent = restoring ? `Sign in again: ${err.message}` : err.message;
    return;
  }
  if (!me.canReadInbox) {
    sessionStorage.removeItem(KEY_STORAGE);
    showSignIn();
    error.textContent = `The key of ${me.principal} cannot read the inbox: it needs the interrupts:read scope.`;
    return;
  }
  sessionStorage.setItem(KEY_STORAGE, key);
  state.key = key;
  state.session = false;
  showApp(me, { focus: !restoring });
}

/** The call options of the current sign-in: the pasted key, or the session cookie. */
function auth() {
  return state.key ? { key: state.key } : { session: state.session };
}

function signedIn() {
  return Boolean(state.key || state.session);
}

function showApp(me, { focus }) {
  state.me = me;
  $("api-key").value = "";
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("account").hidden = false;
  const access = me.canAnswer ? "" : " · read only";
  const who = me.name ? `${me.name} (${me.principal}, tenant ${me.tenant})` : `${me.principal} (tenant ${me.tenant})`;
  $("whoami").textContent = `Signed in as ${who}${access}`;
  if (focus) $("inbox-title").focus();
  load();
  startLive();
  document.dispatchEvent(new CustomEvent("inbox:signed-in", { detail: { auth: auth(), me } }));
}

/** Signed in through the identity provider already (the session cookie)? Then show the inbox. */
async function resumeSession() {
  let me;
  try {
    me = await callJson(uiUrl("api/me"), { session: true });
  } catch {
    return false;
  }
  state.session = true;
  state.key = null;
  if (!me.canReadInbox) {
    signOut(`${me.name || me.principal} cannot read the inbox: it needs the interrupts:read scope.`);
    return true;
  }
  showApp(me, { focus: false });
  return true;
}

/** Offer "Sign in with <provider>" when the host signs people in through one. */
async function offerProvider() {
  let provider;
  try {
    provider = await callJson(uiUrl("auth/provider"));
  } catch {
    return false;
  }
  $("provider-name").textContent = provider.name;
  $("provider-sign-in").hidden = false;
  return true;
}

function showSignIn() {
  $("app").hidden = true;
  $("account").hidden = true;
  $("sign-in").hidden = false;
}

function signOut(message = "") {
  sessionStorage.removeItem(KEY_STORAGE);
  stopLive();
  if (state.session) {
    // The host revokes the session; the page forgets it either way.
    callJson(uiUrl("auth/logout"), { method: "POST", session: true }).catch(() => {});
  }
  state.session = false;
  state.key = null;
  state.me = null;
  state.open = null;
  state.items = [];
  state.standIns = {};
  $("inbox-rows").replaceChildren();
  clearSelection();
  clearDetail();
  showSignIn();
  document.dispatchEvent(new CustomEvent("inbox:signed-out"));
  $("sign-in-error").textContent = message;
  $("api-key").focus();
}

// --- the list ----------------------------------------------------------------------

function resetPages() {
  state.cursors = [null];
  state.page = 0;
}

async function load() {
  if (!signedIn()) return;
  const seq = ++loadSeq;
  const params = new URLSearchParams({ status: "pending", limit: String(state.pageSize) });
  if (state.kind) params.set("kind", state.kind);
  const cursor = state.cursors[state.page];
  if (cursor) params.set("cursor", cursor);
  const counting = new URLSearchParams(state.kind ? { kind: state.kind } : {});
  let page;
  let counted;
  try {
    [page, counted] = await Promise.all([
      callJson(hostUrl(`v1/interrupts?${params}`), auth()),
      callJson(uiUrl(`api/inbox/count?${counting}`), auth()),
    ]);
  } catch (err) {
    if (seq !== loadSeq) return;
    if (err instanceof ApiError && err.status === 401) {
      signOut(`${state.session ? "Your sign-in has ended" : "Your key is no longer accepted"}: ${err.message}`);
      return;
    }
    $("inbox-error").textContent = `Could not load the inbox: ${err.message}`;
    return;
  }
  if (seq !== loadSeq || !signedIn()) return;
  $("inbox-error").textContent = "";
  if (!page.items.length && state.page > 0) {
    // Everything on this page was answered meanwhile: step back.
    state.page -= 1;
    load();
    return;
  }
  const standIns = await standInsFor(page.items);
  if (seq !== loadSeq || !signedIn()) return;
  state.items = page.items;
  state.standIns = standIns;
  state.total = counted.pending;
  state.nextCursor = page.nextCursor || null;
  state.fetchedAt = Date.now();
  renderRows();
}

/** Which of these approvals the person may answer in someone else's place (a delegation to them). */
async function standInsFor(items) {
  const ids = items.filter((item) => item.kind === "approval").map((item) => item.interruptId);
  if (!ids.length || !(state.me && state.me.canAnswer)) return {};
  const query = new URLSearchParams(ids.map((id) => ["id", id]));
  try {
    return (await callJson(uiUrl(`api/inbox/for?${query}`), auth())).items;
  } catch {
    return {}; // the list stands without its marks
  }
}

/** "for alice" (or "for alice, carol") beside an approval the person may answer in someone's place. */
function forWhom(item) {
  const slots = state.standIns[item.interruptId];
  if (!slots) return null;
  const names = slots.for.map((d) => d.delegator).join(", ");
  const title = `Delegated to you: you may answer this in the place of ${names}${slots.own ? ", or as yourself" : ""}`;
  return h("span", { class: "for-whom", title }, ` for ${names}`);
}

function votesCell(item) {
  if (item.votes) {
    const rejected = item.votes.reject ? `, ${item.votes.reject} rejected` : "";
    return `${item.votes.accept}/${item.votes.required} accepted${rejected}`;
  }
  if (item.kind === "conversation.exchange") {
    return `${item.turnCount} ${item.turnCount === 1 ? "turn" : "turns"} so far`;
  }
  return "—";
}

function renderRows() {
  const focused = document.activeElement?.dataset?.interruptId;
  const rows = state.items.map((item) => {
    const open = state.open && state.open.interruptId === item.interruptId;
    const button = h(
      "button",
      { type: "button", class: "row-open", dataset: { interruptId: item.interruptId }, "aria-current": open ? "true" : null },
      item.title,
    );
    button.addEventListener("click", () => openInterrupt(item));
    const deadline = item.expiresAt
      ? h("span", { class: "deadline", dataset: { expiresAt: item.expiresAt }, title: utcTime(item.expiresAt) })
      : "—";
    return h(
      "tr",
      { dataset: { interruptId: item.interruptId, kind: item.kind }, class: open ? "current" : null },
      selectionCell(item),
      h("td", {}, button, forWhom(item)),
      h("td", {}, KIND_LABELS[item.kind] || item.kind),
      h("td", {}, item.workflowId),
      h("td", {}, h("span", { class: "age", dataset: { ageMs: String(item.ageMs) } })),
      h("td", {}, deadline),
      h("td", {}, votesCell(item)),
    );
  });
  if (!rows.length) {
    const what = state.kind ? `${KIND_LABELS[state.kind] || state.kind} requests` : "requests";
    rows.push(h("tr", {}, h("td", { colspan: "7", class: "empty" }, `No pending ${what}.`)));
  }
  $("inbox-rows").replaceChildren(...rows);
  keepSelection(state.items);
  // The total is counted over every page; the pages it makes, at the current page size.
  const total = Math.max(state.total, state.items.length);
  const pages = Math.max(state.page + 1, Math.ceil(total / state.pageSize));
  const filter = state.kind ? ` (${KIND_LABELS[state.kind] || state.kind})` : "";
  $("inbox-summary").textContent = state.items.length
    ? `${total} pending${filter}, page ${state.page + 1} of ${pages}`
    : `Nothing is waiting${filter}`;
  $("page-label").textContent = `Page ${state.page + 1}`;
  $("prev-page").disabled = state.page === 0;
  $("next-page").disabled = !state.nextCursor;
  tick();
  if (focused) {
    const again = document.querySelector(`#inbox-rows button[data-interrupt-id="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
}

function tick() {
  const elapsed = Date.now() - state.fetchedAt;
  for (const span of document.querySelectorAll("#inbox-rows .age")) {
    span.textContent = duration(Number(span.dataset.ageMs) + elapsed);
  }
  for (const span of document.querySelectorAll("#inbox-rows .deadline")) {
    const left = new Date(span.dataset.expiresAt).getTime() - Date.now();
    span.textContent = left > 0 ? `in ${duration(left)}` : "overdue";
  }
}

// --- live updates --------------------------------------------------------------------

function scheduleRefresh(delay = 50) {
  clearTimeout(state.refreshTimer);
  state.refreshTimer = setTimeout(() => {
    load();
    refreshOpen();
  }, delay);
}

function setLive(text, ok) {
  const live = $("live-status");
  if (live.textContent !== text) live.textContent = text;
  live.classList.toggle("ok", ok);
}

function pause(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

function startLive() {
  stopLive();
  const controller = new AbortController();
  state.live = controller;
  (async () => {
    let failures = 0;
    while (!controller.signal.aborted) {
      const opened = Date.now();
      try {
        await followEvents(uiUrl("api/inbox/events"), {
          ...auth(),
          signal: controller.signal,
          onOpen() {
            failures = 0;
            setLive("Live updates on", true);
            // Whatever changed while we were not listening.
            scheduleRefresh(0);
          },
          onEvent(type) {
            if (type === "changed") scheduleRefresh();
          },
        });
        // The host ends each stream after a while; one that ends at once is a
        // proxy or a server in trouble: back off instead of spinning.
        if (Date.now() - opened < 1000) throw new ApiError(0, { message: "the event stream closed at once" });
      } catch (err) {
        if (controller.signal.aborted) return;
        if (err instanceof ApiError && err.status === 401) {
          signOut(`${state.session ? "Your sign-in has ended" : "Your key is no longer accepted"}: ${err.message}`);
          return;
        }
        failures += 1;
        setLive("Reconnecting…", false);
        scheduleRefresh(0);
        await pause(Math.min(1000 * 2 ** (failures - 1), 15000), controller.signal);
      }
    }
  })();
}

function stopLive() {
  if (state.live) state.live.abort();
  state.live = null;
  clearTimeout(state.refreshTimer);
}

// --- one interrupt ---------------------------------------------------------------------

function clearDetail() {
  $("detail-title").textContent = "No interrupt open";
  $("detail-hint").hidden = false;
  $("detail-error").textContent = "";
  $("detail-notice").replaceChildren();
  $("detail-body").replaceChildren();
}

function detailUrl(ref) {
  return hostUrl(`v1/runs/${enc(ref.runId)}/interrupts/${enc(ref.nodeId)}`);
}

async function transcriptFor(ref, view) {
  if (view.kind !== "conversation.exchange") return null;
  const snapshot = await callJson(hostUrl(`v1/runs/${enc(ref.runId)}`), auth());
  return conversationTurns(snapshot.channels, view.conversationId);
}

async function openInterrupt(item) {
  const ref = { runId: item.runId, nodeId: item.nodeId, interruptId: item.interruptId, panel: null };
  state.open = ref;
  const seq = ++openSeq;
  $("detail-hint").hidden = true;
  $("detail-error").textContent = "";
  $("detail-notice").replaceChildren();
  $("detail-title").textContent = item.title;
  $("detail-body").replaceChildren(h("p", { class: "muted" }, "Loading…"));
  renderRows();
  try {
    const view = await callJson(detailUrl(ref), auth());
    const transcript = await transcriptFor(ref, view);
    if (seq !== openSeq) return;
    showPanel(ref, view, transcript);
    $("detail-title").focus();
  } catch (err) {
    if (seq !== openSeq) return;
    $("detail-body").replaceChildren();
    $("detail-error").textContent = `Could not open this request: ${err.message}`;
  }
}

function detailFacts(view) {
  const rows = [
    ["Kind", KIND_LABELS[view.kind] || view.kind],
    ["Workflow", view.workflowId],
    ["Run", view.runId],
    ["Step", view.nodeId],
    ["Requested", utcTime(view.requestedAt)],
    ["Answer by", view.expiresAt ? utcTime(view.expiresAt) : ""],
  ];
  if (view.undeliverable) rows.push(["Delivery", "Undeliverable: no notice reached anyone"]);
  const list = h("dl", { class: "facts meta" });
  for (const [term, value] of rows) {
    if (value) list.append(h("div", {}, h("dt", {}, term), h("dd", {}, value)));
  }
  const told = notificationsList(view.notifications);
  if (told) list.append(h("div", {}, h("dt", {}, "Notified"), h("dd", {}, told)));
  return list;
}

/** Who was told about the request, on which channel, and how far each notice got. */
function notificationsList(summary) {
  if (!summary || !Array.isArray(summary.recipients) || summary.recipients.length === 0) return null;
  const list = h("ul", { class: "notifications" });
  for (const n of summary.recipients) {
    const attempts = `${n.attempts} attempt${n.attempts === 1 ? "" : "s"}`;
    const last = n.lastAttemptAt ? `, last ${utcTime(n.lastAttemptAt)}` : "";
    list.append(h("li", { dataset: { state: n.state } }, `${n.recipient} by ${n.channel}: ${n.state} (${attempts}${last})`));
  }
  const more = summary.total - summary.recipients.length;
  if (more > 0) list.append(h("li", { class: "muted" }, `and ${more} more`));
  return list;
}

function showPanel(ref, view, transcript) {
  const hadFocus = $("detail").contains(document.activeElement) && document.activeElement !== $("detail-title");
  ref.interruptId = view.interruptId;
  ref.panel = renderInterrupt(view, {
    mode: state.me && state.me.canAnswer ? "answer" : "read",
    transcript,
    me: state.me && state.me.principal,
    standIn: state.standIns[view.interruptId] || null,
    async submit(resumeValue) {
      const body = { runId: ref.runId, nodeId: ref.nodeId, resumeValue };
      const headers = keyBound(view) ? await confirmation(uiUrl("api/passkeys/challenge"), body, auth()) : {};
      const result = await callJson(detailUrl(ref), { method: "POST", ...auth(), headers, body: { resumeValue } });
      if (result.duplicate) {
        // Not counted: say which vote stands (the votes as they are now).
        const now = await callJson(detailUrl(ref), auth()).catch(() => null);
        result.votesCast = (now && now.votes && now.votes.votes) || [];
      }
      // Do not wait for the event stream to show what this answer changed.
      scheduleRefresh();
      return result;
    },
  });
  $("detail-title").textContent = view.title;
  $("detail-notice").replaceChildren();
  if (keyBound(view) && view.status === "pending") {
    const why = "This decision is confirmed with your passkey: your browser will ask for it when you submit.";
    $("detail-notice").replaceChildren(h("p", { class: "notice", id: "passkey-needed" }, why));
  }
  $("detail-body").replaceChildren(detailFacts(view), ref.panel.element);
  if (hadFocus) {
    const first = ref.panel.element.querySelector("form textarea, form input, form select");
    if (first) first.focus();
  }
}

async function refreshOpen() {
  const ref = state.open;
  if (!ref || !ref.panel || !signedIn()) return;
  let view;
  try {
    view = await callJson(detailUrl(ref), auth());
  } catch {
    return;
  }
  if (ref !== state.open) return;
  if (view.interruptId === ref.interruptId) {
    ref.panel.update(view);
    return;
  }
  // The step asks again (a new conversation turn, or an approval sent back for revision).
  if (view.status !== "pending") return;
  if (view.kind === "conversation.exchange" && ref.panel.view.kind === view.kind && !ref.panel.dirty) {
    let transcript;
    try {
      transcript = await transcriptFor(ref, view);
    } catch {
      return;
    }
    if (ref === state.open) showPanel(ref, view, transcript);
    return;
  }
  if (!ref.panel.settled) ref.panel.update({ ...ref.panel.view, status: "answered elsewhere" });
  const button = h("button", { type: "button" }, "Open the new request");
  button.addEventListener("click", async () => {
    showPanel(ref, view, await transcriptFor(ref, view));
    $("detail-title").focus();
  });
  $("detail-notice").replaceChildren(
    h("p", { class: "notice", role: "status" }, "This step is asking again with a new request. ", button),
  );
}

// --- wiring ----------------------------------------------------------------------------

function init() {
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("api-key").value.trim());
  });
  $("sign-out").addEventListener("click", () => signOut());
  setupPasskeyButton($("add-passkey"), $("passkey-status"), uiUrl, auth);
  $("kind-filter").addEventListener("change", (event) => {
    state.kind = event.target.value;
    resetPages();
    load();
  });
  $("page-size").addEventListener("change", (event) => {
    state.pageSize = Number(event.target.value);
    resetPages();
    load();
  });
  $("refresh").addEventListener("click", () => scheduleRefresh(0));
  setupBatch({
    call: (body) => callJson(hostUrl("v1/interrupts/batch"), { method: "POST", body, ...auth() }),
    onDone: () => scheduleRefresh(0),
  });
  $("prev-page").addEventListener("click", () => {
    if (state.page === 0) return;
    state.page -= 1;
    load();
  });
  $("next-page").addEventListener("click", () => {
    if (!state.nextCursor) return;
    state.cursors[state.page + 1] = state.nextCursor;
    state.page += 1;
    load();
  });
  state.kind = $("kind-filter").value;
  state.pageSize = Number($("page-size").value);
  setInterval(tick, 1000);
  const stored = sessionStorage.getItem(KEY_STORAGE);
  if (stored) {
    signIn(stored, { restoring: true });
    offerProvider();
    return;
  }
  // A session exists only where the host signs people in through a provider.
  offerProvider().then(async (offered) => {
    if (!(offered && (await resumeSession()))) showSignIn();
  });
}

init();
