// Calling the host: JSON in, JSON out, OpenWOP error envelopes as ApiError.

/** An error answered by the host ({error, message, details?}) or a network failure (status 0). */
export class ApiError extends Error {
  constructor(status, envelope) {
    super(envelope.message || `request failed (${status})`);
    this.name = "ApiError";
    this.status = status;
    this.code = envelope.error || "error";
    this.details = envelope.details || null;
  }
}

/** What the inbox sends beside its session cookie: the host refuses a cookie-authenticated change without it. */
const SESSION_HEADER = { "X-Requested-With": "openwop-inbox" };

/**
 * How a request authenticates: with a pasted `key` in the Authorization header (never the URL, and
 * no cookie), or with `session` the host's session cookie (same origin only), the inbox's header and
 * an Origin the host can check (this page's no-referrer policy would send "null" on a POST).
 */
function credentialsFor(key, session, headers) {
  if (key) {
    headers.Authorization = `Bearer ${key}`;
    return { credentials: "omit" };
  }
  if (session) {
    Object.assign(headers, SESSION_HEADER);
    return { credentials: "same-origin", referrerPolicy: "same-origin" };
  }
  return { credentials: "omit" };
}

/**
 * fetch() a JSON endpoint with a `key` or the `session` cookie (see credentialsFor); `body` is sent
 * as JSON, `headers` beside the usual ones. Resolves to the parsed body; rejects with ApiError.
 */
export async function callJson(url, { method = "GET", key = null, session = false, body, signal, headers: extra } = {}) {
  const headers = { Accept: "application/json", ...extra };
  const credentials = credentialsFor(key, session, headers);
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: "no-store",
      ...credentials,
    });
  } catch (err) {
    if (err && err.name === "AbortError") throw err;
    throw new ApiError(0, {
      error: "network_error",
      message: "The server could not be reached. Check the connection and try again.",
    });
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const envelope =
      data && typeof data === "object" && typeof data.message === "string"
        ? data
        : { error: `http_${response.status}`, message: `The server answered ${response.status} ${response.statusText}.` };
    throw new ApiError(response.status, envelope);
  }
  return data;
}

/**
 * Follow a text/event-stream with fetch (EventSource cannot send an Authorization header).
 * Calls onEvent(type, data) per event; resolves when the server ends the stream.
 */
export async function followEvents(url, { key = null, session = false, signal, onOpen, onEvent }) {
  const headers = { Accept: "text/event-stream" };
  const credentials = credentialsFor(key, session, headers);
  const response = await fetch(url, { headers, signal, cache: "no-store", ...credentials });
  if (!response.ok || !response.body) {
    let envelope = { error: `http_${response.status}`, message: `The server answered ${response.status}.` };
    try {
      envelope = await response.json();
    } catch {
      // keep the generic message
    }
    throw new ApiError(response.status, envelope);
  }
  if (onOpen) onOpen();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(type, data.join("\n"));
    }
  }
}
