// The forms that answer an interrupt, chosen and built from the interrupt itself,
// and renderInterrupt(), which puts one interrupt on screen (summary.js draws what
// it asks). Shared by the inbox and the signed-link page.
//
// Everything from the server is put on the page with textContent / text nodes,
// never parsed as HTML.

import { asText, describeVotes, formatJson, h, utcTime } from "./dom.js";
import { block, promptOf, qaList, summary, votesBlock } from "./summary.js";

const ACTION_LABELS = {
  accept: "Accept",
  reject: "Reject",
  refine: "Request changes",
  "edit-accept": "Accept with edits",
};

const ACTION_HINTS = {
  accept: "Approve the request as it is.",
  reject: "Turn it down, optionally saying why.",
  refine: "Send it back with structured feedback on what to change.",
  "edit-accept": "Approve your edited version of the artifact.",
};

let panelCount = 0;

function describeError(err) {
  const parts = [h("p", {}, err.message || String(err))];
  const details = err.details || {};
  const lines = [];
  if (Array.isArray(details.problems)) lines.push(...details.problems.map(String));
  if (Array.isArray(details.unansweredQuestionIds) && details.unansweredQuestionIds.length) {
    lines.push(`Unanswered: ${details.unansweredQuestionIds.join(", ")}`);
  }
  if (Array.isArray(details.allowedActions)) lines.push(`Allowed actions: ${details.allowedActions.join(", ")}`);
  if (details.expected && typeof details.expected === "object") lines.push(`Expected: ${JSON.stringify(details.expected)}`);
  if (lines.length) parts.push(h("ul", {}, lines.map((line) => h("li", {}, line))));
  return parts;
}

/** A problem found before anything was sent (bad JSON, nothing chosen). */
class LocalError extends Error {}

function parseJsonField(textarea, what) {
  const text = textarea.value.trim();
  if (!text) throw new LocalError(`${what}: enter a JSON value.`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new LocalError(`${what} is not valid JSON: ${err.message}`);
  }
}

function splitList(text) {
  return text
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);
}

/**
 * A labelled control: returns {wrap, control}. `kind` is input | textarea | select;
 * `hint` is tied to the control with aria-describedby.
 */
function field(id, label, kind, { hint, attrs = {}, options = [] } = {}) {
  const hintId = hint ? `${id}-hint` : undefined;
  const control = h(kind, { id, "aria-describedby": hintId, ...attrs });
  for (const option of options) control.append(option);
  const wrap = h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    hint ? h("p", { id: hintId, class: "hint" }, hint) : null,
    control,
  );
  return { wrap, control };
}

function jsonArea(id, label, value, hint) {
  return field(id, label, "textarea", {
    hint,
    attrs: { rows: 8, spellcheck: "false", class: "code", value: value === undefined ? "" : formatJson(value) },
  });
}

function radioGroup(name, legend, choices) {
  const inputs = {};
  const set = h("fieldset", { class: "choices" }, h("legend", {}, legend));
  for (const choice of choices) {
    const id = `${name}-${choice.value}`;
    const hintId = choice.hint ? `${id}-hint` : undefined;
    const input = h("input", { type: "radio", id, name, value: choice.value, "aria-describedby": hintId });
    inputs[choice.value] = input;
    set.append(
      h(
        "div",
        { class: "choice" },
        input,
        h("label", { for: id }, choice.label),
        choice.hint ? h("span", { id: hintId, class: "hint" }, choice.hint) : null,
      ),
    );
  }
  return { set, inputs };
}

function selected(inputs) {
  const found = Object.values(inputs).find((input) => input.checked);
  return found ? found.value : null;
}

/**
 * A form with its own error (role=alert) and result (role=status) areas and a
 * submit button. `collect()` builds the answer (throw LocalError to refuse);
 * `done(result, value)` says what to show on success and whether the
 * interrupt is settled. Typed text is never cleared on an error.
 */
