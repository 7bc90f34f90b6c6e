import multiprocessing


def _add(lock, shared, chunk):
    with lock:
        shared.value += sum(chunk)


def total_in_workers(values, workers=2):
    """Sums values in worker processes that share one counter behind a lock."""
    ctx = multiprocessing.get_context("fork")
    lock = ctx.Lock()
    shared = ctx.Value("d", 0.0, lock=False)
    chunks = [values[i::workers] for i in range(workers)]
    procs = [ctx.Process(target=_add, args=(lock, shared, c)) for c in chunks]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return shared.value
