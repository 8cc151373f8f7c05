"""Tests of the pure decision layer (``openwop_bridge.core``): records in, a Mutation out; no store, no engine."""
