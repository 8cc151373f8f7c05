"""OpenWOP v2 at root paths beside ``/v1``: one engine, one store, one set of runs.

A thin layer over the shared HTTP layer (:mod:`openwop_bridge.host.http`): path ids (:mod:`.ids`),
signed-link grammar (:mod:`.tokens`), error codes (:mod:`.errors`), document spelling
(:mod:`.documents`), version negotiation (:mod:`.negotiation`), the operations (:mod:`.routes`,
:mod:`.bulk`, :mod:`.webhooks`) and their route table (:mod:`.api`), which the app serves.
"""
