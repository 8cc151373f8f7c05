// The chat page: sign in with a key, pick an agent (a workflow the host serves), talk
// to it over AG-UI, answer its interrupts on cards or in the composer, and pick the
// thread up again after a reload.

import { createAgent, describeFailure, listAgents, runOnce, runStatus } from "./client.js";
import { buildCard, conversationReply, interruptKind, isExpired } from "./cards.js";
import { formatJson, h, randomId, showError } from "./dom.js";
import { ResumeBatch } from "./resume.js";
import { LocalError } from "./schema-form.js";
import { apiKey, chosenAgent, forgetAllThreads, forgetThread, loadThread, newThread, saveThread } from "./session.js";
import { Transcript } from "./transcript.js";

const $ = (id) => document.getElementById(id);
const TERMINAL = new Set(["completed", "failed", "cancelled"]);

const ui = {
  signIn: $("sign-in"),
  signInForm: $("sign-in-form"),
  keyInput: $("api-key"),
  signInError: $("sign-in-error"),
  account: $("account"),
  signOut: $("sign-out"),
  app: $("app"),
  agentSelect: $("agent"),
  agentDescription: $("agent-description"),
  start: $("start"),
  newThread: $("new-thread"),
  threadId: $("thread-id"),
  runInfo: $("run-info"),
  runId: $("run-id"),
  runState: $("run-state"),
  cards: $("cards"),
  runError: $("run-error"),
  runStatus: $("run-status"),
  runResult: $("run-result"),
  composer: $("composer"),
  message: $("message"),
  send: $("send"),
  endConversation: $("end-conversation"),
  composerHint: $("composer-hint"),
  composerError: $("composer-error"),
};

const transcript = new Transcript($("transcript"));
const emptyHint = $("transcript-empty");

const state = {
  key: null,
  agents: [],
  agentId: null,
  record: null, // the thread as remembered in sessionStorage
  agent: null, // the HttpAgent on that thread
  subscription: null,
  running: false,
  pending: [], // the interrupts the last run finished with
  batch: new ResumeBatch(),
  cards: new Map(), // interruptId → card
};

// The composer, as an answer origin (cards are the others).
const composer = {
  isComposer: true,
  showError: (failure) => showError(ui.composerError, failure),
  say: (text) => {
    ui.composerHint.textContent = text;
  },
  setBusy: () => {},
  focus: () => ui.message.focus(),
};

// --- thread bookkeeping ----------------------------------------------------------------

function save() {
  if (state.agentId && state.record) saveThread(state.agentId, state.record);
}

function conversationTurn() {
  return state.pending.find((it) => interruptKind(it) === "conversation") || null;
}

/** The "no messages yet" hint, only while the thread shows nothing at all. */
function updateEmptyHint() {
  emptyHint.hidden = transcript.size > 0 || state.cards.size > 0 || state.running;
}

function showMessages(messages) {
  transcript.render(messages);
  updateEmptyHint();
}

function setStatus(text) {
  ui.runStatus.textContent = text;
}

function renderThreadInfo() {
  const record = state.record;
  ui.threadId.textContent = record ? record.threadId : "";
  ui.runInfo.hidden = !record?.runId;
  ui.runId.textContent = record?.runId || "";
  ui.runState.textContent = record?.status || "";
}

function updateControls() {
  const busy = state.running;
  const turn = conversationTurn();
  const others = state.pending.filter((it) => interruptKind(it) !== "conversation");
  ui.agentSelect.disabled = busy;
  ui.newThread.disabled = busy;
  ui.start.disabled = busy || state.pending.length > 0;
  ui.send.disabled = busy || (others.length > 0 && !turn);
  ui.endConversation.hidden = !turn;
  ui.endConversation.disabled = busy;
  ui.composer.setAttribute("aria-busy", busy ? "true" : "false");
  if (turn) ui.composerHint.textContent = "The assistant is waiting for your reply.";
  else if (others.length) ui.composerHint.textContent = "Answer the request above to continue.";
  else ui.composerHint.textContent = "A message starts a new run on this thread.";
  for (const card of state.cards.values()) card.setBusy(busy);
  updateEmptyHint();
}

