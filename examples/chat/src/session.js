// What the tab remembers, in sessionStorage (gone when the tab closes): the API key,
// the chosen agent, and per agent its thread (id, current OpenWOP run, whether it is
// waiting on someone, and the transcript last seen).

import { randomId } from "./dom.js";

const KEY = "openwop.chat.apiKey";
const AGENT = "openwop.chat.agent";
const THREAD = "openwop.chat.thread.";

function read(name) {
  try {
    return sessionStorage.getItem(name);
  } catch {
    return null;
  }
}

function write(name, value) {
  try {
    if (value === null) sessionStorage.removeItem(name);
    else sessionStorage.setItem(name, value);
  } catch {
    // Storage full or disabled: the page still works, it just forgets on reload.
  }
}

export const apiKey = {
  get: () => read(KEY),
  set: (value) => write(KEY, value),
  clear: () => write(KEY, null),
};

export const chosenAgent = {
  get: () => read(AGENT),
  set: (value) => write(AGENT, value),
};

/**
 * A thread record: {threadId, runId, status, open, messages}. `open` is true from the
 * moment a run is sent until it ends with nothing left to answer, so a reload knows
 * whether to ask the endpoint for the open interrupts again.
 */
export function newThread() {
  return { threadId: randomId(), runId: null, status: null, open: false, messages: [] };
}

export function loadThread(agentId) {
  const raw = read(THREAD + agentId);
  if (!raw) return null;
  try {
    const record = JSON.parse(raw);
    if (typeof record?.threadId !== "string") return null;
    return { ...newThread(), ...record, messages: Array.isArray(record.messages) ? record.messages : [] };
  } catch {
    return null;
  }
}

export function saveThread(agentId, record) {
  write(THREAD + agentId, JSON.stringify(record));
}

export function forgetThread(agentId) {
  write(THREAD + agentId, null);
}

/** Forget every thread (on sign-out: the next person in this tab starts afresh). */
export function forgetAllThreads() {
  try {
    const names = [];
    for (let i = 0; i < sessionStorage.length; i += 1) {
      const name = sessionStorage.key(i);
      if (name && name.startsWith(THREAD)) names.push(name);
    }
    for (const name of names) sessionStorage.removeItem(name);
  } catch {
    // Nothing stored, nothing to forget.
  }
}