function answerForm(panel, { title, buttonLabel, children, collect, done, secondary = false }) {
  const error = h("div", { class: "error", role: "alert" });
  const status = h("div", { class: "success", role: "status", tabindex: "-1" });
  const button = h("button", { type: "submit", class: secondary ? "secondary" : null }, buttonLabel);
  const form = h(
    "form",
    { class: "answer", novalidate: true, "aria-label": title },
    children,
    h("div", { class: "actions" }, button),
    error,
    status,
  );
  form.addEventListener("input", () => {
    panel.dirty = true;
  });
  // Enter in a single-line field submits; in a text area it starts a new line, so
  // Ctrl+Enter (Cmd+Enter) submits from there.
  form.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && event.target.tagName === "TEXTAREA") {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (panel.settled || button.disabled) return;
    error.replaceChildren();
    status.replaceChildren();
    let value;
    try {
      value = collect();
    } catch (err) {
      if (!(err instanceof LocalError)) throw err;
      error.replaceChildren(h("p", {}, err.message));
      return;
    }
    button.disabled = true;
    form.setAttribute("aria-busy", "true");
    try {
      const result = await panel.submit(value);
      panel.dirty = false;
      const outcome = done(result, value) || {};
      if (outcome.refused) error.replaceChildren(h("p", {}, outcome.refused));
      else status.replaceChildren(h("p", {}, outcome.message || "Answer recorded."));
      if (outcome.settled) panel.settle(status);
    } catch (err) {
      error.replaceChildren(...describeError(err));
    } finally {
      form.removeAttribute("aria-busy");
      if (!panel.settled) button.disabled = false;
    }
  });
  return form;
}


// --- whose vote: the person's own, or someone's they stand in for ---------------------

/**
 * The "Whose vote is this" choice of a person who may answer an approval in someone else's place
 * (standIn: {own, for: [{delegator, until}]}). Returns {set, voter()}: voter() is the person named as
 * the voter (null for their own vote); it throws LocalError while a choice is needed and none is made.
 */
function slotChoice(panel, standIn) {
  const choices = [];
  if (standIn.own) choices.push({ value: "own", label: `Your own vote (${panel.me})`, voter: null });
  standIn.for.forEach((d, index) => {
    choices.push({
      value: `for-${index}`,
      label: `For ${d.delegator}`,
      hint: `Delegated to you until ${utcTime(d.until)}: recorded as ${d.delegator}'s vote, made by you.`,
      voter: d.delegator,
    });
  });
  const group = radioGroup(`${panel.prefix}-slot`, "Whose vote is this", choices);
  if (choices.length === 1) group.inputs[choices[0].value].checked = true;
  const note = standIn.own
    ? "You are an approver yourself and answer for someone else too: one person, one vote, in one of these places."
    : `You answer this for ${standIn.for.map((d) => d.delegator).join(" or ")}, in their place.`;
  group.set.append(h("p", { class: "hint" }, note));
  return {
    set: group.set,
    voter() {
      const chosen = selected(group.inputs);
      if (!chosen) throw new LocalError("Choose whose vote this is first.");
      return choices.find((c) => c.value === chosen).voter;
    },
  };
}

/** What to say when the host did not count a vote (one person, one vote; the slot taken). */
function notCounted(panel, voter, cast) {
  const me = panel.me;
  const mine = cast.find((v) => (v.actingPrincipal || v.voter) === me);
  if (mine) {
    const where = mine.voter === me ? "as yourself" : `for ${mine.voter}`;
    return `Not counted: you have already voted on this request ${where} (${mine.action}). One person, one vote: your first vote stands.`;
  }
  const slot = voter || me;
  const taken = cast.find((v) => v.voter === slot);
  if (taken) {
    const by = taken.actingPrincipal ? ` (answered by ${taken.actingPrincipal})` : "";
    return `Not counted: ${slot === me ? "you have" : `${slot} has`} already voted on this request${by}; that vote stands.`;
  }
  return "Not counted: this vote was already cast; the first vote stands.";
}

// --- forms per kind ----------------------------------------------------------------

