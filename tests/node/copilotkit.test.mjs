// The bridge's AG-UI endpoint behind CopilotKit: @copilotkit/runtime (v2, headless in Node) holds an
// HttpAgent per workflow, and @copilotkit/core drives it as a chat frontend does, answering interrupts
// the way its useInterrupt hook does. Run by tests/adapters/agui/test_agui_client.py, which starts a server and sets
// BRIDGE_URL and BRIDGE_KEY (and turns CopilotKit's telemetry off).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";

// CopilotKitCore connects to its runtime only where a `window` exists (a browser); this suite is that browser.
globalThis.window = globalThis;
const { CopilotKitCore, ɵInterruptState: InterruptState } = await import("@copilotkit/core");

const URL_ = process.env.BRIDGE_URL;
const KEY = process.env.BRIDGE_KEY;
assert.ok(URL_ && KEY, "BRIDGE_URL and BRIDGE_KEY must be set");
assert.equal(process.env.COPILOTKIT_TELEMETRY_DISABLED, "true", "CopilotKit telemetry must be off");

// The @ag-ui/client the runtime itself resolves (CopilotKit pins its own, older than 1.0).
const fromRuntime = createRequire(fileURLToPath(import.meta.resolve("@copilotkit/runtime")));
const agUiClient = await import(pathToFileURL(fromRuntime.resolve("@ag-ui/client")).href);
const { HttpAgent } = agUiClient;
const versionOf = (require, name) =>
  JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8")).version;
const runtimeVersion = versionOf(createRequire(import.meta.url), "@copilotkit/runtime");
const bundled = versionOf(fromRuntime, "@ag-ui/client");

const WORKFLOWS = ["conformance-approval", "conformance-clarification", "demo-tool-approval",
  "demo-conversation", "interop-two-gates"];
let server;
let runtimeUrl;

before(async () => {
  const agents = Object.fromEntries(WORKFLOWS.map((w) => [w, new HttpAgent({
    url: `${URL_}/agui/${w}`, headers: { Authorization: `Bearer ${KEY}` },
  })]));
  const listener = createCopilotNodeListener({
    runtime: new CopilotRuntime({ agents }), basePath: "/api/copilotkit", activateChannels: false,
  });
  server = createServer(listener);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  runtimeUrl = `http://127.0.0.1:${server.address().port}/api/copilotkit`;
});

after(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }));

test("the runtime under test", () => {
  console.log(`@copilotkit/runtime ${runtimeVersion} with @ag-ui/client ${bundled}`);
  assert.match(runtimeVersion, /^1\.75\./);
});

// A chat frontend: a CopilotKitCore on the runtime, and the interrupt bookkeeping of useInterrupt.
async function frontend(workflow, threadId = randomUUID()) {
  const core = new CopilotKitCore({ runtimeUrl });
  for (let i = 0; i < 200 && !core.getAgent(workflow); i++) await new Promise((r) => setTimeout(r, 25));
  const agent = core.getAgent(workflow);
  assert.ok(agent, `the runtime lists ${workflow}`);
  agent.threadId = threadId;
  const interrupts = new InterruptState();
  const seen = { runs: [] };
  let local = null;
  agent.subscribe({
    onRunStartedEvent: () => { local = null; interrupts.clear(); },
    onRunFinishedEvent: (params) => { if (params.outcome === "interrupt") local = params.interrupts; },
    onRunFinalized: (params) => {
      if (local && local.length > 0) interrupts.setStandard(local);
      seen.runs.push(params.input);
      local = null;
    },
    onRunFailed: () => { local = null; interrupts.clear(); },
  });
  return { core, agent, interrupts, seen };
}

async function run(ui, params = {}) {
  const events = [];
  const sub = ui.agent.subscribe({ onEvent: ({ event }) => { events.push(event); } });
  try {
    await ui.core.runAgent({ agent: ui.agent, ...params });
  } finally {
    sub.unsubscribe();
  }
  return events;
}

