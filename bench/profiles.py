"""Sampling profiles of the bridge side: ``bench --profile DIR`` and their summaries.

With ``--profile DIR`` each scenario repeats its bridge workload once more,
unmeasured, under ``py-spy record`` (attached to the server process, or to the
benchmark process for the in-process scenario) and writes
``DIR/<label>.speedscope.json`` (open it at https://www.speedscope.app). The
measured figures never carry the profiler's overhead.

``python -m openwop_bridge.bench.profiles FILE…`` prints, per thread, the functions
with the largest share of busy samples (see :func:`summarize`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import linecache
import re
import shutil
import signal
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import orjson

RATE_HZ = 1000


class Profiler:
    """Starts ``py-spy record`` on a process for the duration of a block (or does nothing)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.written: list[Path] = []
        #: py-spy beside this interpreter (the venv's, without it on PATH), else the one on PATH.
        beside = Path(sys.executable).parent / "py-spy"
        self.executable = str(beside) if beside.is_file() else shutil.which("py-spy")
        if folder is not None and self.executable is None:
            raise RuntimeError("--profile needs py-spy (beside Python or on PATH): pip install 'openwop-bridge[bench]'")

    @contextlib.asynccontextmanager
    async def record(self, label: str, pid: int) -> AsyncIterator[None]:
        """Sample ``pid`` while the block runs; write ``<label>.speedscope.json``."""
        if self.folder is None:
            yield
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{label}.speedscope.json"
        assert self.executable is not None  # checked when a folder was given
        spy = await asyncio.create_subprocess_exec(
            self.executable,
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(RATE_HZ),
            "--format",
            "speedscope",
            "--output",
            str(path),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        await asyncio.sleep(0.5)  # attaching takes a moment; samples before the workload would be idle anyway
        try:
            yield
        finally:
            if spy.returncode is None:
                spy.send_signal(signal.SIGINT)
            _, err = await spy.communicate()
            if spy.returncode != 0 or not path.exists():
                raise RuntimeError(f"py-spy failed on {label}: {err.decode(errors='replace')[-500:]}")
            self.written.append(path)


_WAITING = re.compile(r"\.(get|wait|poll|select|acquire|waitpid)\(")


def _frame_name(frame: dict[str, Any], *, line: bool = False) -> str:
    file = str(frame.get("file") or "")
    for marker in ("site-packages/", "/lib/python3.11/", "/work/main/", "/bridge/", "/adapters/"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    where = f"{file}:{frame.get('line')}" if line else file
    return f"{frame.get('name')} ({where})"


def _waiting(frame: dict[str, Any]) -> bool:
    """True when the sampled line blocks: a queue ``get``, a lock, a selector, ``waitpid``."""
    text = linecache.getline(str(frame.get("file") or ""), int(frame.get("line") or 0))
    return bool(_WAITING.search(text))


def summarize(path: Path, top: int = 15) -> str:
    """The busiest functions of a speedscope profile, per thread.

    Samples whose innermost line blocks (a queue ``get``, a selector, a lock) are
    counted as waiting and left out; shares are of the process's busy samples.
    *self* is the innermost frame (with its line), *total* anywhere on the stack
    (frames on nearly every stack of a thread, its entry points, are left out).
    """
    doc = orjson.loads(path.read_bytes())
    shared = doc["shared"]["frames"]
    waiting = {i for i, f in enumerate(shared) if _waiting(f)}
    names = [_frame_name(f) for f in shared]
    lined = [_frame_name(f, line=True) for f in shared]
    busy: dict[str, list[tuple[list[int], float]]] = {}
    idle = 0.0
    for profile in doc["profiles"]:
        weights = profile.get("weights") or [1.0] * len(profile["samples"])
        kept = busy.setdefault(profile["name"], [])
        for stack, weight in zip(profile["samples"], weights, strict=True):
            if not stack or stack[-1] in waiting:
                idle += weight
            else:
                kept.append((stack, weight))
    total = sum(w for samples in busy.values() for _, w in samples) or 1.0
    lines = [f"{path.name}: {total:.2f} s of busy samples ({idle:.2f} s waiting left out)"]
    for thread, samples in busy.items():
        thread_total = sum(w for _, w in samples)
        if thread_total < 0.01 * total:
            continue
        own: defaultdict[str, float] = defaultdict(float)
        anywhere: defaultdict[str, float] = defaultdict(float)
        for stack, weight in samples:
            own[lined[stack[-1]]] += weight
            for name in {names[i] for i in stack}:
                anywhere[name] += weight
        inner = [(name, n) for name, n in _largest(anywhere) if n < 0.98 * thread_total]
        lines.append(f"  {thread}: {thread_total / total:.0%} of busy samples")
        lines.append("    self:")
        lines += [f"      {n / total:6.1%}  {name}" for name, n in _largest(own)[:top]]
        lines.append("    total (without the thread's entry frames):")
        lines += [f"      {n / total:6.1%}  {name}" for name, n in inner[:top]]
    return "\n".join(lines)


def _largest(weights: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(weights.items(), key=lambda item: item[1], reverse=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m openwop_bridge.bench.profiles FILE… [--top N]``."""
    parser = argparse.ArgumentParser(prog="python -m openwop_bridge.bench.profiles")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    for file in args.files:
        print(summarize(file, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
