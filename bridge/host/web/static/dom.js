// Small DOM and formatting helpers shared by the pages. Text from the server
// always becomes text nodes: nothing here parses HTML.

/** Build an element: h("p", {class: "x"}, "text", child). Strings become text nodes. */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "for") node.htmlFor = value;
    else if (name === "value") node.value = value;
    else if (name === "checked" || name === "disabled" || name === "hidden") node[name] = Boolean(value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Pretty JSON for display and editing. */
export function formatJson(value) {
  return value === undefined ? "" : JSON.stringify(value, null, 2);
}

/** Content of a turn or answer as text. */
export function asText(value) {
  return typeof value === "string" ? value : formatJson(value);
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** A timestamp in UTC as the signed-link page writes it: "21 Nov 2026, 10:03 UTC". */
export function utcTime(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const two = (n) => String(n).padStart(2, "0");
  const day = `${two(date.getUTCDate())} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
  return `${day}, ${two(date.getUTCHours())}:${two(date.getUTCMinutes())} UTC`;
}

/** "45 s", "12 min", "3 h 5 min", "2 d 4 h". */
export function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return m % 60 ? `${hours} h ${m % 60} min` : `${hours} h`;
  const d = Math.floor(hours / 24);
  return hours % 24 ? `${d} d ${hours % 24} h` : `${d} d`;
}

/** "Accepted 1 of 3 needed, 0 rejected (majority)". */
export function describeVotes(votes) {
  if (!votes) return "";
  const policy = votes.rejectionPolicy ? ` (${votes.rejectionPolicy})` : "";
  return `Accepted ${votes.accept} of ${votes.required} needed, ${votes.reject} rejected${policy}`;
}
