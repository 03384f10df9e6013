"""What a call really allocates, measured on the CPU: the tool of tests/test_memory_guards.py.

Two allocators hold a call's buffers, and each is measured by the one tool that sees it:

- torch's CPU allocator: :func:`torch.profiler.profile` with ``profile_memory=True`` records every allocation and
  free of a tensor's storage (size and time); the running sum of those events from the call's start, at its
  highest, is the torch peak. (``tracemalloc`` never sees these, nor RSS reliably at a few MiB: the C library
  returns and reuses pages as it likes.)
- Python's and NumPy's: :mod:`tracemalloc` traces every Python object and every NumPy array's data (NumPy
  reports its buffers to it); its peak above the call's start is the Python peak.

A call's peak is the sum of the two peaks: at least its true peak (both may not happen at once), so an estimate
at least this number is an upper bound. The call runs once before it is measured, so that lazy imports and
caches filled on first use are not counted as its buffers. :func:`test_the_probe_sees_known_allocations`
checks the probe on allocations of known size before any guard is judged by it (no false pass from a blind
probe).
"""

from __future__ import annotations

import gc
import tracemalloc

from torch.profiler import ProfilerActivity, profile


def _torch_peak(prof) -> int:
    """The highest running sum of the CPU allocation events (bytes, + allocate, - free) of a profile."""
    events = []

    def walk(nodes):
        for node in nodes:
            extra = node.extra_fields
            if type(extra).__name__ == "_ExtraFields_Allocation" and extra.device.type == "cpu":
                events.append((node.start_time_ns, extra.alloc_size))
            walk(node.children)

    walk(prof.profiler.kineto_results.experimental_event_tree())
    live = peak = 0
    for _, size in sorted(events, key=lambda e: e[0]):
        live += size
        peak = max(peak, live)
    return peak


def measure(fn, warm: bool = True, record: list | None = None) -> dict:
    """Run ``fn()`` (after one warm-up call when ``warm``) and return ``{"torch": bytes, "python": bytes,
    "peak": their sum, "out": fn's return}``: the peaks of the bytes it allocated above what was live at its
    start. ``record`` (a list) is emptied after the warm-up, so that it holds what the measured call put in it."""
    if warm:
        fn()
    if record is not None:
        record.clear()
    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        try:
            out = fn()
            python = tracemalloc.get_traced_memory()[1] - start
        finally:
            tracemalloc.stop()
    torch_bytes = _torch_peak(prof)
    return {"torch": torch_bytes, "python": python, "peak": torch_bytes + python, "out": out}
