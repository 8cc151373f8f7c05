// Answers on their way back. An AG-UI thread resumes with one entry per open
// interrupt, all in the same request (the client refuses to leave one out), so the
// answers given on the cards and in the composer are gathered here until every open
// interrupt has one.

export class ResumeBatch {
  /** `pending`: the interrupts the last run finished with. */
  constructor(pending = []) {
    this.pending = pending;
    this.entries = new Map(); // interruptId → {entry, origin}
  }

  /** Record the answer to one interrupt (a later answer replaces an earlier one). */
  add(entry, origin) {
    this.entries.set(entry.interruptId, { entry, origin });
  }

  /** The open interrupts still without an answer. */
  missing() {
    return this.pending.filter((it) => !this.entries.has(it.id));
  }

  /** True when every open interrupt has an answer. */
  ready() {
    return this.pending.length > 0 && this.missing().length === 0;
  }

  /** The `resume` array, in the order the run listed its interrupts. */
  resume() {
    return this.pending.map((it) => this.entries.get(it.id).entry);
  }

  /** Where the answer to `interruptId` was given (a card or the composer), if anywhere. */
  originOf(interruptId) {
    return this.entries.get(interruptId)?.origin || null;
  }

  /** Every place an answer came from, once each. */
  origins() {
    return [...new Set([...this.entries.values()].map((e) => e.origin))];
  }

  /** Drop one answer (refused by the server), or all of them. */
  forget(interruptId = null) {
    if (interruptId === null) this.entries.clear();
    else this.entries.delete(interruptId);
  }
}
