"""The ``webhook`` channel: OpenWOP v2 webhook subscriptions' deliveries (webhooks.md §Delivery).

:mod:`.channel` plans a delivery per event a subscription asks for and sends it; :mod:`.subscriptions` holds
the subscriptions and their signatures, :mod:`.egress` and :mod:`.resolver` the checks of where a delivery may
go, :mod:`.transport` the connections and their bounds. Registration is served by the host
(:mod:`openwop_bridge.host.v2.webhooks`), which hands the channel the v2 wire form of a delivery
(:class:`~.channel.WireFormat`): nothing here imports the host or the runtime.
"""