function findToolCall(toolCallId) {
  for (const message of state.agent?.messages || []) {
    const call = (message.toolCalls || []).find((c) => c.id === toolCallId);
    if (call) {
      let args;
      try {
        args = JSON.parse(call.function.arguments || "{}");
      } catch {
        args = undefined;
      }
      return { name: call.function.name, args };
    }
  }
  return null;
}

function renderCards({ focus = false } = {}) {
  state.cards = new Map();
  ui.cards.replaceChildren();
  for (const it of state.pending) {
    if (interruptKind(it) === "conversation" && !isExpired(it)) continue;
    const card = buildCard(it, { answer, findToolCall });
    state.cards.set(it.id, card);
    ui.cards.append(card.node);
  }
  if (focus) {
    const first = state.cards.values().next().value;
    if (first) first.focus();
    else ui.message.focus();
  }
}

function showResult(finished) {
  ui.runResult.replaceChildren();
  if (finished?.outcome === "success" && finished.result && Object.keys(finished.result).length) {
    ui.runResult.append(
      h("details", { class: "result" }, h("summary", {}, "What the run produced"), h("pre", { class: "code" }, formatJson(finished.result))),
    );
  }
}

function showWarnings(warnings) {
  if (!warnings.length) return;
  ui.runResult.append(h("ul", { class: "notice" }, warnings.map((w) => h("li", {}, w.message || formatJson(w)))));
}

// --- runs ---------------------------------------------------------------------------------

/**
 * One AG-UI run on the current thread. `origins` are the cards / composer whose
 * answers it carries (errors go back to them); `echo` is the person's chat message,
 * added to the thread for this run and taken back if the run is refused.
 */
async function send(params, { origins = [], echo = null } = {}) {
  const agent = state.agent;
  const wasOpen = state.record.open;
  state.running = true;
  ui.runError.replaceChildren();
  ui.runResult.replaceChildren();
  for (const origin of origins) {
    origin.showError(null);
    if (!origin.isComposer) origin.say("Sending…");
  }
  updateControls();
  setStatus("Working…");
  state.record.open = true;
  save();
  if (echo) agent.addMessage(echo);

  const focusInCards = ui.cards.contains(document.activeElement);
  const { finished, failure, warnings } = await runOnce(agent, params);
  state.running = false;
  if (agent !== state.agent) return; // the person switched threads meanwhile

  const wop = agent.state?.openwop;
  if (wop?.runId) {
    state.record.runId = wop.runId;
    state.record.status = wop.status;
  }
  if (failure && !finished) {
    refused(failure, { origins, echo, wasOpen });
  } else {
    state.pending = finished.outcome === "interrupt" ? finished.interrupts : [];
    state.batch = new ResumeBatch(state.pending);
    state.record.open = state.pending.length > 0;
    if (finished.outcome === "success") {
      state.record.status = "completed";
      setStatus("Run finished.");
    } else if (finished.outcome === "cancelled") {
      state.record.status = "cancelled";
      setStatus("The run was cancelled.");
    } else {
      setStatus(conversationTurn() && state.pending.length === 1 ? "Waiting for your reply." : "Waiting for your answer.");
    }
    if (echo && ui.message.value === echo.content) ui.message.value = "";
    renderCards({ focus: focusInCards });
    showResult(finished);
  }
  showWarnings(warnings);
  state.record.messages = JSON.parse(JSON.stringify(agent.messages));
  save();
  renderThreadInfo();
  updateControls();
}