// What useInterrupt's resolve/cancel do once every open interrupt has an answer.
async function answer(ui, decisions) {
  const interrupted = ui.seen.runs.at(-1);
  let decision;
  for (const [id, how] of decisions) {
    decision = how === "cancel" ? ui.interrupts.cancel(id) : ui.interrupts.resolve(how, id);
  }
  assert.equal(decision.kind, "resume", JSON.stringify(decision));
  for (const result of decision.toolResults) {
    ui.agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: result.toolCallId, content: result.content });
  }
  const events = await run(ui, { resume: decision.resume, runId: interrupted.runId });
  return { events, resume: decision.resume, toolResults: decision.toolResults };
}

const finished = (events) => events.findLast((e) => e.type === "RUN_FINISHED" || e.type === "RUN_ERROR");

test("an approval through the runtime", async () => {
  const ui = await frontend("conformance-approval");
  const first = await run(ui, {});
  assert.equal(finished(first).type, "RUN_FINISHED");
  const [it] = ui.interrupts.pending.interrupts;
  assert.equal(it.reason, "confirmation");
  const { events } = await answer(ui, [[it.id, { approved: true }]]);
  const end = finished(events);
  assert.equal(end.type, "RUN_FINISHED", JSON.stringify(end));
  assert.equal(end.outcome.type, "success");
  assert.equal(end.result.gate.action, "accept");
});

async function runEvents(runId) {
  const r = await fetch(`${URL_}/v1/runs/${runId}/events`, {
    headers: { Authorization: `Bearer ${KEY}`, Accept: "application/json" },
  });
  assert.equal(r.status, 200);
  return (await r.json()).events;
}

