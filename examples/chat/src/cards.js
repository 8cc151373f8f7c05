// Interrupt cards: what the page shows when a run ends waiting on the person, built
// from the AG-UI interrupt (its responseSchema above all). One card per interrupt:
//   approval      a oneOf of {action: const, …} variants: one button per action
//   tool call     {approved, editedArgs?, feedback?}: approve (with edited JSON arguments) or reject
//   any other     one labelled field per property of the schema (clarifications, …)
// Conversation turns get no card: the prompt is in the chat, the composer answers it.

import { formatJson, h, humanize, uniqueId } from "./dom.js";
import { LocalError, answerFields, objectFields, schemaField } from "./schema-form.js";

const ACTION_LABELS = {
  accept: "Accept",
  reject: "Reject",
  refine: "Request changes",
  "edit-accept": "Accept with edits",
  ask: "Ask",
};
const GROUP_LABELS = { refine: "Request changes", "edit-accept": "Edit, then accept", ask: "Ask a question first" };

const openwopOf = (it) => it.metadata?.openwop || {};

function variantsOf(schema) {
  const list = schema?.oneOf || schema?.anyOf || (schema ? [schema] : []);
  return Array.isArray(list) ? list : [];
}

/** The approval variants of a schema ({action: const, …} each), or [] when it is not one. */
function approvalVariants(schema) {
  const variants = variantsOf(schema);
  return variants.length && variants.every((v) => typeof v?.properties?.action?.const === "string") ? variants : [];
}

/** The reply variant of a conversation turn's schema (the one that is not "close"), or null. */
export function conversationReply(it) {
  const variants = it.responseSchema?.anyOf || it.responseSchema?.oneOf || [];
  if (!variants.some((v) => v?.properties?.operation?.const === "close")) return null;
  return variants.find((v) => v?.properties?.operation?.const !== "close") || { type: "string" };
}

/** "conversation" | "tool-call" | "approval" | "form". */
export function interruptKind(it) {
  const schema = it.responseSchema || {};
  if (conversationReply(it)) return "conversation";
  if (it.reason === "tool_call" || schema.properties?.approved?.type === "boolean") return "tool-call";
  if (approvalVariants(schema).length) return "approval";
  return "form";
}

export const isExpired = (it) => Boolean(it.expiresAt) && Date.parse(it.expiresAt) <= Date.now();

function localTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

/**
 * The frame every card shares: heading, what is asked, deadline, and an error
 * (role=alert) and a status (role=status) area next to its buttons.
 */
function frame(it, { eyebrow, title, lead }) {
  const headingId = uniqueId("card-title");
  const error = h("div", { class: "error", role: "alert" });
  const status = h("p", { class: "state", role: "status" });
  const body = h("div", { class: "card-body" });
  const heading = h("h2", { id: headingId, tabindex: "-1" }, title);
  const node = h(
    "section",
    { class: "card interrupt", "aria-labelledby": headingId, dataset: { interruptId: it.id } },
    h("p", { class: "eyebrow" }, eyebrow),
    heading,
    lead ? h("p", { class: "lead" }, lead) : null,
    it.expiresAt ? h("p", { class: "hint" }, `Answer before ${localTime(it.expiresAt)}.`) : null,
    body,
    error,
    status,
  );
  return { node, body, error, status, heading };
}

/** Run `collect` and hand its entry to `answer`; a LocalError is shown without sending. */
function submitter(card, answer) {
  return async (collect) => {
    let entry;
    try {
      entry = collect();
    } catch (err) {
      if (!(err instanceof LocalError)) throw err;
      card.showError({ message: err.message });
      return;
    }
    card.showError(null);
    await answer(entry, card);
  };
}

