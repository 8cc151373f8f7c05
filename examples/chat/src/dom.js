// DOM helpers. Text from the server only ever becomes text nodes or form values:
// nothing in this example parses HTML.

/** Build an element: h("p", {class: "x"}, "text", child). Strings become text nodes. */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "for") node.htmlFor = value;
    else if (name === "value") node.value = value;
    else if (name === "checked" || name === "disabled" || name === "hidden" || name === "open") node[name] = Boolean(value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Pretty JSON for display and editing. */
export function formatJson(value) {
  return value === undefined ? "" : JSON.stringify(value, null, 2);
}

/** "edit-accept" → "Edit accept", "sectionPath" → "Section path". */
export function humanize(name) {
  const words = String(name)
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[-_]+/g, " ")
    .trim()
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

let counter = 0;

/** A page-unique element id with a readable prefix. */
export function uniqueId(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** A random id (thread ids, message ids); works on plain http too, unlike crypto.randomUUID. */
export function randomId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Show an error in an alert region: its message, then any listed problems. */
export function showError(region, failure) {
  region.replaceChildren();
  if (!failure) return;
  region.append(h("p", {}, failure.message || "Something went wrong."));
  const problems = Array.isArray(failure.details?.problems) ? failure.details.problems.map(String) : [];
  if (problems.length) region.append(h("ul", {}, problems.map((line) => h("li", {}, line))));
}
