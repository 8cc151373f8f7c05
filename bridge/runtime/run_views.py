"""Read models of a run: its snapshot and its channels."""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decisions import exchange
from openwop_bridge.core.errors import NotFoundError
from openwop_bridge.core.records import RunRecord
from openwop_bridge.core.views import channel_page, paged_channels, run_snapshot
from openwop_bridge.core.workflow import thaw
from openwop_bridge.runtime.kernel import Kernel
from openwop_bridge.runtime.links import LinkService
from openwop_bridge.runtime.runs import RunService


class RunViews:
    """What a run looks like to a reader (``GET /v1/runs/{runId}`` and the pages)."""

    def __init__(self, kernel: Kernel, runs: RunService, links: LinkService) -> None:
        self._k = kernel
        self._runs = runs
        self._links = links

    async def snapshot(self, run_id: str, principal: Principal, *, base_url: str = "") -> dict[str, Any]:
        """The ``RunSnapshot`` of a run, with signed links for its open interrupts."""
        principal.require("runs:read")
        run = await self._runs.visible_run(run_id, principal)
        return await self.snapshot_of(run, base_url=base_url, link=self._links.link_for(principal), reader=principal.id)

    async def snapshot_of(
        self, run: RunRecord, *, base_url: str = "", link: str | None = "resolve", reader: str | None = None
    ) -> dict[str, Any]:
        """The snapshot of an already-loaded run (no access check); open interrupts carry ``link`` links
        (on a quorum gate, links that name ``reader``, and none without one)."""
        store = self._k.store
        open_records = [] if run.terminal else await store.run_interrupts(run.run_id, open_only=True)
        open_records = [r for r in open_records if kinds.kind_of(r.kind).listed]
        views = [self._links.interrupt_view(r, base_url=base_url, link=link, reader=reader) for r in open_records]
        href = f"{base_url}/v1/runs/{run.run_id}/channels"
        channels, pages = paged_channels(await self.channels(run), self._k.config.snapshot_messages, href)
        children = await store.child_runs(run.run_id)
        # The stored status is the reported one: a parent waiting on a waiting child is stored with the child's
        # waiting status (:func:`openwop_bridge.core.run_state.reported_status`, kept by the store's commits).
        return run_snapshot(
            run, open_views=views, channels=channels, children=children, status=run.status, channel_pages=pages
        )

    async def channel(
        self, run_id: str, principal: Principal, name: str, *, offset: int = 0, limit: int = 100
    ) -> dict[str, Any]:
        """A page of one of a run's message channels (``GET /v1/runs/{runId}/channels/{name}``): the whole
        transcript a snapshot shows only the end of."""
        principal.require("runs:read")
        run = await self._runs.visible_run(run_id, principal)
        value = (await self.channels(run)).get(name)
        if not isinstance(value, list):
            raise NotFoundError(f"run {run_id!r} has no message channel {name!r}", details={"channel": name})
        return channel_page(run.run_id, name, value, offset, limit)

    async def channels(self, run: RunRecord) -> dict[str, Any]:
        """The run's channels: declared defaults plus conversation turns folded by messageId."""
        workflow = self._k.loaded_workflow(run.workflow_id)
        out: dict[str, Any] = {}
        if workflow is not None:
            for name, decl in workflow.channels.items():
                out[name] = [] if decl.get("reducer") == "message" else thaw(decl.get("default"))
        if run.state.get("hasConversation") or any(isinstance(v, list) for v in out.values()):
            docs = await self._k.store.events_of_types(run.run_id, exchange.FOLD_EVENT_TYPES)
            out.update(exchange.fold_channels(docs))
        return out
