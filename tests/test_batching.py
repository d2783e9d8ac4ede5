"""The engines' request batcher: concurrent callers share one batch, and its thread does not outlive
its use (a thread waiting forever would keep its engine's model alive)."""

import gc
import threading
import weakref

from tmax.agent.batching import Batcher


class Engine:
    def __init__(self, idle_s: float):
        self.batches: list[int] = []
        self.batcher = Batcher(self.run, max_batch=8, idle_s=idle_s)

    def run(self, batch):
        self.batches.append(len(batch))
        return [r["x"] * 2 for r in batch]


def test_callers_get_their_own_results_and_an_idle_thread_ends_and_frees_its_engine():
    eng = Engine(idle_s=0.05)
    out: dict[int, int] = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, eng.batcher.submit({"x": i}))) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert out == {i: 2 * i for i in range(20)}
    assert max(eng.batches) <= 8 and sum(eng.batches) == 20
    worker = eng.batcher._worker
    worker.join(10)  # idle past idle_s: the thread returns
    assert not worker.is_alive() and eng.batcher._worker is None
    assert eng.batcher.submit({"x": 21}) == 42  # the next request starts a new thread
    eng.batcher._worker.join(10)
    ref = weakref.ref(eng)
    del eng
    gc.collect()
    assert ref() is None  # nothing left holds the engine
