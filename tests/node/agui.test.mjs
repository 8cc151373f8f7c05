// The bridge's AG-UI endpoint driven by the real @ag-ui/client HttpAgent.
// Run by tests/adapters/agui/test_agui_client.py, which starts a server and sets BRIDGE_URL and BRIDGE_KEY.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

const URL = process.env.BRIDGE_URL;
const KEY = process.env.BRIDGE_KEY;
assert.ok(URL && KEY, "BRIDGE_URL and BRIDGE_KEY must be set");

function agent(workflow, threadId = randomUUID()) {
  return new HttpAgent({ url: `${URL}/agui/${workflow}`, headers: { Authorization: `Bearer ${KEY}` }, threadId });
}

// Runs the agent once; returns what the run finished with and the custom events it saw.
async function run(a, params = {}) {
  let finished = null;
  let error = null;
  const custom = [];
  const text = [];
  const toolResults = [];
  const roles = {};
  await a.runAgent(params, {
    onRunFinishedEvent: (p) => { finished = p; },
    onRunErrorEvent: ({ event }) => { error = event; },
    onCustomEvent: ({ event }) => { custom.push(event); },
    onTextMessageStartEvent: ({ event }) => { roles[event.messageId] = event.role; },
    onTextMessageContentEvent: ({ event }) => { if (roles[event.messageId] === "assistant") text.push(event.delta); },
    onToolCallResultEvent: ({ event }) => { toolResults.push(event); },
  });
  return { finished, error, custom, text, toolResults };
}

const resolved = (interrupt, payload) => ({ interruptId: interrupt.id, status: "resolved", payload });

test("approval round trip", async () => {
  const a = agent("conformance-approval");
  const first = await run(a);
  assert.equal(first.finished.outcome, "interrupt");
  assert.equal(a.pendingInterrupts.length, 1);
  const [it] = a.pendingInterrupts;
  assert.equal(it.reason, "confirmation");
  assert.equal(it.metadata.openwop.kind, "approval");
  const second = await run(a, { resume: [resolved(it, { approved: true })] });
  assert.equal(second.finished.outcome, "success");
  assert.equal(second.finished.result.gate.action, "accept");
  assert.deepEqual(a.pendingInterrupts, []);
});

test("two interrupts open at once are answered in one resume", async () => {
  const a = agent("interop-two-gates");
  await run(a);
  assert.equal(a.pendingInterrupts.length, 2);
  const done = await run(a, { resume: a.pendingInterrupts.map((it) => resolved(it, { action: "accept" })) });
  assert.equal(done.finished.outcome, "success");
});

test("a partial resume re-interrupts with what is still open", async () => {
  const a = agent("interop-two-gates");
  await run(a);
  const [legal, finance] = a.pendingInterrupts;
  // runAgent refuses to leave an interrupt unaddressed, so send the partial answer
  // through the client's own transport, as a client that only knew one interrupt would.
  const events = [];
  await new Promise((resolve, reject) => {
    a.run({ threadId: a.threadId, runId: randomUUID(), messages: [], tools: [], context: [], state: {},
            forwardedProps: {}, resume: [resolved(legal, { approved: true })] })
      .subscribe({ next: (e) => events.push(e), error: reject, complete: resolve });
  });
  const last = events.at(-1);
  assert.equal(last.type, "RUN_FINISHED");
  assert.equal(last.outcome.type, "interrupt");
  assert.deepEqual(last.outcome.interrupts.map((i) => i.id), [finance.id]);
});

test("a quorum vote that does not settle ends with the same interrupt and the votes so far", async () => {
  const a = agent("interop-quorum-pair");
  await run(a);
  const board = a.pendingInterrupts.find((i) => i.metadata.openwop.nodeId === "board");
  const owner = a.pendingInterrupts.find((i) => i.metadata.openwop.nodeId === "owner");
  const after = await run(a, { resume: [resolved(owner, { approved: true }), resolved(board, { approved: true })] });
  assert.equal(after.finished.outcome, "interrupt");
  assert.deepEqual(a.pendingInterrupts.map((i) => i.id), [board.id]);
  assert.equal(a.pendingInterrupts[0].metadata.openwop.votes.accept, 1);
  assert.equal(a.pendingInterrupts[0].metadata.openwop.votes.required, 2);
});

