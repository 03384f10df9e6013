"""The one check behind every bad-input test file (tests/test_bad_inputs*.py): a call must be refused.

:func:`assert_refused` runs ``call()`` and asserts that it raises ``ValueError`` (or a subclass; never a
``TypeError``, ``IndexError``, ``MemoryError``...), within ``seconds`` of this process's CPU time (a busy
neighbour on the machine does not count; a timer stops a call that has used ``hang`` CPU seconds, or is still
running after :data:`WALL_SECONDS`: the likely bug is a loop that never ends or a full-size run started by a
bad size), without
raising the process's peak memory by ``memory_mb`` or more (a bad size must be refused before its allocation),
with a message long enough to say what is wrong, and leaving every file under ``folders`` byte-identical
(sha256).
"""

import hashlib
import resource
import signal
import time

import pytest


def files_digest(folder) -> list:
    """``(relative path, sha256)`` of every file under ``folder`` (folders with an empty digest), sorted."""
    return sorted((str(p.relative_to(folder)), hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "")
                  for p in folder.rglob("*"))


class Hung(Exception):
    """A refused call should be quick; this one was still running when the alarm rang."""


def peak_mb() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


#: a refused call still running after this many seconds of wall time is stopped too (a call blocked, not computing)
WALL_SECONDS = 120


def assert_refused(call, folders=(), seconds: float = 1.0, hang: int = 5, memory_mb: float = 1024) -> ValueError:
    """Assert ``call()`` is refused as this module's docstring says; returns the error."""
    before = [files_digest(f) for f in folders]

    def stop(signum, frame):
        raise Hung(f"still running after {hang} s of CPU time or {WALL_SECONDS} s of wall time")

    old = {sig: signal.signal(sig, stop) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, hang)
    signal.alarm(WALL_SECONDS)
    peak0 = peak_mb()
    t0 = time.process_time()
    try:
        with pytest.raises(ValueError) as e:
            call()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.alarm(0)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    took = time.process_time() - t0
    assert took < seconds, f"took {took:.2f} s of CPU time to refuse"
    grew = peak_mb() - peak0
    assert grew < memory_mb, f"the peak memory grew by {grew:,.0f} MiB before the refusal"
    assert len(str(e.value)) > 15, f"message too short to say what is wrong: {e.value!r}"
    for folder, b in zip(folders, before):
        assert files_digest(folder) == b, f"a refused call changed the files under {folder} (half-written?)"
    return e.value
