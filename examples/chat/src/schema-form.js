// Form fields built from a JSON Schema (the interrupt's responseSchema): one labelled
// control per property, and read() to turn what was typed back into a value.
// Only what the schema says is used; the server stays the judge of what is valid.

import { formatJson, h, humanize, uniqueId } from "./dom.js";

/** A problem found before anything was sent (say, JSON that does not parse). */
export class LocalError extends Error {}

// Free-text properties that deserve more than one line.
const LONG_TEXT = new Set(["feedback", "text", "reason", "body", "description", "comment"]);

const hasProperties = (schema) => Boolean(schema && typeof schema === "object" && schema.properties);

function labelled(id, label, control, { hint, required }) {
  const hintId = hint ? `${id}-hint` : null;
  if (hintId) control.setAttribute("aria-describedby", hintId);
  if (required) control.setAttribute("aria-required", "true");
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label, required ? h("span", { class: "required" }, " (required)") : null),
    hintId ? h("p", { id: hintId, class: "hint" }, hint) : null,
    control,
  );
}

function selectField(id, label, schema, opts) {
  const values = schema.enum;
  const control = h("select", { id });
  if (!("default" in schema)) control.append(h("option", { value: "" }, "Choose…"));
  values.forEach((value, index) => {
    control.append(h("option", { value: String(index) }, typeof value === "string" ? value : formatJson(value)));
  });
  if ("default" in schema) {
    const index = values.findIndex((v) => JSON.stringify(v) === JSON.stringify(schema.default));
    if (index >= 0) control.value = String(index);
  }
  return {
    node: labelled(id, label, control, opts),
    read: () => (control.value === "" ? undefined : values[Number(control.value)]),
  };
}

function checkboxField(id, label, schema, opts) {
  const control = h("input", { id, type: "checkbox", checked: schema.default === true });
  const node = h("div", { class: "field check" }, control, h("label", { for: id }, label));
  if (opts.hint) {
    control.setAttribute("aria-describedby", `${id}-hint`);
    node.append(h("p", { id: `${id}-hint`, class: "hint" }, opts.hint));
  }
  return { node, read: () => control.checked };
}

function numberField(id, label, schema, opts) {
  const integer = schema.type === "integer";
  const control = h("input", {
    id,
    type: "number",
    step: integer ? "1" : "any",
    inputmode: integer ? "numeric" : "decimal",
    value: typeof schema.default === "number" ? String(schema.default) : undefined,
  });
  return {
    node: labelled(id, label, control, opts),
    read: () => {
      const text = control.value.trim();
      if (!text) return undefined;
      const value = Number(text);
      if (Number.isNaN(value)) throw new LocalError(`${label}: enter a number.`);
      return value;
    },
  };
}

function textField(id, label, name, schema, opts) {
  const long = LONG_TEXT.has(name);
  const control = long
    ? h("textarea", { id, rows: "2" })
    : h("input", { id, type: "text", autocomplete: "off" });
  if (typeof schema.default === "string") control.value = schema.default;
  return { node: labelled(id, label, control, opts), read: () => (control.value.trim() ? control.value : undefined) };
}

function listField(id, label, schema, opts) {
  const control = h("input", { id, type: "text", autocomplete: "off" });
  if (Array.isArray(schema.default)) control.value = schema.default.join(", ");
  const hint = [opts.hint, "Separate several with commas."].filter(Boolean).join(" ");
  return {
    node: labelled(id, label, control, { ...opts, hint }),
    read: () => {
      const items = control.value
        .split(",")
        .map((part) => part.trim())
        .filter(Boolean);
      return items.length ? items : undefined;
    },
  };
}

function jsonField(id, label, schema, opts) {
  const control = h("textarea", { id, rows: "6", spellcheck: "false", class: "code" });
  if ("default" in schema) control.value = formatJson(schema.default);
  const hint = [opts.hint, "Written as JSON."].filter(Boolean).join(" ");
  return {
    node: labelled(id, label, control, { ...opts, hint }),
    control,
    read: () => {
      const text = control.value.trim();
      if (!text) return undefined;
      try {
        return JSON.parse(text);
      } catch (err) {
        throw new LocalError(`${label} is not valid JSON: ${err.message}`);
      }
    },
  };
}

/**
 * One control (or a group of them) for a value of `schema`: {node, read}. `node` is
 * null for a constant, which needs no input.
 */
export function schemaField(schema, { name = "answer", label, required = false, idPrefix = "field" } = {}) {
  const s = schema && typeof schema === "object" ? schema : {};
  const title = label || s.title || humanize(name);
  const opts = { hint: s.description || null, required };
  const id = uniqueId(`${idPrefix}-${name}`.replace(/[^A-Za-z0-9_-]+/g, "-"));
  if ("const" in s) return { node: null, read: () => s.const };
  if (Array.isArray(s.enum)) return selectField(id, title, s, opts);
  if (s.type === "boolean") return checkboxField(id, title, s, opts);
  if (s.type === "integer" || s.type === "number") return numberField(id, title, s, opts);
  if (s.type === "string") return textField(id, title, name, s, opts);
  if (s.type === "array" && (s.items?.type === "string" || Array.isArray(s.items?.enum))) return listField(id, title, s, opts);
  if (hasProperties(s)) {
    const fields = objectFields(s, { idPrefix: id });
    const node = h("fieldset", { class: "group" }, h("legend", {}, title), fields.nodes);
    return { node, read: () => fields.read(required) };
  }
  return jsonField(id, title, s, opts);
}

/**
 * The fields of an object schema: {nodes, read(required)}. An object whose only
 * property is itself an object (clarifications: `{answers: {...}}`) shows the inner
 * fields directly.
 */
export function objectFields(schema, { idPrefix = "field" } = {}) {
  const props = schema.properties || {};
  const names = Object.keys(props);
  const required = new Set(schema.required || []);
  if (names.length === 1 && hasProperties(props[names[0]])) {
    const inner = objectFields(props[names[0]], { idPrefix });
    return { nodes: inner.nodes, read: () => ({ [names[0]]: inner.read(true) ?? {} }) };
  }
  const fields = names.map((name) => [name, schemaField(props[name], { name, required: required.has(name), idPrefix })]);
  return {
    nodes: fields.map(([, field]) => field.node).filter(Boolean),
    read: (whole = true) => {
      const value = {};
      for (const [name, field] of fields) {
        const item = field.read();
        if (item !== undefined) value[name] = item;
      }
      return whole || Object.keys(value).length ? value : undefined;
    },
  };
}

/** The fields for a whole answer: an object's properties, or one control for any other value. */
export function answerFields(schema, idPrefix) {
  if (hasProperties(schema)) return objectFields(schema, { idPrefix });
  const field = schemaField(schema, { name: "answer", label: schema?.title || "Your answer", idPrefix });
  return { nodes: field.node ? [field.node] : [], read: () => field.read() };
}
