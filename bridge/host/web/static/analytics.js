// The "Decisions" view of the inbox: the last 30 days' decisions by approver
// (GET /v1/analytics/decisions), with a bar chart of each approver's decisions and how
// many were made within seconds of the notice. Shown only to a key holding audit:read.
//
// It follows the inbox's sign-in through the "inbox:signed-in" / "inbox:signed-out"
// events on document and adds nothing else to the page than its own section.

import { ApiError, callJson } from "./api.js";
import { h, utcTime } from "./dom.js";

const ROOT = new URL("../", document.baseURI);
const SVG = "http://www.w3.org/2000/svg";
const SCOPE = "audit:read";
const BAR_ROW = 26;
const LABEL_WIDTH = 140;
const CHART_WIDTH = 560;

const state = { auth: null, seq: 0 };

const section = () => document.getElementById("decisions");

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

/** "850 ms", "4.2 s", "3 min", "2 h 5 min"; "—" when there is no figure. */
export function elapsed(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
}

function percent(share) {
  return share === null || share === undefined ? "—" : `${Math.round(share * 100)} %`;
}

/** Each approver's decisions as a bar, the part made within seconds of the notice drawn apart. */
function chart(report) {
  const groups = report.groups;
  const most = Math.max(1, ...groups.map((g) => g.decisions));
  const scale = (CHART_WIDTH - LABEL_WIDTH - 60) / most;
  const height = Math.max(1, groups.length) * BAR_ROW + 8;
  const title = svg("title", { id: "decisions-chart-title" }, "Decisions by approver, fast ones apart");
  const bars = groups.map((g, i) => {
    const y = 4 + i * BAR_ROW;
    const fast = g.fastDecisions || 0;
    return svg(
      "g",
      { class: "approver-bar", "data-approver": g.key },
      svg("text", { x: LABEL_WIDTH - 8, y: y + 15, "text-anchor": "end", class: "bar-label" }, g.key),
      svg("rect", { x: LABEL_WIDTH, y, width: g.decisions * scale, height: BAR_ROW - 8, class: "bar" }),
      svg("rect", { x: LABEL_WIDTH, y, width: fast * scale, height: BAR_ROW - 8, class: "bar-fast" }),
      svg("text", { x: LABEL_WIDTH + g.decisions * scale + 6, y: y + 15, class: "bar-value" }, String(g.decisions)),
    );
  });
  return svg(
    "svg",
    {
      viewBox: `0 0 ${CHART_WIDTH} ${height}`,
      width: CHART_WIDTH,
      height,
      role: "img",
      "aria-labelledby": "decisions-chart-title",
      class: "decisions-chart",
    },
    title,
    ...bars,
  );
}

function row(g) {
  const flag = g.rubberStamp
    ? h("span", { class: "flag", title: "Most decisions within seconds of the notice" }, "possible rubber stamp")
    : null;
  const o = g.outcomes;
  return h(
    "tr",
    { dataset: { approver: g.key }, class: g.rubberStamp ? "flagged" : null },
    h("th", { scope: "row" }, g.key, flag ? " " : null, flag),
    h("td", {}, String(g.decisions)),
    h("td", {}, String(o.approved)),
    h("td", {}, String(o.rejected)),
    h("td", {}, String(o.answered)),
    h("td", {}, String(o.cancelled)),
    h("td", {}, String(o.expired)),
    h("td", {}, elapsed(g.requestToDecisionMs.median)),
    h("td", {}, elapsed(g.requestToDecisionMs.p90)),
    h("td", {}, elapsed(g.noticeToDecisionMs.median)),
    h("td", {}, String(g.undeliverable)),
    h("td", {}, percent(g.fastShare)),
  );
}

function render(report) {
  const total = report.total.decisions;
  const cut = report.truncated ? " The window held more than the report reads: these figures cover its start." : "";
  const summary = `${total} ${total === 1 ? "decision" : "decisions"} from ${utcTime(report.from)} to ${utcTime(report.to)}.${cut}`;
  const heads = [
    "Approver", "Decisions", "Approved", "Rejected", "Answered", "Cancelled", "Expired",
    "Median to decide", "p90 to decide", "Median after notice", "Undeliverable", `Within ${report.fastWithinMs / 1000} s`,
  ];
  const body = report.groups.length
    ? report.groups.map(row)
    : [h("tr", {}, h("td", { colspan: String(heads.length), class: "empty" }, "No decisions in the last 30 days."))];
  const table = h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { id: "decisions-table" },
      h("caption", {}, "By approver"),
      h("thead", {}, h("tr", {}, heads.map((text) => h("th", { scope: "col" }, text)))),
      h("tbody", {}, body),
    ),
  );
  document.getElementById("decisions-summary").textContent = summary;
  const legend = report.groups.length
    ? h("p", { class: "muted legend" }, `Each bar counts an approver's decisions; the red part, those made within ${report.fastWithinMs / 1000} s of the notice (or of the request when no notice was delivered).`)
    : "";
  document.getElementById("decisions-body").replaceChildren(report.groups.length ? chart(report) : "", legend, table);
}

async function load() {
  const mine = ++state.seq;
  const error = document.getElementById("decisions-error");
  let report;
  try {
    report = await callJson(new URL("v1/analytics/decisions?groupBy=approver", ROOT).toString(), state.auth);
  } catch (err) {
    if (mine !== state.seq) return;
    error.textContent = err instanceof ApiError ? `Could not load the decisions: ${err.message}` : String(err);
    return;
  }
  if (mine !== state.seq || !state.auth) return;
  error.textContent = "";
  render(report);
}

function show(auth) {
  const place = section();
  state.auth = auth;
  const refresh = h("button", { type: "button", class: "secondary", id: "decisions-refresh" }, "Refresh");
  refresh.addEventListener("click", load);
  place.replaceChildren(
    h(
      "div",
      { class: "inbox-head" },
      h("h2", { id: "decisions-title" }, "Decisions, last 30 days"),
      refresh,
    ),
    h(
      "p",
      { class: "muted" },
      "Who decided what, and how fast. An approver who decides most requests within seconds of being told ",
      "is flagged: they may not be reading what they approve.",
    ),
    h("p", { id: "decisions-summary", role: "status" }, "Loading…"),
    h("p", { id: "decisions-error", class: "error", role: "alert" }),
    h("div", { id: "decisions-body" }),
  );
  place.hidden = false;
  load();
}

function hide() {
  state.auth = null;
  state.seq += 1;
  const place = section();
  place.hidden = true;
  place.replaceChildren();
}

document.addEventListener("inbox:signed-in", (event) => {
  const { auth, me } = event.detail;
  if (me && Array.isArray(me.scopes) && me.scopes.includes(SCOPE)) show(auth);
  else hide();
});
document.addEventListener("inbox:signed-out", hide);
