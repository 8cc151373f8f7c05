// Passkeys: register one from the inbox, and confirm a decision on a key-bound gate with one.
//
// A gate that says "assurance": "key-bound" takes an answer only with a WebAuthn assertion over it:
// the host issues a challenge binding the interrupt, the action and the resume value's hash
// (POST ui/api/passkeys/challenge), the person's authenticator signs it, and the assertion travels
// beside the answer in the OpenWOP-Passkey-Assertion header (base64url of its JSON).

import { callJson } from "./api.js";

export const ASSERTION_HEADER = "OpenWOP-Passkey-Assertion";

/** Whether answering `view` needs a passkey. */
export function keyBound(view) {
  const data = (view.payload && view.payload.data) || {};
  return view.kind === "approval" && data.assurance === "key-bound";
}

function base64urlJson(value) {
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function supported() {
  if (!window.PublicKeyCredential || !PublicKeyCredential.parseRequestOptionsFromJSON) {
    throw new Error("This browser cannot use passkeys here (it needs WebAuthn over HTTPS or on localhost).");
  }
}

/**
 * Ask the person's authenticator to confirm one answer: `challengeUrl` issues the challenge for
 * `body` ({runId, nodeId, resumeValue} or {token, resumeValue}); resolves to the headers to send.
 */
export async function confirmation(challengeUrl, body, credentials) {
  supported();
  const options = await callJson(challengeUrl, { method: "POST", ...credentials, body });
  const credential = await navigator.credentials.get({
    publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
  });
  if (!credential) throw new Error("No passkey confirmed the decision.");
  return { [ASSERTION_HEADER]: base64urlJson(credential.toJSON()) };
}

/** Register a new passkey for whoever `credentials` sign in (`base` resolves ui/api/… URLs). */
export async function registerPasskey(base, credentials) {
  supported();
  const options = await callJson(base("api/passkeys/options"), { method: "POST", ...credentials });
  const credential = await navigator.credentials.create({
    publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
  });
  if (!credential) throw new Error("No passkey was made.");
  return callJson(base("api/passkeys"), { method: "POST", ...credentials, body: { credential: credential.toJSON() } });
}

/** Wire the inbox's "Add a passkey" button: `credentials()` gives the current sign-in. */
export function setupPasskeyButton(button, status, base, credentials) {
  button.addEventListener("click", async () => {
    button.disabled = true;
    status.textContent = "Follow your browser's prompt to make a passkey…";
    try {
      await registerPasskey(base, credentials());
      status.textContent = "Passkey added: you can now confirm decisions that need it.";
    } catch (err) {
      status.textContent = `No passkey added: ${err.message}`;
    } finally {
      button.disabled = false;
    }
  });
}
