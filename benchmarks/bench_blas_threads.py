"""BLAS's threads for the chapters that fit scikit-learn models: chapters 11 and 12 (logistic probes, MDS, on
NumPy's and SciPy's OpenBLAS), executed whole, with BLAS at one thread (what importing compbook sets,
:func:`compbook.config.set_threads`) against BLAS's own default (one thread per CPU, kept by setting
``OPENBLAS_NUM_THREADS`` to the CPU count, which compbook leaves alone), beside one busy core.

Each chapter is run in CPU mode with ``jupyter execute`` on a scratch copy, the two settings in turns (``--repeats``
rounds, fastest kept), while ``python -c 'while True: pass'`` (started here, stopped after) takes one core.
The numbers that matter are the ratios in one run.

Measured on the project's 2-core CPU machine on 6 December 2026, beside the busy core and the machine's other
work (load average 7 to 9: other jobs were executing notebooks too), ``python benchmarks/bench_blas_threads.py
--repeats 2`` (seconds, whole chapter, kernel start included; the fastest of two)::

    chapter                 blas 1 (compbook)   blas default  default/1
    11_scenes_are_sums                   11.6           17.4       1.50
    12_binding_function                  25.6           35.3       1.38

An earlier run of the same comparison beside the busy core alone (all three thread variables set to one against
none set): chapter 11 11.4 s against 15.9 s, chapter 12 22.4 s against 28.5 s.

    python benchmarks/bench_blas_threads.py [--repeats 1] [--chapters 11_scenes_are_sums 12_binding_function]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ("11_scenes_are_sums", "12_binding_function")
SETTINGS = {"blas 1 (compbook)": {}, "blas default": {"OPENBLAS_NUM_THREADS": str(os.cpu_count())}}


def run_chapter(stem: str, extra: dict, scratch: Path) -> float:
    """Seconds to execute chapter ``stem`` once, headless in CPU mode, with ``extra`` in the environment."""
    nb = scratch / f"{stem}.ipynb"
    shutil.copy(ROOT / "chapters" / f"{stem}.ipynb", nb)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and k != "COMPBOOK_THREADS"}
    env |= {"PYTHONPATH": str(ROOT), "COMPBOOK_MODE": "cpu", "COMPBOOK_WIDGETS": "static", "TQDM_DISABLE": "1"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "jupyter", "execute", "--inplace", "--timeout=600", str(nb)],
                   env=env | extra, check=True, capture_output=True, cwd=scratch)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--chapters", nargs="+", default=list(CHAPTERS))
    args = ap.parse_args(argv)
    best = {}
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for _ in range(args.repeats):
                for stem in args.chapters:
                    for name, extra in SETTINGS.items():
                        s = run_chapter(stem, extra, Path(scratch))
                        best[stem, name] = min(best.get((stem, name), s), s)
    finally:
        busy.kill()
    one, default = SETTINGS
    print(f"{'chapter':22} {one:>18} {default:>14} {'default/1':>10}")
    for stem in args.chapters:
        a, b = best[stem, one], best[stem, default]
        print(f"{stem:22} {a:18.1f} {b:14.1f} {b / a:10.2f}")


if __name__ == "__main__":
    main()
