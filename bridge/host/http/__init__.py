"""The shared HTTP layer both majors build on: request bodies, the caller, responses and errors,
``Idempotency-Key``, event streams, the host's one middleware layer, and the route table's
:class:`~openwop_bridge.host.http.routing.Operation`. The app is :mod:`openwop_bridge.host.app`."""
