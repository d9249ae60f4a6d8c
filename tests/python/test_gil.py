"""The GIL is released while the engine runs: another Python thread makes progress meanwhile."""

import threading
import time

from lemma import SamplingParams


def test_another_thread_runs_during_generate(llm):
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        params = SamplingParams(temperature=0, max_tokens=400, ignore_eos=True)
        start = time.monotonic()
        llm.generate(["Once upon a time"] * 8, params)
        end = time.monotonic()
    finally:
        stop.set()
        thread.join()
    duration = end - start
    inside = [t for t in ticks if start <= t <= end]
    assert duration > 0.05, f"generate took {duration:.3f} s: too short to tell"
    assert len(inside) >= 5, f"{len(inside)} ticks in {duration:.3f} s of generate"
    # Held GIL: one gap as long as the whole call. Released: short gaps (even on a busy machine).
    gaps = [b - a for a, b in zip([start] + inside, inside + [end])]
    assert max(gaps) < duration / 2, f"longest gap {max(gaps):.3f} s of {duration:.3f} s"


def test_threads_sharing_one_llm_get_their_own_results(llm):
    prompts = ["Once upon a time", "The little dog", "One day", "Lily and Ben went to the park"]
    params = SamplingParams(temperature=0, max_tokens=64, ignore_eos=True)
    expected = [o.outputs[0].token_ids for o in llm.generate(prompts, params)]
    results = [None] * len(prompts)
    errors = []

    def worker(i):
        try:
            results[i] = llm.generate(prompts[i], params)[0].outputs[0].token_ids
        except Exception as e:  # reported below: an exception in a thread would otherwise vanish
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == expected
