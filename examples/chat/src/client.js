// Talking to the bridge: AG-UI runs through @ag-ui/client's HttpAgent, plus two
// small REST reads (the agents on offer, a run's status). The API key travels only
// in the Authorization header.

import { HttpAgent } from "@ag-ui/client";

/** A failure to show: {message, code?, status?, details?}. */
export function describeFailure(err) {
  const payload = err && typeof err === "object" ? err.payload : undefined;
  if (payload && typeof payload === "object" && typeof payload.message === "string") {
    // An OpenWOP error envelope {error, message, details?} refused the request before the stream.
    return { message: payload.message, code: payload.error, status: err.status, details: payload.details || null };
  }
  if (err instanceof TypeError) {
    return { message: "The server could not be reached. Check the connection and try again.", code: "network_error" };
  }
  return { message: (err && err.message) || String(err), code: err?.name || "error" };
}

// Shaped like the client's own HTTP errors, so describeFailure() reads both.
function httpFailure(status, envelope) {
  const failure = new Error(envelope.message);
  failure.status = status;
  failure.payload = envelope;
  return failure;
}

async function getJson(url, key) {
  let response;
  try {
    response = await fetch(url, {
      headers: { Accept: "application/json", ...(key ? { Authorization: `Bearer ${key}` } : {}) },
      cache: "no-store",
      credentials: "omit",
    });
  } catch {
    throw httpFailure(0, { error: "network_error", message: "The server could not be reached. Check the connection and try again." });
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const envelope =
      body && typeof body.message === "string" ? body : { error: `http_${response.status}`, message: `The server answered ${response.status}.` };
    throw httpFailure(response.status, envelope);
  }
  return body;
}

/**
 * The agents (workflows) the host serves: [{id, name, description}].
 * A key without `workflows:read` still signs in: the ids then come from discovery.
 */
export async function listAgents(key) {
  try {
    const body = await getJson("/v1/workflows", key);
    return body.workflows.map((wf) => ({ id: wf.id, name: wf.name || wf.id, description: wf.description || "" }));
  } catch (err) {
    if (err.status !== 403) throw err;
    const discovery = await getJson("/.well-known/openwop", null);
    return (discovery.fixtures || []).map((id) => ({ id, name: id, description: "" }));
  }
}

/** The status of an OpenWOP run (`null` when this host does not know it). */
export async function runStatus(key, runId) {
  try {
    const snapshot = await getJson(`/v1/runs/${encodeURIComponent(runId)}`, key);
    return snapshot.status;
  } catch (err) {
    if (err.status === 404) return null;
    throw err;
  }
}

/** An AG-UI agent for one workflow, on one thread, starting from the messages already seen. */
export function createAgent({ agentId, key, threadId, messages }) {
  return new HttpAgent({
    url: `/agui/${encodeURIComponent(agentId)}`,
    headers: { Authorization: `Bearer ${key}` },
    agentId,
    threadId,
    initialMessages: messages,
  });
}

/**
 * One AG-UI run. Resolves (never rejects) to {finished, failure, warnings}:
 * `finished` is what RUN_FINISHED said ({outcome, result, interrupts}); `failure`
 * is a refusal before the stream (the error envelope), a RUN_ERROR, or the client's
 * own refusal (say, an interrupt left unanswered).
 */
export async function runOnce(agent, params) {
  let finished = null;
  let failure = null;
  const warnings = [];
  const subscriber = {
    onRunFinishedEvent: ({ outcome, result, interrupts }) => {
      finished = { outcome, result, interrupts: interrupts || [] };
    },
    onRunErrorEvent: ({ event }) => {
      failure = { message: event.message, code: event.code || "run_error", source: "run" };
    },
    onCustomEvent: ({ event }) => {
      if (event.name === "openwop.warning" && event.value) warnings.push(event.value);
    },
    // The page shows the failure itself: stop the client from also logging it.
    onRunFailed: ({ error }) => {
      failure = failure || describeFailure(error);
      return { stopPropagation: true };
    },
  };
  try {
    await agent.runAgent(params, subscriber);
  } catch (err) {
    failure = failure || describeFailure(err);
  }
  return { finished, failure, warnings };
}
