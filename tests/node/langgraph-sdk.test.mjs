// LangGraph's own JS client (@langchain/langgraph-sdk) against the bridge's /langgraph API.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const URL = process.env.BRIDGE_URL;
const KEY = process.env.BRIDGE_KEY;
assert.ok(URL && KEY, "BRIDGE_URL and BRIDGE_KEY must be set");

const client = (apiKey = KEY) => new Client({ apiUrl: `${URL}/langgraph`, apiKey });
const ids = (thread) => Object.values(thread.interrupts).flat().map((i) => i.id).sort();

async function streamed(c, threadId, assistant, payload) {
  const parts = [];
  for await (const part of c.runs.stream(threadId, assistant, payload)) parts.push(part);
  return parts;
}

test("assistants search lists every workflow and graph", async () => {
  const found = await client().assistants.search({ limit: 100 });
  const names = found.map((a) => a.assistant_id);
  for (const name of ["conformance-approval", "interop-two-gates", "fan"]) assert.ok(names.includes(name), name);
  assert.equal((await client().assistants.get("fan")).graph_id, "fan");
});

test("stream an approval to its interrupt, read it from getState, resume with Command({resume})", async () => {
  const c = client();
  const thread = await c.threads.create({ metadata: { lane: "node" } });
  const parts = await streamed(c, thread.thread_id, "conformance-approval", { input: {}, streamMode: "values" });
  assert.equal(parts[0].event, "metadata");
  const last = parts.filter((p) => p.event === "values" && p.data.__interrupt__).at(-1);
  const [interrupt] = last.data.__interrupt__;
  assert.equal(interrupt.value.config.allow_accept, true);
  assert.equal(interrupt.value.config.allow_ignore, true);

  const state = await c.threads.getState(thread.thread_id);
  assert.deepEqual(state.tasks.flatMap((t) => t.interrupts.map((i) => i.id)), [interrupt.id]);
  const shown = await c.threads.get(thread.thread_id);
  assert.equal(shown.status, "interrupted");
  assert.deepEqual(ids(shown), [interrupt.id]);

  // A decision the gate does not offer is refused, and the interrupt stays open.
  await assert.rejects(
    c.runs.wait(thread.thread_id, "conformance-approval", { command: { resume: { action: "refine" } } }),
    (err) => err.status === 400,
  );
  assert.deepEqual(ids(await c.threads.get(thread.thread_id)), [interrupt.id]);

  const done = await streamed(c, thread.thread_id, "conformance-approval", {
    command: { resume: "accept" },
    streamMode: ["values", "updates"],
  });
  assert.ok(!done.some((p) => p.data && p.data.__interrupt__));
  const after = await c.threads.get(thread.thread_id);
  assert.equal(after.status, "idle");
  assert.deepEqual(after.interrupts, {});
  const found = await c.threads.search({ metadata: { lane: "node" }, status: "idle" });
  assert.deepEqual(found.map((t) => t.thread_id), [thread.thread_id]);
});

test("two parallel OpenWOP approvals resumed by an id map", async () => {
  const c = client();
  const thread = await c.threads.create();
  const waiting = await c.runs.wait(thread.thread_id, "interop-two-gates", { input: {} });
  const interrupts = waiting.__interrupt__;
  assert.equal(interrupts.length, 2);
  const state = await c.threads.getState(thread.thread_id);
  assert.deepEqual(state.tasks.flatMap((t) => t.interrupts.map((i) => i.id)).sort(), interrupts.map((i) => i.id).sort());
  // One bare value for two interrupts is refused; nothing is answered.
  await assert.rejects(
    c.runs.wait(thread.thread_id, "interop-two-gates", { command: { resume: "accept" } }),
    (err) => err.status === 400,
  );
  assert.equal(ids(await c.threads.get(thread.thread_id)).length, 2);
  const resume = Object.fromEntries(interrupts.map((i) => [i.id, [{ type: "accept", args: null }]]));
  const done = await c.runs.wait(thread.thread_id, "interop-two-gates", { command: { resume } });
  assert.equal(done.__interrupt__, undefined);
  assert.equal((await c.threads.get(thread.thread_id)).status, "idle");
});

test("a served graph's two parallel interrupt() calls resumed by an id map", async () => {
  const c = client();
  const thread = await c.threads.create();
  const parts = await streamed(c, thread.thread_id, "fan", { input: { topics: ["legal", "finance"] }, streamMode: "updates" });
  const interrupts = parts.filter((p) => p.event === "updates" && p.data.__interrupt__).at(-1).data.__interrupt__;
  assert.deepEqual(interrupts.map((i) => i.value.question).sort(), ["Sign off finance?", "Sign off legal?"]);
  const resume = Object.fromEntries(interrupts.map((i) => [i.id, { ok: i.value.question === "Sign off legal?" }]));
  const done = await c.runs.wait(thread.thread_id, "fan", { command: { resume } });
  assert.equal(done.__interrupt__, undefined);
  assert.deepEqual(done.answers.map((a) => [a.topic, a.ok]).sort(), [["finance", false], ["legal", true]]);
  const history = await c.threads.getHistory(thread.thread_id);
  assert.equal(history.length, 1);
});