/** The run did not finish: refused before it started, refused by the client, or failed. */
function refused(failure, { origins, echo, wasOpen }) {
  if (echo) state.agent.setMessages(state.agent.messages.filter((m) => m.id !== echo.id));
  for (const origin of origins) origin.say("");
  if (failure.source === "run") {
    // RUN_ERROR: the run itself failed; nothing is open any more.
    state.pending = [];
    state.batch = new ResumeBatch();
    state.record.open = false;
    state.record.status = "failed";
    renderCards();
    showError(ui.runError, { message: `The run failed: ${failure.message}` });
    setStatus("");
    return;
  }
  // Nothing happened on the server: the same interrupts are still open, and every
  // card keeps what was typed. The error goes where the refused answer came from.
  state.record.open = wasOpen;
  const target = failure.details?.interruptId;
  let origin = (target && state.batch.originOf(target)) || (origins.length === 1 ? origins[0] : null);
  state.batch.forget(target && state.batch.originOf(target) ? target : null);
  if (state.pending.some(isExpired)) {
    // The client refuses to answer an expired interrupt: its card now offers to cancel it.
    state.batch.forget();
    renderCards();
    if (origin && !origin.isComposer) origin = state.cards.get(origin.interrupt.id) || null;
  }
  if (origin) origin.showError(failure);
  else showError(ui.runError, failure);
  const where = origin?.isComposer ? "below" : "above";
  setStatus(state.pending.length ? `Not sent: see the message ${where}.` : "");
}

/** An answer from a card or the composer; sent once every open interrupt has one. */
async function answer(entry, origin) {
  if (state.running) return;
  state.batch.add(entry, origin);
  const missing = state.batch.missing();
  if (missing.length) {
    origin.say(`Answer kept. ${missing.length} more request${missing.length === 1 ? "" : "s"} to answer before it is sent.`);
    return;
  }
  const echo = state.batch.originOf(conversationTurn()?.id)?.echo || null;
  await send({ resume: state.batch.resume() }, { origins: state.batch.origins(), echo });
}

function start() {
  if (state.running || state.pending.length) return;
  // A new run starts from the thread's messages; the previous run's state snapshot
  // is not sent back as its inputs.
  state.agent.setState({});
  send({});
}

function composerReply(turn, text) {
  const reply = conversationReply(turn);
  if (!reply || reply.type === "string" || reply.type === undefined) return text;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new LocalError(`This reply must be JSON: ${err.message}`);
  }
}

async function submitMessage() {
  if (state.running) return;
  const text = ui.message.value;
  showError(ui.composerError, null);
  if (!text.trim()) {
    showError(ui.composerError, { message: "Write a message first." });
    ui.message.focus();
    return;
  }
  const echo = { id: randomId(), role: "user", content: text };
  const turn = conversationTurn();
  if (turn) {
    let payload;
    try {
      payload = composerReply(turn, text);
    } catch (err) {
      showError(ui.composerError, { message: err.message });
      return;
    }
    await answer({ interruptId: turn.id, status: "resolved", payload }, { ...composer, echo });
    return;
  }
  if (state.pending.length) return;
  state.agent.setState({});
  await send({}, { origins: [composer], echo });
}

async function endConversation() {
  const turn = conversationTurn();
  if (!turn || state.running) return;
  await answer({ interruptId: turn.id, status: "resolved", payload: { operation: "close" } }, composer);
}

// --- threads and agents -------------------------------------------------------------------

async function openThread(record, { reconnect = false } = {}) {
  state.subscription?.unsubscribe();
  state.record = record;
  state.pending = [];
  state.batch = new ResumeBatch();
  state.agent = createAgent({ agentId: state.agentId, key: state.key, threadId: record.threadId, messages: record.messages });
  state.subscription = state.agent.subscribe({
    onMessagesChanged: ({ messages }) => showMessages(messages),
  });
  showMessages(record.messages);
  renderCards();
  ui.runError.replaceChildren();
  ui.runResult.replaceChildren();
  showError(ui.composerError, null);
  setStatus(record.status === "completed" ? "Run finished." : "");
  save();
  renderThreadInfo();
  updateControls();
  if (reconnect) await rejoin();
}