function approvalBody(it, parts, submit) {
  const wop = openwopOf(it);
  const data = wop.data || {};
  if (data.artifactData !== undefined) {
    const label = data.artifactId ? `Artifact ${data.artifactId}` : "Artifact";
    parts.body.append(h("div", { class: "artifact" }, h("p", { class: "label" }, label), h("pre", { class: "code" }, formatJson(data.artifactData))));
  }
  if (wop.votes) {
    const v = wop.votes;
    parts.body.append(h("p", { class: "hint" }, `Accepted ${v.accept} of ${v.required} needed, ${v.reject} rejected.`));
  }
  // Variants asking for the same fields share them (accept and reject share "feedback").
  const groups = new Map();
  for (const variant of approvalVariants(it.responseSchema)) {
    const action = variant.properties.action.const;
    const properties = Object.fromEntries(Object.entries(variant.properties).filter(([name]) => name !== "action"));
    const required = (variant.required || []).filter((name) => name !== "action");
    const key = JSON.stringify([properties, required]);
    if (!groups.has(key)) groups.set(key, { properties, required, variants: [] });
    groups.get(key).variants.push({ action, title: variant.title });
  }
  const ordered = [...groups.values()];
  const primary = ordered.find((g) => g.variants.some((v) => v.action === "accept")) || ordered[0];
  for (const group of ordered) {
    const fields = objectFields({ properties: group.properties, required: group.required }, { idPrefix: `${it.id}-${group.variants[0].action}` });
    const buttons = group.variants.map(({ action, title }) =>
      h("button", { type: "button", class: action === "reject" ? "secondary" : null, dataset: { action } }, ACTION_LABELS[action] || title || humanize(action)),
    );
    for (const button of buttons) {
      button.addEventListener("click", () =>
        submit(() => ({ interruptId: it.id, status: "resolved", payload: { ...fields.read(), action: button.dataset.action } })),
      );
    }
    const content = [...fields.nodes, h("div", { class: "buttons" }, buttons)];
    if (group === primary) {
      parts.body.append(...content);
    } else {
      const first = group.variants[0].action;
      parts.body.append(h("details", { class: "more" }, h("summary", {}, GROUP_LABELS[first] || ACTION_LABELS[first] || humanize(first)), ...content));
    }
  }
}

function toolCallBody(it, parts, submit, call) {
  const props = it.responseSchema?.properties || {};
  const args = call?.args;
  let editor = null;
  if (props.editedArgs) {
    const schema = { ...props.editedArgs, default: props.editedArgs.default ?? args ?? {} };
    editor = schemaField(schema, { name: "editedArgs", label: "Arguments", idPrefix: it.id });
    parts.body.append(editor.node);
  } else if (args !== undefined) {
    parts.body.append(h("div", { class: "artifact" }, h("p", { class: "label" }, "Arguments"), h("pre", { class: "code" }, formatJson(args))));
  }
  const feedback = props.feedback ? schemaField(props.feedback, { name: "feedback", label: "Feedback", idPrefix: it.id }) : null;
  if (feedback) parts.body.append(feedback.node);
  const approve = h("button", { type: "button" }, "Approve");
  const reject = h("button", { type: "button", class: "secondary" }, "Reject");
  parts.body.append(h("div", { class: "buttons" }, approve, reject));
  const original = JSON.stringify(props.editedArgs?.default ?? args ?? {});
  approve.addEventListener("click", () =>
    submit(() => {
      const payload = { approved: true };
      const edited = editor ? editor.read() : undefined;
      if (editor && (edited === null || typeof edited !== "object" || Array.isArray(edited))) {
        throw new LocalError("Arguments must be a JSON object.");
      }
      if (edited !== undefined && JSON.stringify(edited) !== original) payload.editedArgs = edited;
      const text = feedback?.read();
      if (text) payload.feedback = text;
      return { interruptId: it.id, status: "resolved", payload };
    }),
  );
  reject.addEventListener("click", () =>
    submit(() => {
      const text = feedback?.read();
      return { interruptId: it.id, status: "resolved", payload: text ? { approved: false, feedback: text } : { approved: false } };
    }),
  );
}

