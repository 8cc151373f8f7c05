// The transcript: the AG-UI thread's messages, one list item each, kept in step with
// the agent's messages as they stream in (text deltas, snapshots, tool calls).

import { formatJson, h } from "./dom.js";

// System messages are the host's procedural notes (a conversation opened, closed, timed out).
const SPEAKERS = { user: "You", assistant: "Assistant", tool: "Tool result", system: "Note" };

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .filter((part) => part && part.type === "text")
      .map((part) => part.text)
      .join(" ");
  }
  return content === undefined || content === null ? "" : formatJson(content);
}

function prettyArguments(text) {
  try {
    return formatJson(JSON.parse(text));
  } catch {
    return text || "";
  }
}

function body(message) {
  const parts = [];
  const text = textOf(message.content);
  if (message.role === "tool") {
    parts.push(h("pre", { class: "text code" }, prettyArguments(text)));
    if (message.error) parts.push(h("p", { class: "tool-error" }, message.error));
    return parts;
  }
  if (text) parts.push(h("p", { class: "text" }, text));
  for (const call of message.toolCalls || []) {
    parts.push(
      h(
        "div",
        { class: "tool-call" },
        h("p", {}, "Wants to call ", h("code", {}, call.function?.name || "a tool")),
        h("pre", { class: "code" }, prettyArguments(call.function?.arguments)),
      ),
    );
  }
  return parts;
}

export class Transcript {
  /** `list` is the <ol> the messages go in. */
  constructor(list) {
    this.list = list;
    this.items = new Map(); // message id → {li, signature}
  }

  /** How many messages are shown. */
  get size() {
    return this.items.size;
  }

  /** Show exactly these messages, in this order, touching only what changed. */
  render(messages) {
    const shown = messages.filter((m) => m && m.id && SPEAKERS[m.role]);
    const keep = new Set(shown.map((m) => m.id));
    for (const [id, item] of this.items) {
      if (!keep.has(id)) {
        item.li.remove();
        this.items.delete(id);
      }
    }
    let previous = null;
    for (const message of shown) {
      const signature = JSON.stringify([message.role, message.content, message.toolCalls, message.error]);
      let item = this.items.get(message.id);
      if (!item) {
        item = { li: h("li", { dataset: { messageId: message.id } }), signature: null };
        this.items.set(message.id, item);
      }
      if (item.signature !== signature) {
        item.li.className = `msg ${message.role}`;
        item.li.replaceChildren(h("p", { class: "who" }, SPEAKERS[message.role]), ...body(message));
        item.signature = signature;
      }
      const expected = previous ? previous.nextSibling : this.list.firstChild;
      if (expected !== item.li) this.list.insertBefore(item.li, expected);
      previous = item.li;
    }
    if (shown.length) this.list.lastElementChild?.scrollIntoView?.({ block: "nearest" });
  }
}
