"""``python -m bridge.bench``: the same as ``openwop-bridge bench``."""

from __future__ import annotations

from bridge.bench.harness import main

raise SystemExit(main())