function formBody(it, parts, submit, fields) {
  const send = h("button", { type: "submit" }, "Send answer");
  const form = h("form", { novalidate: true, "aria-label": "Answer" }, fields.nodes, h("div", { class: "buttons" }, send));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(() => ({ interruptId: it.id, status: "resolved", payload: fields.read() }));
  });
  parts.body.append(form);
}

function expiredBody(it, parts, submit) {
  const cancel = h("button", { type: "button", class: "secondary" }, "Cancel the request");
  parts.body.append(h("p", {}, "This request has expired: it can no longer be answered, only cancelled."), h("div", { class: "buttons" }, cancel));
  cancel.addEventListener("click", () => submit(() => ({ interruptId: it.id, status: "cancelled" })));
}

/**
 * A card for one interrupt. `answer(entry, card)` receives the resume entry
 * ({interruptId, status, payload}); `findToolCall(id)` looks a tool call up in the
 * thread ({name, args}). Returns the card: {node, interrupt, showError, setBusy, say, focus}.
 */
export function buildCard(it, { answer, findToolCall }) {
  const kind = interruptKind(it);
  const wop = openwopOf(it);
  const data = wop.data || {};
  let parts;
  let call = null;
  let fields = null;
  if (kind === "tool-call") {
    call = (it.toolCallId && findToolCall(it.toolCallId)) || (data.artifactData ? { name: data.artifactData.name, args: data.artifactData.args } : null);
    const title = call?.name ? `Approve the call to ${call.name}?` : it.message || "Approve this tool call?";
    parts = frame(it, { eyebrow: "Tool call", title, lead: data.description || (title === it.message ? null : it.message) });
  } else if (kind === "approval") {
    const title = data.title || it.message || "Approval needed";
    parts = frame(it, { eyebrow: "Approval", title, lead: data.description || (title === it.message ? null : it.message) });
  } else {
    fields = answerFields(it.responseSchema || {}, it.id);
    const eyebrow = it.reason === "input_required" ? "Input needed" : humanize(String(it.reason || "request").split(":").pop());
    // When the message only repeats the questions the fields are labelled with, say less.
    const labels = fields.nodes.flatMap((node) => [...node.querySelectorAll("label, legend")].map((l) => l.firstChild?.textContent || ""));
    const repeats = labels.length > 0 && labels.every((label) => label && (it.message || "").includes(label));
    const title = repeats ? (labels.length > 1 ? "A few questions for you" : "A question for you") : it.message || "The agent needs an answer";
    parts = frame(it, { eyebrow, title });
  }
  const card = {
    node: parts.node,
    interrupt: it,
    showError(failure) {
      parts.error.replaceChildren();
      if (!failure) return;
      // "resume[0] (int_…): what is wrong" — on the card itself, what is wrong is enough.
      const message = String(failure.message || "Something went wrong.");
      const own = failure.details?.interruptId === it.id ? message.replace(/^resume\[\d+\] \([^)]*\): /, "") : message;
      parts.error.append(h("p", {}, own));
      const problems = Array.isArray(failure.details?.problems) ? failure.details.problems.map(String) : [];
      if (problems.length) parts.error.append(h("ul", {}, problems.map((line) => h("li", {}, line))));
    },
    say(text) {
      parts.status.textContent = text || "";
    },
    setBusy(busy) {
      parts.node.setAttribute("aria-busy", busy ? "true" : "false");
      for (const control of parts.node.querySelectorAll("button")) control.disabled = busy;
    },
    focus() {
      parts.heading.focus();
    },
  };
  const submit = submitter(card, answer);
  if (isExpired(it)) expiredBody(it, parts, submit);
  else if (kind === "tool-call") toolCallBody(it, parts, submit, call);
  else if (kind === "approval") approvalBody(it, parts, submit);
  else formBody(it, parts, submit, fields);
  parts.node.classList.add(kind);
  return card;
}
