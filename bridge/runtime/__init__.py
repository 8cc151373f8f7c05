"""The runtime: the engine facade, the executor that drives runs, node contexts, timers and the hub."""
