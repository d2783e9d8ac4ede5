"""Request batching shared by the local engines: callers block in :meth:`Batcher.submit`; one
daemon thread takes up to ``max_batch`` waiting requests at a time and runs them together, so
concurrent rollouts share one forward pass (the big win on a CPU). The thread ends after ``idle_s``
without requests (the next submit starts another): a thread waiting forever would keep its engine,
and so its model, alive after the last user dropped it."""

from __future__ import annotations

import threading
from typing import Any, Callable


class Batcher:
    def __init__(self, run_batch: Callable[[list[dict]], list[Any]], max_batch: int, idle_s: float = 10.0):
        self._run_batch, self.max_batch, self.idle_s = run_batch, max_batch, idle_s
        self._queue: list[dict] = []
        self._cv = threading.Condition()
        self._worker: threading.Thread | None = None

    def submit(self, request: dict) -> Any:
        """Queue ``request`` and wait for its result; an error of its batch is raised to every caller."""
        req = {**request, "done": threading.Event()}
        with self._cv:
            self._queue.append(req)
            self._cv.notify()
            if self._worker is None:
                self._worker = threading.Thread(target=self._loop, daemon=True)
                self._worker.start()
        req["done"].wait()
        if "error" in req:
            raise req["error"]
        return req["result"]

    def _loop(self) -> None:
        while True:
            with self._cv:
                if not self._queue and not self._cv.wait_for(lambda: self._queue, timeout=self.idle_s):
                    self._worker = None  # under the lock: a submit now starts a new thread
                    return
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch:]
            try:
                for r, res in zip(batch, self._run_batch(batch)):
                    r["result"] = res
            except Exception as e:  # noqa: BLE001 - handed to every caller of this batch
                for r in batch:
                    r["error"] = e
            for r in batch:
                r["done"].set()
