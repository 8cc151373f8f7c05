// Several pending approvals answered together: tick their rows, choose approve or reject, review
// what each will do, confirm. One request (POST /v1/interrupts/batch, atomic): every answer is
// applied, or none is and the page says which item was refused and why.

import { ApiError } from "./api.js";
import { h } from "./dom.js";

const VERBS = { accept: "Approve", reject: "Reject" };
const selected = new Map(); // interruptId -> inbox item
let pending = null; // the action under review: "accept" | "reject"
let send = null; // (body) => Promise: the batch request with the page's credentials
let done = () => {};

const $ = (id) => document.getElementById(id);

/** The first cell of an inbox row: a check box for an approval, empty for anything else. */
export function selectionCell(item) {
  if (item.kind !== "approval") return h("td", { class: "select" });
  const box = h("input", {
    type: "checkbox",
    class: "row-select",
    "aria-label": `Select ${item.title}`,
    dataset: { interruptId: item.interruptId },
    checked: selected.has(item.interruptId),
  });
  box.addEventListener("change", () => {
    if (box.checked) selected.set(item.interruptId, item);
    else selected.delete(item.interruptId);
    closeReview();
    renderBar();
  });
  return h("td", { class: "select" }, box);
}

/** Forget selections no longer in the list (answered elsewhere, or another page), then redraw the bar. */
export function keepSelection(items) {
  const shown = new Map(items.map((item) => [item.interruptId, item]));
  for (const id of [...selected.keys()]) {
    if (shown.has(id)) selected.set(id, shown.get(id));
    else selected.delete(id);
  }
  renderBar();
}

/** Forget everything (signing out). */
export function clearSelection() {
  selected.clear();
  closeReview();
  renderBar();
  $("batch-result").textContent = "";
}

function renderBar() {
  const count = selected.size;
  $("batch-bar").hidden = count === 0 && !$("batch-result").textContent;
  $("batch-count").textContent = count ? `${count} selected` : "";
  $("batch-accept").disabled = count === 0;
  $("batch-reject").disabled = count === 0;
}

function review(action) {
  pending = action;
  const verb = VERBS[action];
  $("batch-review-title").textContent = `${verb} ${selected.size} ${selected.size === 1 ? "request" : "requests"}?`;
  $("batch-review-list").replaceChildren(
    ...[...selected.values()].map((item) =>
      h("li", {}, h("strong", {}, verb), " ", item.title, h("span", { class: "muted" }, ` — ${item.workflowId}`)),
    ),
  );
  $("batch-confirm").textContent = `${verb} all`;
  $("batch-review").hidden = false;
  $("batch-confirm").focus();
}

function closeReview() {
  pending = null;
  $("batch-review").hidden = true;
}

async function confirm() {
  if (!pending || !send || !selected.size) return;
  const action = pending;
  const items = [...selected.values()].map((item) => ({
    runId: item.runId,
    nodeId: item.nodeId,
    resumeValue: { action },
  }));
  $("batch-confirm").disabled = true;
  const result = $("batch-result");
  try {
    const reply = await send({ items, atomic: true });
    const resolved = reply.items.filter((o) => o.status === "resolved").length;
    const counted = reply.applied - resolved;
    result.textContent =
      `${VERBS[action] === "Approve" ? "Approved" : "Rejected"} ${reply.applied} ` +
      `${reply.applied === 1 ? "request" : "requests"}` +
      (counted ? ` (${counted} counted as a vote, still waiting for others)` : "") +
      ".";
    result.classList.remove("error");
    selected.clear();
    closeReview();
  } catch (err) {
    const items = (err instanceof ApiError && err.details && err.details.items) || [];
    const refused = items.find((o) => o.status === "refused");
    const title = refused && [...selected.values()].find((i) => i.runId === refused.runId && i.nodeId === refused.nodeId);
    result.textContent = refused
      ? `Nothing was changed: “${title ? title.title : refused.runId}” was refused: ${refused.error.message}`
      : `Nothing was changed: ${err.message}`;
    result.classList.add("error");
  } finally {
    $("batch-confirm").disabled = false;
    renderBar();
    done();
  }
}

/** Wire the bar: ``call(body)`` sends the batch with the page's credentials; ``onDone()`` re-reads the list. */
export function setupBatch({ call, onDone }) {
  send = call;
  done = onDone;
  $("batch-accept").addEventListener("click", () => review("accept"));
  $("batch-reject").addEventListener("click", () => review("reject"));
  $("batch-cancel").addEventListener("click", () => {
    closeReview();
    $("batch-accept").focus();
  });
  $("batch-confirm").addEventListener("click", confirm);
  renderBar();
}