test("an expired interrupt can only be cancelled, and cancelling moves the thread on", async () => {
  const a = agent("interop-expiring");
  await run(a);
  const [it] = a.pendingInterrupts;
  assert.ok(it.expiresAt, "the interrupt carries its deadline");
  await new Promise((r) => setTimeout(r, Math.max(0, new Date(it.expiresAt) - Date.now()) + 300));
  await assert.rejects(run(a, { resume: [resolved(it, { approved: true })] }), /expired/);
  const moved = await run(a, { resume: [{ interruptId: it.id, status: "cancelled" }] });
  // The host had already expired it (a timeout rejects); the cancel is reported, not applied again.
  const warning = moved.custom.find((e) => e.name === "openwop.warning");
  assert.equal(warning?.value.code, "interrupt_expired");
  assert.equal(warning.value.interruptId, it.id);
  assert.equal(moved.finished.outcome, "success");
  assert.equal(moved.finished.result.escalate !== undefined, true);
});

test("a reconnect re-emits the open interrupts and runs nothing", async () => {
  const a = agent("conformance-approval");
  await run(a);
  const [it] = a.pendingInterrupts;
  const reloaded = agent("conformance-approval", a.threadId);
  const again = await run(reloaded);
  assert.equal(again.finished.outcome, "interrupt");
  assert.deepEqual(reloaded.pendingInterrupts.map((i) => i.id), [it.id]);
});

test("a three-turn conversation in the chat thread", async () => {
  const a = agent("demo-conversation");
  const opened = await run(a);
  assert.deepEqual(opened.text, ["Hi! I will ask you three short questions about your trip.", "Where are you travelling, and why?"]);
  assert.equal(a.pendingInterrupts[0].reason, "input_required");
  const answers = [["Lisbon, a conference", "When, and for how long?"], ["May, three nights", "How many travellers?"], ["Two", null]];
  for (const [answer, next] of answers) {
    const [turn] = a.pendingInterrupts;
    // What a chat UI does: show the person's message, and answer the open turn with it.
    a.addMessage({ id: randomUUID(), role: "user", content: answer });
    const out = await run(a, { resume: [resolved(turn, answer)] });
    if (next === null) {
      assert.equal(out.finished.outcome, "success");
      assert.deepEqual(out.finished.result.chat.outcome.replies, ["Lisbon, a conference", "May, three nights", "Two"]);
    } else {
      assert.equal(out.finished.outcome, "interrupt");
      assert.deepEqual(out.text, [next]);
    }
  }
  // The thread holds each message once: the canonical turns replaced the echoed user messages.
  assert.deepEqual(a.messages.map((m) => m.role),
    ["assistant", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]);
  assert.deepEqual(a.messages.filter((m) => m.role === "user").map((m) => m.content),
    ["Lisbon, a conference", "May, three nights", "Two"]);
});

test("a tool call approved with edited arguments", async () => {
  const a = agent("demo-tool-approval");
  const calls = [];
  await a.runAgent({}, { onToolCallStartEvent: ({ event }) => calls.push(event.toolCallId) });
  const [it] = a.pendingInterrupts;
  assert.equal(it.reason, "tool_call");
  assert.deepEqual(calls, [it.toolCallId]);
  const edited = { ...it.responseSchema.properties.editedArgs.default, to: "beta-testers@example.com" };
  const done = await run(a, { resume: [resolved(it, { approved: true, editedArgs: edited })] });
  assert.equal(done.finished.outcome, "success");
  assert.equal(done.toolResults.length, 1);
  assert.equal(done.toolResults[0].toolCallId, it.toolCallId);
  assert.equal(JSON.parse(done.toolResults[0].content).args.to, "beta-testers@example.com");
});

test("an entry for a wrong interrupt id is ignored with a warning", async () => {
  const a = agent("conformance-approval");
  await run(a);
  const [it] = a.pendingInterrupts;
  const out = await run(a, { resume: [resolved(it, { approved: true }), { interruptId: "int_not_here", status: "resolved", payload: {} }] });
  assert.equal(out.finished.outcome, "success");
  assert.equal(out.custom.length, 1);
  assert.equal(out.custom[0].name, "openwop.warning");
  assert.equal(out.custom[0].value.interruptId, "int_not_here");
});
