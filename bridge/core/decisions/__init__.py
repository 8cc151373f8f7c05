"""The pure decisions: what an answer, a vote, a timeout or a cancel does to an interrupt.

- :mod:`.common`: the answer being decided, who gives it, events, refusals, and :func:`~.common.settle`,
  the one way an interrupt is closed;
- :mod:`.answer`: an answer prepared against the interrupt's payload before the transaction
  (:func:`~.answer.prepare_answer`), then dispatched by kind on the current rows;
- :mod:`.approval`: votes, quorum, overrides, ``ask`` and who may decide a gate;
- :mod:`.exchange`: a conversation's exchanges, turns and ``message`` channels;
- :mod:`.timeout`: a deadline that passes;
- :mod:`.cancel`: cancelling one interrupt or a whole run.

Each takes records (:mod:`openwop_bridge.core.records`) and returns a :class:`~openwop_bridge.core.records.Mutation`;
none reads a clock, makes an id of its own or touches a store.
"""