function approvalForms(panel, view) {
  const data = view.payload.data || {};
  const p = panel.prefix;
  const allowed = Array.isArray(data.actions) ? data.actions : ["accept", "reject"];
  const forms = [];
  let askBlock = null;

  if (allowed.includes("ask")) {
    const question = field(`${p}-question`, "Your question", "textarea", {
      hint: "Asking keeps the request open; the answer appears in the list above.",
      attrs: { rows: 2 },
    });
    panel.qa = h("div", {}, qaList(view.askExchanges));
    askBlock = h(
      "section",
      { class: "block" },
      h("h3", {}, "Questions and answers"),
      panel.qa,
      answerForm(panel, {
        title: "Ask a question",
        buttonLabel: "Ask",
        children: [question.wrap],
        collect() {
          const text = question.control.value.trim();
          if (!text) throw new LocalError("Write a question first.");
          return { action: "ask", question: text };
        },
        done(result) {
          panel.qa.replaceChildren(qaList(result.askExchanges || []));
          question.control.value = "";
          return { message: "Your question was answered; see the list above." };
        },
      }),
    );
  }

  const exits = allowed.filter((action) => action !== "ask");
  const decision = radioGroup(
    `${p}-action`,
    "Decision",
    exits.map((action) => ({ value: action, label: ACTION_LABELS[action] || action, hint: ACTION_HINTS[action] })),
  );
  const feedback = field(`${p}-feedback`, "Feedback for the requester (optional)", "textarea", { attrs: { rows: 3 } });
  const scope = field(`${p}-scope`, "Scope", "select", {
    options: [
      h("option", { value: "whole" }, "The whole artifact"),
      h("option", { value: "section" }, "One section"),
      h("option", { value: "items" }, "Some items"),
    ],
  });
  const sectionPath = field(`${p}-section`, "Section path", "input", {
    hint: "Where in the artifact data, e.g. lines[1].",
    attrs: { type: "text", autocomplete: "off" },
  });
  const itemIds = field(`${p}-items`, "Item ids", "input", {
    hint: "Comma-separated.",
    attrs: { type: "text", autocomplete: "off" },
  });
  const tags = field(`${p}-tags`, "Tags (optional)", "input", {
    hint: "Comma-separated, e.g. pricing, wording.",
    attrs: { type: "text", autocomplete: "off" },
  });
  const changes = field(`${p}-changes`, "What should change", "textarea", { attrs: { rows: 3 } });
  const refine = h(
    "fieldset",
    { class: "group" },
    h("legend", {}, "Requested changes"),
    scope.wrap,
    sectionPath.wrap,
    itemIds.wrap,
    tags.wrap,
    changes.wrap,
  );
  const edited = jsonArea(
    `${p}-edited`,
    "Edited artifact (JSON)",
    data.artifactData === undefined ? {} : data.artifactData,
    "Your version replaces the artifact data when you accept with edits.",
  );
  const sections = { reject: feedback.wrap, refine, "edit-accept": edited.wrap };

  function showFor() {
    const action = selected(decision.inputs);
    for (const [name, section] of Object.entries(sections)) section.hidden = name !== action;
    sectionPath.wrap.hidden = scope.control.value !== "section";
    itemIds.wrap.hidden = scope.control.value !== "items";
  }
  for (const input of Object.values(decision.inputs)) input.addEventListener("change", showFor);
  scope.control.addEventListener("change", showFor);
  showFor();

  const slot = panel.standIn ? slotChoice(panel, panel.standIn) : null;
  let votedFor = null;
  const withVoter = (value) => (votedFor ? { ...value, voter: votedFor } : value);
  forms.push(
    answerForm(panel, {
      title: "Decide",
      buttonLabel: "Submit decision",
      children: [slot ? slot.set : null, decision.set, ...Object.values(sections)],
      collect() {
        votedFor = slot ? slot.voter() : null;
        return withVoter(decide());
      },
      done(result, value) {
        const whose = votedFor ? ` for ${votedFor}` : "";
        if (result.status === "resolved") {
          const label = ACTION_LABELS[result.action || value.action] || value.action;
          return { message: `Decision recorded${whose}: ${label}.`, settled: true };
        }
        if (result.votes) panel.showVotes(result.votes, result.votesCast);
        if (result.duplicate && slot) return { refused: notCounted(panel, votedFor, result.votesCast || []) };
        if (result.duplicate) return { message: "You have already voted on this request; your first vote stands." };
        return { message: `Your vote${whose} is recorded. ${describeVotes(result.votes)}.` };
      },
    }),
  );

  function decide() {
    const action = selected(decision.inputs);
    if (!action) throw new LocalError("Choose a decision first.");
    if (action === "reject") {
      const text = feedback.control.value.trim();
      return text ? { action, feedback: text } : { action };
    }
    if (action === "refine") {
      const refineFeedback = { scope: scope.control.value };
      if (refineFeedback.scope === "section") refineFeedback.sectionPath = sectionPath.control.value.trim();
      if (refineFeedback.scope === "items") refineFeedback.itemIds = splitList(itemIds.control.value);
      const tagList = splitList(tags.control.value);
      if (tagList.length) refineFeedback.tags = tagList;
      const text = changes.control.value.trim();
      if (text) refineFeedback.text = text;
      if (!text && !tagList.length) throw new LocalError("Say what should change (text or tags).");
      return { action, refineFeedback };
    }
    if (action === "edit-accept") {
      return { action, editedArtifactData: parseJsonField(edited.control, "The edited artifact") };
    }
    return { action };
  }
  if (askBlock) forms.push(askBlock);
  return forms;
}

