"""Tests of the pure decision layer (``bridge.core``): records in, a Mutation out; no store, no engine."""
