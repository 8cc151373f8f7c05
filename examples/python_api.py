"""Write a workflow in Python, pause it for a person, answer it, read the result.

.venv/bin/python examples/python_api.py
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from openwop_bridge import Engine, NodeContext, Principal, SqliteStore, Workflow, approval, clarification

wf = Workflow("publish-post", description="Draft a post, ask who it is for, get it approved.")


@wf.node("draft")
async def draft(ctx: NodeContext) -> dict[str, Any]:
    # Ask a question; the node unwinds here and runs again from the top once answered.
    answers = await ctx.interrupt(clarification(["Who is the post for?"]))
    audience = answers["answers"][0]["answer"]
    return {"text": f"Hello {audience}, our new release is out!"}


@wf.node("review", after="draft")
async def review(ctx: NodeContext) -> dict[str, Any]:
    text = ctx.upstream["draft"]["outputs"]["text"]
    decision = await ctx.interrupt(
        approval("Publish this post?", actions=["accept", "edit-accept", "reject"], artifact_data={"text": text})
    )
    final = decision.get("editedArtifactData", {"text": text})
    return {"published": final["text"], "by": decision["decidedBy"]}


async def main() -> None:
    alice = Principal("alice")
    db = Path(tempfile.mkdtemp()) / "example.db"
    async with Engine(SqliteStore(db)) as engine:
        wf.register(engine)
        run = await engine.create_run(alice, "publish-post")

        async def wait_for(status: str) -> dict[str, Any]:
            while True:
                snap = await engine.snapshot(run.run_id, alice)
                if snap["status"] == status:
                    return snap
                await asyncio.sleep(0.01)

        snap = await wait_for("waiting-input")
        print("asked:", snap["interrupt"]["payload"]["data"]["questions"][0]["question"])
        await engine.resolve(alice, {"answers": {"q1": "early adopters"}}, run_id=run.run_id, node_id="draft")

        snap = await wait_for("waiting-approval")
        print("approve?", snap["interrupt"]["payload"]["data"]["artifactData"])
        await engine.resolve(
            alice,
            {"action": "edit-accept", "editedArtifactData": {"text": "Hello early adopters: 2.0 is out!"}},
            run_id=run.run_id,
            node_id="review",
        )

        snap = await wait_for("completed")
        print("published:", snap["outputs"]["review"]["published"], "| approved by", snap["outputs"]["review"]["by"])


if __name__ == "__main__":
    asyncio.run(main())
