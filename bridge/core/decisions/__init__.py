"""The pure decisions: what an answer, a vote, a timeout or a cancel does to an interrupt.

- :mod:`.common`: the answer being decided, who gives it, events and refusals;
- :mod:`.approval`: votes, quorum, overrides, ``ask`` and who may decide a gate.

The dispatch by kind for answers and timeouts is :mod:`bridge.core.resolution`; cancels are
:mod:`bridge.core.cancellation`; a conversation's exchanges are :mod:`bridge.core.exchange`.
"""