function schemaHint(schema) {
  if (!schema || typeof schema !== "object") return undefined;
  const notes = [];
  if (schema.description) notes.push(String(schema.description));
  if (schema.pattern) notes.push(`Must match the pattern ${schema.pattern}`);
  if (schema.minimum !== undefined) notes.push(`At least ${schema.minimum}`);
  if (schema.maximum !== undefined) notes.push(`At most ${schema.maximum}`);
  if (schema.minLength !== undefined) notes.push(`At least ${schema.minLength} characters`);
  if (schema.maxLength !== undefined) notes.push(`At most ${schema.maxLength} characters`);
  if (schema.type === "object" || schema.type === "array") notes.push("Answer as JSON");
  return notes.length ? notes.join(". ") + "." : undefined;
}

/** A control for one clarification question, chosen from its schema; read() returns [answered, value]. */
function questionField(id, question) {
  const schema = question.schema && typeof question.schema === "object" ? question.schema : {};
  const label = question.question || question.id;
  const hint = schemaHint(schema);
  if (Array.isArray(schema.enum)) {
    const options = [h("option", { value: "" }, "Choose…")];
    schema.enum.forEach((choice, index) => options.push(h("option", { value: String(index) }, asText(choice))));
    const f = field(id, label, "select", { hint, options });
    return { ...f, read: () => (f.control.value === "" ? [false] : [true, schema.enum[Number(f.control.value)]]) };
  }
  if (schema.type === "boolean") {
    const options = [
      h("option", { value: "" }, "Choose…"),
      h("option", { value: "true" }, "Yes"),
      h("option", { value: "false" }, "No"),
    ];
    const f = field(id, label, "select", { hint, options });
    return { ...f, read: () => (f.control.value === "" ? [false] : [true, f.control.value === "true"]) };
  }
  if (schema.type === "integer" || schema.type === "number") {
    const attrs = { type: "number", step: schema.type === "integer" ? "1" : "any", inputmode: "decimal" };
    const f = field(id, label, "input", { hint, attrs });
    return {
      ...f,
      read() {
        const raw = f.control.value.trim();
        if (!raw) return [false];
        const number = Number(raw);
        return [true, Number.isNaN(number) ? raw : number];
      },
    };
  }
  if (schema.type === "object" || schema.type === "array") {
    const f = field(id, label, "textarea", { hint, attrs: { rows: 4, class: "code", spellcheck: "false" } });
    return {
      ...f,
      read() {
        if (!f.control.value.trim()) return [false];
        return [true, parseJsonField(f.control, `The answer to "${label}"`)];
      },
    };
  }
  const type = schema.format === "date" ? "date" : schema.format === "email" ? "email" : "text";
  const f = field(id, label, "input", { hint, attrs: { type, autocomplete: "off" } });
  return { ...f, read: () => (f.control.value === "" ? [false] : [true, f.control.value]) };
}

