// The read-only part of an interrupt on screen: what it asks, built from the
// interrupt itself (and, for a conversation, its transcript).

import { asText, describeVotes, h } from "./dom.js";

export const KIND_LABELS = {
  approval: "Approval",
  clarification: "Clarification",
  "external-event": "External event",
  custom: "Custom input",
  "low-confidence": "Low-confidence decision",
  "conversation.exchange": "Conversation",
};

function facts(rows) {
  const list = h("dl", { class: "facts" });
  for (const [term, value] of rows) {
    if (value === undefined || value === null || value === "") continue;
    list.append(h("div", {}, h("dt", {}, term), h("dd", {}, value)));
  }
  return list;
}

/** A titled section. */
export function block(title, ...children) {
  return h("section", { class: "block" }, h("h3", {}, title), ...children);
}

function pre(value) {
  return h("pre", { class: "code" }, asText(value));
}

/** Votes so far on a quorum approval (an empty placeholder when there are none). */
export function votesBlock(view) {
  const votes = view.votes;
  if (!votes) return h("div", { class: "votes", hidden: true });
  const list = h("ul", { class: "vote-list" });
  for (const vote of votes.votes || []) {
    const extra = vote.feedback || (vote.refineFeedback && vote.refineFeedback.text) || "";
    // A vote cast in the voter's place through a delegation says who cast it.
    const by = vote.delegation && vote.actingPrincipal ? ` (answered by ${vote.actingPrincipal})` : "";
    list.append(h("li", {}, `${vote.voter}: ${vote.action}${by}${extra ? ` — ${extra}` : ""}`));
  }
  return h("div", { class: "votes" }, block("Votes so far", h("p", {}, describeVotes(votes)), list));
}

/** The questions asked on an approval and their answers. */
export function qaList(exchanges) {
  if (!exchanges || !exchanges.length) return h("p", { class: "muted" }, "No questions asked yet.");
  const list = h("ol", { class: "qa" });
  for (const item of exchanges) {
    list.append(
      h(
        "li",
        {},
        h("p", { class: "q" }, h("strong", {}, "Q "), item.askedBy ? `(${item.askedBy}) ` : "", item.question),
        h("p", { class: "a" }, h("strong", {}, "A "), item.answer || "(no answer yet)"),
      ),
    );
  }
  return list;
}

/** The conversation turns of one conversation, in order. */
export function conversationTurns(channels, conversationId) {
  const turns = [];
  for (const value of Object.values(channels || {})) {
    if (!Array.isArray(value)) continue;
    for (const turn of value) {
      if (turn && typeof turn.messageId === "string" && turn.messageId.startsWith(`${conversationId}:`)) {
        turns.push(turn);
      }
    }
  }
  const order = { agent: 0, user: 1, system: 2 };
  turns.sort((a, b) => a.turnIndex - b.turnIndex || (order[a.role] ?? 3) - (order[b.role] ?? 3));
  return turns;
}

function transcriptBlock(turns) {
  const list = h("ol", { class: "transcript" });
  for (const turn of turns) {
    const who = turn.role === "user" ? turn.speakerId || "Person" : turn.role === "agent" ? "Agent" : "System";
    list.append(h("li", { class: `turn ${turn.role}` }, h("strong", {}, who), h("span", {}, asText(turn.content))));
  }
  return block("Conversation so far", list);
}

/** What the interrupt asks, read-only, per kind. */
export function summary(view, transcript) {
  const data = (view.payload && view.payload.data) || {};
  const parts = [];
  switch (view.kind) {
    case "approval": {
      if (data.description) parts.push(h("p", { class: "lead" }, data.description));
      parts.push(
        facts([
          ["Artifact", [data.artifactType, data.artifactId].filter(Boolean).join(" ")],
          ["Approvals needed", data.requiredApprovals > 1 ? String(data.requiredApprovals) : ""],
          ["Approvers", Array.isArray(data.approversList) ? data.approversList.join(", ") : ""],
        ]),
      );
      if (data.artifactData !== undefined) parts.push(block("Artifact data", pre(data.artifactData)));
      parts.push(votesBlock(view));
      break;
    }
    case "clarification":
      parts.push(facts([["Context", data.contextType]]));
      break;
    case "external-event": {
      const correlation = Object.entries(data.correlation || {}).map(([k, v]) => `${k} = ${JSON.stringify(v)}`);
      parts.push(
        facts([
          ["Event type", data.eventType],
          ["Correlation", correlation.join(", ")],
        ]),
      );
      break;
    }
    case "low-confidence": {
      parts.push(
        facts([
          ["Agent", data.agentId],
          ["Confidence", `${data.observed} observed, below the ${data.threshold} threshold`],
        ]),
      );
      parts.push(block("Proposed decision", pre(data.decision === undefined ? null : data.decision)));
      break;
    }
    case "conversation.exchange": {
      if (transcript && transcript.length) parts.push(transcriptBlock(transcript));
      else parts.push(block("Current question", h("p", {}, asText(promptOf(view)))));
      break;
    }
    case "custom":
      parts.push(facts([["Custom kind", data.customKind]]));
      if (data.payload !== undefined) parts.push(block("Payload", pre(data.payload)));
      break;
    default:
      parts.push(block("Request data", pre(data)));
  }
  return h("div", { class: "summary" }, parts);
}

/** The question of a conversation turn. */
export function promptOf(view) {
  const data = (view.payload && view.payload.data) || {};
  return (view.promptTurn && view.promptTurn.content) ?? data.prompt ?? "";
}
