"""The hot loops' time in this checkout against another (e.g. the commit before a refactor): one training step of
each part and one EMC2 batch, the same code run from two checkouts in turns.

Workloads (CPU mode's sizes; each names only functions that kept their module through the layers' moves):

* ``A step``: one ``train.fit`` step of a 12 x 22 CPPN on the apple at 32 px (chapters 1 and 5-9's trainer);
* ``EMC2 batch``: the compositional score of the layerized Picbreeder apple at 32 px, every non-zero weight
  nudged once, split in batches of 16, with a judge that answers at once (the engine's and the door's own cost);
  the time is per batch;
* ``EMC2 batch (cache)``: the same score answered from a judge cache holding every verdict (the book's path in
  full mode, the stored VLM verdicts): the cache's own cost per batch;
* ``B step``: one step of ``train_controlled`` on 4 of chapter 13's controlled models at once;
* ``C step``: one ``train_sae`` step of a TopK SAE (d_sae 512, k 16, 32 images of 81 tokens of width 64) and one
  of an S2AE (the same with exclusive and group penalties over 8 regions).

Each workload runs in a fresh interpreter per checkout (``PYTHONPATH`` set to it), one torch thread, the two
checkouts alternating ``--repeats`` times, the fastest kept; the number that matters is the ratio in one run.

Measured on the project's 2-core CPU machine on 6 December 2026 (shared with other work), this checkout against
the commit before each part's folder got its layers (a280fb3), ``python benchmarks/bench_step_times.py --old
<a checkout of a280fb3>`` (milliseconds per step or batch; load average 7 to 9 from other jobs)::

    workload            old ms   this ms  this/old
    A step                2.69      2.37      0.88
    EMC2 batch            9.38     11.05      1.18
    B step               24.04     23.75      0.99
    C step (TopK)        45.20     35.64      0.79
    C step (S2AE)        44.82     38.78      0.87

The EMC2 engine's code did not change between the two (only an import's path), so its 1.18 was the machine: a
second run, ``--repeats 5 --only "EMC2 batch" "A step"``, gave 9.83 against 9.69 ms (0.99) and 2.33 against
2.38 ms (1.02). The SAE steps dropped by 13-21%: their finiteness and shape checks left the step for the door.

The Part B step and the judge cache's stream then checked their input once at the door as well (the step calls
``_contrastive_loss``; the cache checks its questions once and each batch's shape, not its pixels). Against the
commit before that (b556083), ``--repeats 5``, load average 9 to 10 from other jobs::

    workload                old ms   this ms  this/old
    A step                    2.34      2.52      1.08
    EMC2 batch                9.38     10.25      1.09
    EMC2 batch (cache)       10.78     11.28      1.05
    B step                   24.29     23.23      0.96
    C step (TopK)            35.79     33.37      0.93
    C step (S2AE)            38.39     41.35      1.08

Unchanged code moved by up to 9% here (A step, EMC2 batch): the machine. The checks that left these loops were
small: timed alone, 0.03 ms of a 23 ms B step, and 0.25 ms of an 11 ms cached EMC2 batch of 16 (the pixels' and
the questions' checks), so neither step got measurably faster; neither got slower.

    python benchmarks/bench_step_times.py --old PATH [--repeats 3]
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SETUP = """
import json, time, torch
from dataclasses import replace
from pathlib import Path
torch.set_num_threads(1)
def per_call(fn, n):
    fn(max(1, n // 5))
    t0 = time.perf_counter(); fn(n); return (time.perf_counter() - t0) / n * 1000
"""
WORKLOADS = {
    "A step": """
from compbook.cppn import picbreeder, train
from compbook.cppn.network import uniform_cppn
target = picbreeder.render(picbreeder.load_genome("apple"), 32)
model = uniform_cppn(12, 22, seed=0)
ms = per_call(lambda n: train.fit(model, target, steps=n, progress=False), 100)
""",
    "EMC2 batch": """
from compbook.cppn import emc2, picbreeder
model = picbreeder.layerize(picbreeder.load_genome("apple"))
judge = lambda images, concept, reference=None, questions=None: torch.ones(len(images), dtype=torch.bool)
n_weights = len(emc2.nonzero_weights(model))
batches = -(-n_weights // 16)
ms = per_call(lambda n: [emc2.compositional_score(model, judge, "apple", res=32, batch_size=16,
                                                  progress=False) for _ in range(n)], 5) / batches
""",
    "EMC2 batch (cache)": """
import tempfile
from compbook.cppn import emc2, picbreeder
from compbook.cppn.judges import CachedJudge
class Instant:
    identity = "instant"
    def __call__(self, images, concept, reference=None, questions=None):
        return torch.ones(len(images), dtype=torch.bool)
model = picbreeder.layerize(picbreeder.load_genome("apple"))
path = Path(tempfile.mkdtemp()) / "instant.json"
emc2.compositional_score(model, CachedJudge(path, Instant(), mode="fill"), "apple", res=32, batch_size=16,
                         progress=False)
stored = CachedJudge(path, identity="instant")
batches = -(-len(emc2.nonzero_weights(model)) // 16)
ms = per_call(lambda n: [emc2.compositional_score(model, stored, "apple", res=32, batch_size=16,
                                                  progress=False) for _ in range(n)], 5) / batches
""",
    "B step": """
from compbook.binding.controlled import ControlledConfig, train_controlled
from compbook.binding.splits import coverage_split
cfg = replace(ControlledConfig(n_values=5), eval_every=10 ** 9)
splits = [coverage_split(125, 0.2 + 0.2 * i, seed=i) for i in range(4)]
ms = per_call(lambda n: train_controlled(replace(cfg, steps=n), splits, list(range(4)), progress=False), 40)
""",
    "C step (TopK)": """
from compbook.sae.s2ae import SAEData, SAETrainConfig, train_sae
g = torch.Generator().manual_seed(0)
data = SAEData(torch.randn(256, 81, 64, generator=g), torch.ones(256, 81, dtype=torch.bool),
               torch.arange(1, 65), (8, 8), torch.softmax(torch.randn(256, 64, 64, generator=g), -1))
cfg = SAETrainConfig(d_sae=512, k=16, batch_images=32)
ms = per_call(lambda n: train_sae(data, replace(cfg, steps=n), progress=False), 60)
""",
}
WORKLOADS["C step (S2AE)"] = WORKLOADS["C step (TopK)"].replace(
    "batch_images=32)", "batch_images=32, lam=0.1, n_regions=8)")


def time_in(checkout: Path, name: str) -> float:
    """Milliseconds per step (or batch) of workload ``name`` run with ``checkout``'s compbook."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "COMPBOOK_THREADS": "1", "TQDM_DISABLE": "1"}
    code = SETUP + WORKLOADS[name] + "\nprint(json.dumps(ms))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=checkout)
    if out.returncode:
        raise RuntimeError(f"{name} in {checkout}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="a checkout to compare against")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    args = ap.parse_args(argv)
    if not (args.old / "compbook" / "__init__.py").is_file():
        raise ValueError(f"--old {args.old}: not a compbook checkout (no compbook/__init__.py)")
    best = {}
    for _ in range(args.repeats):
        for name in args.only:
            for label, where in (("old", args.old), ("this", ROOT)):
                ms = time_in(where, name)
                best[name, label] = min(best.get((name, label), ms), ms)
    print(f"{'workload':20} {'old ms':>9} {'this ms':>9} {'this/old':>9}")
    for name in args.only:
        a, b = best[name, "old"], best[name, "this"]
        print(f"{name:20} {a:9.2f} {b:9.2f} {b / a:9.2f}")


if __name__ == "__main__":
    main()