function clarificationForms(panel, view) {
  const questions = (view.payload.data && view.payload.data.questions) || [];
  const fields = questions.map((question, index) => ({
    id: question.id,
    ...questionField(`${panel.prefix}-q${index}`, question),
  }));
  return [
    answerForm(panel, {
      title: "Answer the questions",
      buttonLabel: "Send answers",
      children: fields.map((f) => f.wrap),
      collect() {
        const answers = [];
        for (const f of fields) {
          const [answered, value] = f.read();
          if (answered) answers.push({ id: f.id, answer: value });
        }
        return { answers };
      },
      done: () => ({ message: "Thank you, your answers are recorded.", settled: true }),
    }),
  ];
}

function externalEventForms(panel, view) {
  const data = view.payload.data || {};
  const body = jsonArea(
    `${panel.prefix}-event`,
    "Event body (JSON)",
    { ...(data.correlation || {}) },
    "It must carry every correlation key shown above, with the same values.",
  );
  return [
    answerForm(panel, {
      title: "Deliver the event",
      buttonLabel: "Deliver event",
      children: [body.wrap],
      collect: () => parseJsonField(body.control, "The event body"),
      done: () => ({ message: "Event delivered.", settled: true }),
    }),
  ];
}

function lowConfidenceForms(panel, view) {
  const data = view.payload.data || {};
  const p = panel.prefix;
  const ruling = radioGroup(`${p}-ruling`, "Your ruling", [
    { value: "ratify", label: "Ratify the proposed decision", hint: "The agent goes ahead with it." },
    { value: "correct", label: "Correct the decision", hint: "The agent goes ahead with your version instead." },
  ]);
  const corrected = jsonArea(`${p}-corrected`, "Corrected decision (JSON)", data.decision ?? null);
  const update = () => {
    corrected.wrap.hidden = selected(ruling.inputs) !== "correct";
  };
  for (const input of Object.values(ruling.inputs)) input.addEventListener("change", update);
  update();
  return [
    answerForm(panel, {
      title: "Rule on the decision",
      buttonLabel: "Submit ruling",
      children: [ruling.set, corrected.wrap],
      collect() {
        const choice = selected(ruling.inputs);
        if (!choice) throw new LocalError("Choose to ratify or correct the decision first.");
        if (choice === "ratify") return data.decision ?? null;
        return parseJsonField(corrected.control, "The corrected decision");
      },
      done: (_, value) => ({
        message: value === (data.decision ?? null) ? "Decision ratified." : "Corrected decision recorded.",
        settled: true,
      }),
    }),
  ];
}

function conversationForms(panel, view) {
  const data = view.payload.data || {};
  const p = panel.prefix;
  const schema = data.outcomeSchema;
  const structured = schema && typeof schema === "object" && schema.type && schema.type !== "string";
  const prompt = asText(promptOf(view));
  const reply = field(`${p}-reply`, "Your reply", "textarea", {
    hint: structured ? `${prompt} (answer as JSON)` : prompt,
    attrs: { rows: 3, class: structured ? "code" : undefined },
  });
  const note = field(`${p}-close-note`, "Closing note (optional)", "input", { attrs: { type: "text" } });
  const outcome = field(`${p}-close-outcome`, "Outcome (optional JSON)", "textarea", {
    hint: "What the conversation settled, handed to the workflow.",
    attrs: { rows: 3, class: "code", spellcheck: "false" },
  });
  return [
    answerForm(panel, {
      title: "Reply",
      buttonLabel: "Send reply",
      children: [reply.wrap],
      collect() {
        if (!reply.control.value.trim()) throw new LocalError("Write a reply first.");
        const content = structured ? parseJsonField(reply.control, "The reply") : reply.control.value;
        return { content };
      },
      done: () => ({ message: "Reply sent. Waiting for the next turn…", settled: true }),
    }),
    h(
      "section",
      { class: "block" },
      h("h3", {}, "End the conversation"),
      answerForm(panel, {
        title: "Close the conversation",
        buttonLabel: "Close conversation",
        secondary: true,
        children: [note.wrap, outcome.wrap],
        collect() {
          const value = { operation: "close" };
          const text = note.control.value.trim();
          if (text) value.reason = text;
          if (outcome.control.value.trim()) value.outcome = parseJsonField(outcome.control, "The outcome");
          return value;
        },
        done: () => ({ message: "Conversation closed.", settled: true }),
      }),
    ),
  ];
}

