"""The pure core: records, kinds, decisions, the trigger graph, views, errors, clock, keys and links.

Nothing here does I/O or imports the runtime, the store or the host."""