/**
 * After a reload: ask the endpoint for the thread's open interrupts again (a run
 * with nothing to resume re-emits them), unless the run ended meanwhile — such a
 * run on a finished thread would start the workflow over.
 */
async function rejoin() {
  const record = state.record;
  if (record.runId) {
    let status;
    try {
      status = await runStatus(state.key, record.runId);
    } catch {
      status = undefined; // could not tell: ask the endpoint anyway
    }
    if (status === null) {
      showError(ui.runError, { message: "The server does not know this thread's run (for this key): a new thread was opened." });
      await openThread(newThread());
      return;
    }
    if (TERMINAL.has(status)) {
      record.open = false;
      record.status = status;
      save();
      renderThreadInfo();
      setStatus(`The run ended (${status}) while the page was away.`);
      return;
    }
  }
  setStatus("Reconnecting…");
  await send({});
}

async function selectAgent(agentId) {
  state.agentId = agentId;
  chosenAgent.set(agentId);
  const info = state.agents.find((a) => a.id === agentId);
  ui.agentDescription.textContent = info?.description || "";
  const stored = loadThread(agentId);
  await openThread(stored || newThread(), { reconnect: Boolean(stored?.open) });
}

// --- signing in ---------------------------------------------------------------------------

function showSignIn(failure = null) {
  ui.app.hidden = true;
  ui.account.hidden = true;
  ui.signIn.hidden = false;
  showError(ui.signInError, failure);
}

async function signIn(key, { restoring = false } = {}) {
  let agents;
  try {
    agents = await listAgents(key);
  } catch (err) {
    if (restoring) apiKey.clear();
    showSignIn(describeFailure(err));
    ui.keyInput.focus();
    return;
  }
  state.key = key;
  state.agents = agents;
  apiKey.set(key);
  ui.keyInput.value = "";
  ui.signIn.hidden = true;
  ui.account.hidden = false;
  ui.app.hidden = false;
  ui.agentSelect.replaceChildren(
    ...agents.map((a) => h("option", { value: a.id }, a.name === a.id ? a.id : `${a.name} (${a.id})`)),
  );
  if (!agents.length) {
    showError(ui.runError, { message: "This host serves no agents." });
    return;
  }
  const remembered = chosenAgent.get();
  const agentId = agents.some((a) => a.id === remembered) ? remembered : agents[0].id;
  ui.agentSelect.value = agentId;
  await selectAgent(agentId);
}

function signOut() {
  apiKey.clear();
  forgetAllThreads();
  state.subscription?.unsubscribe();
  Object.assign(state, { key: null, agent: null, record: null, pending: [], batch: new ResumeBatch() });
  state.cards = new Map();
  ui.cards.replaceChildren();
  showMessages([]);
  showSignIn();
  ui.keyInput.focus();
}

// --- wiring -------------------------------------------------------------------------------

ui.signInForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const key = ui.keyInput.value.trim();
  if (!key) {
    showError(ui.signInError, { message: "Paste an API key first." });
    ui.keyInput.focus();
    return;
  }
  signIn(key);
});
ui.signOut.addEventListener("click", signOut);
ui.agentSelect.addEventListener("change", () => selectAgent(ui.agentSelect.value));
ui.start.addEventListener("click", start);
ui.newThread.addEventListener("click", () => {
  forgetThread(state.agentId);
  openThread(newThread());
  ui.message.focus();
});
ui.composer.addEventListener("submit", (event) => {
  event.preventDefault();
  submitMessage();
});
ui.message.addEventListener("keydown", (event) => {
  // Enter sends, Shift+Enter starts a new line.
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.composer.requestSubmit();
  }
});
ui.endConversation.addEventListener("click", endConversation);

const remembered = apiKey.get();
if (remembered) signIn(remembered, { restoring: true });
else showSignIn();
