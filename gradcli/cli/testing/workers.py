"""``-j N``: running files in N worker processes, results streamed back one file at a time.

The parent hands out chunks of files (a few per worker, so that the load balances while each
hand-off carries many files) and reads, per file, a "start" and a "result" message. Knowing what
each worker is running lets it survive what ``--timeout``'s alarm cannot stop: a worker that dies
(a crash, the kernel's OOM killer) or runs ``--timeout`` plus a grace period past its file's start
(stuck inside one long C call) costs that one file an error; the rest of its chunk goes to a
fresh worker. Results are put back in collection order by the caller, so they do not depend on
``-j`` (timings aside).

Workers are forked on Linux (they inherit the imported engine, ~1 ms each instead of ~150 ms of
imports) and spawned elsewhere (fork is unsafe on macOS). The parent never runs a thread, so that
forking is safe also when a worker is replaced mid-run: chunks go out through SimpleQueues (written
directly, where a Queue starts a feeder thread), and the progress bar is refreshed from the
caller's loop (rich's refresh thread is off).
"""

from __future__ import annotations

import math
import os
import queue
import sys
import time

from .execute import ERROR, FileResult, Problem, run_file

GRACE = 5.0          # seconds past --timeout before a worker stuck in C code is killed
POLL = 0.2           # seconds between checks on the workers while no message comes


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def chunks(items: list, jobs: int) -> list[list]:
    """About four chunks per worker (at most 32 files each), in collection order."""
    size = max(1, min(32, math.ceil(len(items) / (jobs * 4))))
    return [items[i:i + size] for i in range(0, len(items), size)]


def _context():
    import multiprocessing
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return multiprocessing.get_context(method)


def _worker(wid: int, tasks, results, settings) -> None:
    """A worker's loop: take a chunk, run its files one by one, report each; None ends it."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        chunk = tasks.get()
        if chunk is None:
            break
        for item in chunk:
            results.put(("start", wid, item.index))
            results.put(("result", wid, run_file(item, settings)))
        results.put(("idle", wid, None))


class _Worker:
    __slots__ = ("wid", "process", "tasks", "chunk", "running", "since")

    def __init__(self, wid, process, tasks):
        self.wid, self.process, self.tasks = wid, process, tasks
        self.chunk: list = []          # the items handed to it and not yet reported
        self.running = None            # the item it is running
        self.since = 0.0


class Pool:
    """N workers, fed chunk by chunk; :meth:`results` yields each file's result as it arrives."""

    def __init__(self, settings, jobs: int):
        self.settings, self.jobs = settings, jobs
        self.ctx = _context()
        self.inbox = self.ctx.Queue()
        self.workers: dict[int, _Worker] = {}
        self.pending: list[list] = []
        self._next_id = 0

    def start(self, items: list) -> "Pool":
        """Start the workers, each with its first chunk."""
        self.pending = chunks(items, self.jobs)
        for _ in range(min(self.jobs, len(self.pending))):
            self._feed(self._start())
        return self

    def results(self):
        """Yield a FileResult for every item (in the order they finish)."""
        checked = time.monotonic()
        while self.workers:
            try:
                yield from self._handle(self.inbox.get(timeout=POLL))
            except queue.Empty:
                pass
            if time.monotonic() - checked >= POLL:  # also while other workers keep reporting
                yield from self._check_workers()
                checked = time.monotonic()

    def _start(self) -> _Worker:
        wid, self._next_id = self._next_id, self._next_id + 1
        tasks = self.ctx.SimpleQueue()  # written without a feeder thread: the parent stays single-threaded
        process = self.ctx.Process(target=_worker, args=(wid, tasks, self.inbox, self.settings), daemon=True)
        process.start()
        self.workers[wid] = w = _Worker(wid, process, tasks)
        return w

    def _feed(self, w: _Worker) -> None:
        """The next chunk to ``w``, or the end of its work."""
        if self.pending:
            w.chunk = self.pending.pop(0)
            w.tasks.put(w.chunk)
        else:
            w.tasks.put(None)
            w.process.join()
            del self.workers[w.wid]

    def _handle(self, message):
        kind, wid, payload = message
        w = self.workers.get(wid)
        if w is None:  # a worker already given up on
            return
        if kind == "start":
            w.running = next(item for item in w.chunk if item.index == payload)
            w.since = time.monotonic()
        elif kind == "result":
            w.chunk = [item for item in w.chunk if item.index != payload.index]
            w.running = None
            yield payload
        elif w.process.is_alive():  # idle: its chunk is done
            self._feed(w)

    def _drain(self):
        while True:
            try:
                message = self.inbox.get_nowait()
            except queue.Empty:
                return
            yield from self._handle(message)

    def _check_workers(self):
        """Workers that died or overran: an error for the file each was running, its chunk's other
        files to a fresh worker."""
        timeout = self.settings.timeout
        for w in list(self.workers.values()):
            stuck = bool(timeout) and w.running is not None and time.monotonic() - w.since > timeout + GRACE
            if w.process.is_alive() and not stuck:
                continue
            if stuck:
                w.process.kill()
            w.process.join()
            yield from self._drain()  # what it said before it died
            if self.workers.get(w.wid) is not w:
                continue
            del self.workers[w.wid]
            victim = w.running or (w.chunk[0] if w.chunk else None)
            if victim is not None:
                why = (f"the program ran longer than --timeout {timeout:g} s and its worker process had to be "
                       "stopped" if stuck else
                       f"its worker process died (exit status {w.process.exitcode}) while running it")
                yield _lost(victim, why, "limit" if stuck else "internal")
                rest = [item for item in w.chunk if item is not victim]
                if rest:
                    self.pending.insert(0, rest)
            if self.pending:
                self._feed(self._start())

    def close(self) -> None:
        """Stop every worker still running (after -x, Ctrl-C or an error in the parent)."""
        for w in self.workers.values():
            if w.process.is_alive():
                w.process.kill()
            w.process.join()
        self.workers.clear()


def _lost(item, why: str, kind: str) -> FileResult:
    res = FileResult(item)
    res.outcome = ERROR
    res.error = Problem(kind, None, None, why, f"ERROR {item.display}: {kind} error: {why}")
    return res
