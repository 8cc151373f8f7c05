// LangGraph graphs served by the bridge (serve --graph), driven by the real @ag-ui/client.
// The first three tests are the cases REFERENCE §2 lists as failures of ag-ui-langgraph 0.0.47.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

const URL = process.env.BRIDGE_URL;
const KEY = process.env.BRIDGE_KEY;
assert.ok(URL && KEY, "BRIDGE_URL and BRIDGE_KEY must be set");

const agent = (workflow) =>
  new HttpAgent({ url: `${URL}/agui/${workflow}`, headers: { Authorization: `Bearer ${KEY}` }, threadId: randomUUID() });

async function run(a, params = {}) {
  let finished = null;
  const roles = {};
  const text = [];
  const toolStarts = [];
  const toolResults = [];
  const custom = [];
  await a.runAgent(params, {
    onRunFinishedEvent: (p) => { finished = p; },
    onTextMessageStartEvent: ({ event }) => { roles[event.messageId] = event.role; },
    onTextMessageContentEvent: ({ event }) => { if (roles[event.messageId] === "assistant") text.push(event.delta); },
    onToolCallStartEvent: ({ event }) => { toolStarts.push(event.toolCallId); },
    onToolCallResultEvent: ({ event }) => { toolResults.push(event); },
    onCustomEvent: ({ event }) => { custom.push(event); },
  });
  return { finished, text, toolStarts, toolResults, custom };
}

async function raw(a, resume) {
  const events = [];
  await new Promise((resolve, reject) => {
    a.run({ threadId: a.threadId, runId: randomUUID(), messages: [], tools: [], context: [], state: {},
            forwardedProps: {}, resume }).subscribe({ next: (e) => events.push(e), error: reject, complete: resolve });
  });
  return events;
}

test("two interrupts open at once resume together (not an error)", async () => {
  const a = agent("fan");
  await run(a);
  assert.equal(a.pendingInterrupts.length, 2);
  const done = await run(a, { resume: a.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { ok: true } })) });
  assert.equal(done.finished.outcome, "success");
  assert.equal(done.finished.result.graph.state.answers.length, 2);
});

test("response_schema is enforced: a bad answer is refused and never reaches the graph", async () => {
  const a = agent("single");
  await run(a);
  const [it] = a.pendingInterrupts;
  assert.deepEqual(it.responseSchema.required, ["ok"]);
  await assert.rejects(run(a, { resume: [{ interruptId: it.id, status: "resolved", payload: { ok: "nope" } }] }), /400/);
  const done = await run(a, { resume: [{ interruptId: it.id, status: "resolved", payload: { ok: true } }] });
  assert.equal(done.finished.outcome, "success");
  assert.deepEqual(done.finished.result.graph.state.answers, [{ topic: "only", ok: true }]);
});

test("a resume with a wrong interrupt id is not delivered to the open interrupt", async () => {
  const a = agent("single");
  await run(a);
  const [it] = a.pendingInterrupts;
  const events = await raw(a, [{ interruptId: "0123456789abcdef0123456789abcdef", status: "resolved", payload: { ok: true } }]);
  const warning = events.find((e) => e.type === "CUSTOM");
  assert.equal(warning.value.code, "unknown_interrupt");
  const last = events.at(-1);
  assert.equal(last.outcome.type, "interrupt");
  assert.deepEqual(last.outcome.interrupts.map((i) => i.id), [it.id]);
});

test("a gated tool call with edited arguments through HumanInTheLoopMiddleware", async () => {
  const a = agent("agent");
  a.addMessage({ id: randomUUID(), role: "user", content: "launch" });
  const first = await run(a);
  assert.deepEqual(first.text, ["Sending it now."]);
  assert.deepEqual(first.toolStarts.sort(), ["call_mail", "call_rm"]);
  const byCall = Object.fromEntries(a.pendingInterrupts.map((i) => [i.toolCallId, i]));
  assert.equal(byCall.call_mail.reason, "tool_call");
  const done = await run(a, { resume: [
    { interruptId: byCall.call_mail.id, status: "resolved", payload: { approved: true, editedArgs: { to: "team@acme.test", subject: "Launch" } } },
    { interruptId: byCall.call_rm.id, status: "resolved", payload: { approved: false, feedback: "keep it" } },
  ] });
  assert.equal(done.finished.outcome, "success");
  assert.deepEqual(done.text, ["All done."]);
  const results = Object.fromEntries(done.toolResults.map((r) => [r.toolCallId, r.content]));
  assert.match(results.call_mail, /team@acme.test/);
  assert.match(results.call_rm, /keep it/);
});