test("a key the host does not know is refused", async () => {
  const thread = await client().threads.create();
  await assert.rejects(client("not-a-key").threads.get(thread.thread_id), (err) => err.status === 401);
});

test("messages-tuple parts and values.messages for an OpenWOP conversation, as useStream reads them", async () => {
  const c = client();
  const thread = await c.threads.create();
  const modes = ["values", "messages-tuple"];
  const first = await streamed(c, thread.thread_id, "demo-conversation", { input: {}, streamMode: modes });
  const said = first.filter((p) => p.event === "messages").map((p) => p.data);
  assert.deepEqual(
    said.map(([m]) => [m.type, m.content]),
    [
      ["ai", "Hi! I will ask you three short questions about your trip."],
      ["ai", "Where are you travelling, and why?"],
    ],
  );
  assert.ok(said.every(([m, meta]) => m.id && meta.thread_id === thread.thread_id && typeof meta.langgraph_node === "string"));

  const next = await streamed(c, thread.thread_id, "demo-conversation", { command: { resume: "Lisbon" }, streamMode: modes });
  const added = next.filter((p) => p.event === "messages").map((p) => p.data[0]);
  assert.deepEqual(added.map((m) => [m.type, m.content]), [["human", "Lisbon"], ["ai", "When, and for how long?"]]);
  const values = next.filter((p) => p.event === "values").at(-1).data;
  assert.deepEqual(values.messages.slice(-2).map((m) => m.id), added.map((m) => m.id));
  const state = await c.threads.getState(thread.thread_id);
  assert.deepEqual(state.values.messages.map((m) => m.type), ["ai", "ai", "human", "ai"]);
});

test("joinStream replays from lastEventId, and cancelOnDisconnect cancels the run when the client aborts", async () => {
  const c = client();
  const thread = await c.threads.create();
  const parts = await streamed(c, thread.thread_id, "demo-conversation", { input: {}, streamMode: "messages-tuple" });
  const runId = parts[0].data.run_id;
  const replay = [];
  for await (const part of c.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1", streamMode: "messages-tuple" })) {
    replay.push(part);
  }
  assert.deepEqual(
    replay.filter((p) => p.event === "messages").map((p) => p.data[0].id),
    parts.filter((p) => p.event === "messages").map((p) => p.data[0].id),
  );

  const other = await c.threads.create();
  const run = await c.runs.create(other.thread_id, "conformance-cancellable", { input: { delayMs: 60000 } });
  const controller = new AbortController();
  const joined = c.runs.joinStream(other.thread_id, run.run_id, { cancelOnDisconnect: true, signal: controller.signal });
  const head = await joined.next();
  assert.equal(head.value.event, "metadata");
  controller.abort();
  await joined.return?.().catch(() => {});
  let status = "";
  for (let i = 0; i < 60 && !["interrupted", "success", "error"].includes(status); i++) {
    status = (await c.runs.get(other.thread_id, run.run_id)).status;
    if (status === "pending" || status === "running") await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(status, "interrupted");
});

test("a dropped run stream is resumed from its Location, after the Last-Event-ID, in the same modes", async () => {
  const seen = [];
  let cut = false;
  // The first run stream's connection drops right after the first part with an event id.
  const dropping = async (url, init) => {
    const res = await globalThis.fetch(url, init);
    const path = new globalThis.URL(url).pathname;
    seen.push([init?.method ?? "GET", path, new Headers(init?.headers).get("last-event-id")]);
    if (cut || init?.method !== "POST" || !path.endsWith("/runs/stream")) return res;
    cut = true;
    const reader = res.body.getReader();
    let drop = false;
    const body = new ReadableStream({
      async pull(ctrl) {
        if (drop) {
          await reader.cancel();
          ctrl.error(new TypeError("terminated"));
          return;
        }
        const { done, value } = await reader.read();
        if (done) return ctrl.close();
        ctrl.enqueue(value);
        drop = new TextDecoder().decode(value).includes("id: ");
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  const c = new Client({ apiUrl: `${URL}/langgraph`, apiKey: KEY, callerOptions: { fetch: dropping } });
  const thread = await c.threads.create();
  const parts = await streamed(c, thread.thread_id, "interop-two-gates", {
    input: {},
    streamMode: ["values", "updates"],
  });
  assert.ok(cut);
  const rejoined = seen.filter(([method, path]) => method === "GET" && path.endsWith("/stream"));
  assert.equal(rejoined.length, 1);
  const runId = parts[0].data.run_id;
  assert.equal(rejoined[0][1], `/langgraph/threads/${thread.thread_id}/runs/${runId}/stream`);
  assert.ok(Number(rejoined[0][2]) >= 0, `Last-Event-ID ${rejoined[0][2]}`);
  const last = parts.filter((p) => p.event === "updates" && p.data.__interrupt__).at(-1);
  assert.equal(last.data.__interrupt__.length, 2);
});