function genericForms(panel, view) {
  const answer = jsonArea(
    `${panel.prefix}-answer`,
    "Answer (JSON)",
    undefined,
    view.payload.resumeSchema ? `It must match: ${JSON.stringify(view.payload.resumeSchema)}` : undefined,
  );
  return [
    answerForm(panel, {
      title: "Answer",
      buttonLabel: "Submit answer",
      children: [answer.wrap],
      collect: () => parseJsonField(answer.control, "The answer"),
      done: () => ({ message: "Answer recorded.", settled: true }),
    }),
  ];
}

const FORMS = {
  approval: approvalForms,
  clarification: clarificationForms,
  "external-event": externalEventForms,
  "low-confidence": lowConfidenceForms,
  "conversation.exchange": conversationForms,
};

function stateText(view) {
  if (view.status === "pending") return "";
  const resolution = view.resolution || {};
  const by = resolution.resolvedBy ? ` by ${resolution.resolvedBy}` : "";
  const when = view.resolvedAt ? ` at ${utcTime(view.resolvedAt)}` : "";
  return `This request is no longer pending: ${view.status}${by}${when}.`;
}

/**
 * Render one interrupt. options: {mode: "answer" | "read", submit(resumeValue) -> Promise<result>,
 * transcript: conversation turns or null, me: the signed-in principal, standIn: whom they may answer
 * this approval for ({own, for: [{delegator, until}]}, or null)}. Returns a panel:
 * {element, interruptId, dirty, settled, update(view)}.
 */
export function renderInterrupt(view, { mode = "answer", submit, transcript = null, me = null, standIn = null } = {}) {
  panelCount += 1;
  const panel = {
    prefix: `p${panelCount}`,
    me,
    standIn: view.kind === "approval" && standIn && standIn.for.length ? standIn : null,
    interruptId: view.interruptId,
    view,
    dirty: false,
    settled: false,
    submit,
    qa: null,
  };
  const summaryPart = summary(view, transcript);
  const state = h("p", { class: "state", role: "status" });
  const element = h("div", { class: "panel", dataset: { kind: view.kind } }, summaryPart, state);

  // The tally an answer returned, and the votes cast (as last read, unless the answer's caller read them again).
  panel.showVotes = (votes, cast = panel.view.votes && panel.view.votes.votes) => {
    const next = votesBlock({ votes: { ...votes, votes: cast || [] } });
    const current = element.querySelector(".votes");
    if (current) current.replaceWith(next);
  };
  panel.settle = (focusTarget) => {
    panel.settled = true;
    const hadFocus = element.contains(document.activeElement);
    for (const control of element.querySelectorAll("form input, form select, form textarea, form button")) {
      control.disabled = true;
    }
    if (hadFocus && focusTarget) focusTarget.focus();
  };
  panel.update = (next) => {
    panel.view = next;
    const votes = element.querySelector(".votes");
    if (votes) votes.replaceWith(votesBlock(next));
    if (panel.qa && next.askExchanges) panel.qa.replaceChildren(qaList(next.askExchanges));
    const text = stateText(next);
    if (text && state.textContent !== text) state.textContent = text;
    if (next.status !== "pending" && !panel.settled) panel.settle(state);
  };

  if (mode === "read") {
    if (view.kind === "approval" && view.askExchanges) {
      element.append(block("Questions and answers", qaList(view.askExchanges)));
    }
  } else if (view.status === "pending") {
    const build = FORMS[view.kind] || genericForms;
    element.append(...build(panel, view));
  }
  state.textContent = stateText(view);
  panel.element = element;
  return panel;
}