test("a tool call approved the useInterrupt way runs once, and the thread keeps its real output", async () => {
  const ui = await frontend("demo-tool-approval");
  await run(ui, {});
  const [it] = ui.interrupts.pending.interrupts;
  assert.equal(it.reason, "tool_call");
  const { events, resume, toolResults } = await answer(ui, [[it.id, { approved: true }]]);
  // What went out: one resume on the interrupted run's id, and the answer as the call's result message.
  assert.deepEqual(resume, [{ interruptId: it.id, status: "resolved", payload: { approved: true } }]);
  assert.deepEqual(toolResults, [{ toolCallId: it.toolCallId, content: JSON.stringify({ approved: true }) }]);
  assert.equal(ui.seen.runs.at(-1).runId, ui.seen.runs.at(-2).runId);
  const end = finished(events);
  assert.equal(end.type, "RUN_FINISHED", JSON.stringify(end));
  assert.equal(end.outcome.type, "success");
  const results = events.filter((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(results.length, 1);
  assert.equal(JSON.parse(results[0].content).executed, true);
  // The thread: one result for the call, after it, carrying what the tool returned.
  const messages = ui.agent.messages;
  const call = messages.findIndex((m) => m.role === "assistant" && m.toolCalls?.some((c) => c.id === it.toolCallId));
  const forCall = messages.map((m, i) => [m, i]).filter(([m]) => m.role === "tool" && m.toolCallId === it.toolCallId);
  assert.equal(forCall.length, 1, JSON.stringify(messages));
  assert.ok(call >= 0 && forCall[0][1] > call, JSON.stringify(messages));
  assert.equal(JSON.parse(forCall[0][0].content).executed, true);
  // The tool ran exactly once.
  const returned = (await runEvents(ui.agent.state.openwop.runId)).filter((e) => e.type === "agent.toolReturned");
  assert.equal(returned.length, 1);
});

test("a tool call cancelled the useInterrupt way does not run", async () => {
  const ui = await frontend("demo-tool-approval");
  await run(ui, {});
  const [it] = ui.interrupts.pending.interrupts;
  const { events, resume, toolResults } = await answer(ui, [[it.id, "cancel"]]);
  assert.deepEqual(resume, [{ interruptId: it.id, status: "cancelled" }]);
  assert.deepEqual(toolResults, [{ toolCallId: it.toolCallId, content: JSON.stringify({ status: "cancelled" }) }]);
  const end = finished(events);
  // A cancelled tool-call approval is a rejection: the tool does not run and the workflow goes on.
  assert.equal(end.type, "RUN_FINISHED", JSON.stringify(end));
  assert.equal(end.outcome.type, "success");
  assert.equal(Object.values(end.result).find((o) => o?.toolCallId === it.toolCallId).approved, false);
  const forCall = ui.agent.messages.filter((m) => m.role === "tool" && m.toolCallId === it.toolCallId);
  assert.equal(forCall.length, 1, JSON.stringify(ui.agent.messages));
  assert.notEqual(forCall[0].content, JSON.stringify({ status: "cancelled" }));
  const runId = ui.agent.state.openwop.runId;
  const executed = (await runEvents(runId)).filter((e) => e.type === "agent.toolReturned" && e.payload?.outcome?.executed);
  assert.equal(executed.length, 0);
});

test("a cancelled clarification ends the run without breaking the stream", async () => {
  const ui = await frontend("conformance-clarification");
  await run(ui, {});
  const [it] = ui.interrupts.pending.interrupts;
  assert.equal(it.reason, "input_required");
  const { events } = await answer(ui, [[it.id, "cancel"]]);
  const end = finished(events);
  assert.equal(end.type, "RUN_FINISHED", JSON.stringify(end));
  assert.equal(end.outcome, undefined);
  assert.equal(ui.agent.state.openwop.status, "cancelled");
  assert.equal(ui.interrupts.pending, null);
});

test("a clarification answered through the runtime", async () => {
  const ui = await frontend("conformance-clarification");
  await run(ui, {});
  const [it] = ui.interrupts.pending.interrupts;
  const question = Object.keys(it.responseSchema.properties.answers.properties)[0];
  const { events } = await answer(ui, [[it.id, { answers: { [question]: "blue" } }]]);
  const end = finished(events);
  assert.equal(end.type, "RUN_FINISHED", JSON.stringify(end));
  assert.equal(end.outcome.type, "success");
});

test("two open interrupts are answered in one resume", async () => {
  const ui = await frontend("interop-two-gates");
  await run(ui, {});
  const open = ui.interrupts.pending.interrupts;
  assert.equal(open.length, 2);
  const { events, resume } = await answer(ui, open.map((it) => [it.id, { approved: true }]));
  assert.deepEqual(resume.map((r) => r.interruptId), open.map((it) => it.id));
  assert.equal(finished(events).outcome.type, "success");
});

test("a reload reconnects through the runtime: the open interrupt comes back and nothing runs twice", async () => {
  const first = await frontend("conformance-approval");
  await run(first, {});
  const [it] = first.interrupts.pending.interrupts;
  const runId = first.agent.state.openwop.runId;
  const before = (await runEvents(runId)).length;
  // A new page: a new CopilotKitCore on the same thread, with nothing to send.
  const again = await frontend("conformance-approval", first.agent.threadId);
  const reconnected = await run(again, {});
  assert.equal(finished(reconnected).type, "RUN_FINISHED");
  assert.deepEqual(again.interrupts.pending.interrupts.map((i) => i.id), [it.id]);
  assert.equal((await runEvents(runId)).length, before);
  const { events } = await answer(again, [[it.id, { approved: true }]]);
  assert.equal(finished(events).outcome.type, "success");
});

test("a conversation through the runtime", async () => {
  const ui = await frontend("demo-conversation");
  const opened = await run(ui, {});
  assert.equal(finished(opened).outcome.type, "interrupt");
  for (const reply of ["Lisbon, a conference", "May, three nights", "Two"]) {
    const [turn] = ui.interrupts.pending.interrupts;
    assert.equal(turn.reason, "input_required");
    // A chat UI shows the person's message, and answers the open turn with it.
    ui.agent.addMessage({ id: randomUUID(), role: "user", content: reply });
    const { events } = await answer(ui, [[turn.id, reply]]);
    assert.equal(finished(events).type, "RUN_FINISHED", JSON.stringify(finished(events)));
  }
  const end = ui.seen.runs.length;
  assert.ok(end >= 4);
  assert.equal(ui.interrupts.pending, null);
  assert.deepEqual(ui.agent.messages.filter((m) => m.role === "user").map((m) => m.content),
    ["Lisbon, a conference", "May, three nights", "Two"]);
  assert.equal(ui.agent.state.openwop.status, "completed");
});
