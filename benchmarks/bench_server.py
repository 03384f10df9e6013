"""Images per second of the server judge against the in-process VLM judge, in one run (chapter 5, at scale).

    python benchmarks/bench_server.py [--images 32] [--max-tokens 8] [--delay 0.2] [--fake-images 48]
                                      [--scoring-images 64] [--scoring-delay 0.5] [--scoring-only]

Four measurements, side by side:

1. ``VLMJudge`` in process on the tiny random Qwen3-VL of ``tests/tiny_vlm.py`` (batched ``generate``, batch 8);
2. ``ServerJudge`` at concurrency 1, 4 and 16 against ``transformers serve`` serving the same model saved to a
   temporary folder (plain, and with ``--continuous-batching``), on localhost;
3. ``ServerJudge`` at concurrency 1, 4 and 16 against a fake server that answers every request after a fixed
   ``--delay`` seconds, whatever the load (what a GPU server with spare batch capacity looks like from the client);
4. EMC2 scoring (``compositional_score``, ``--scoring-images`` noise-like renders of 64 px sent at 256 px, batches
   of 16, concurrency 8) through ``ServerJudge`` against the fake server, each answer taking ``--scoring-delay``
   seconds or, like a thinking model's, from 0.5 to 3 times that: before (every PNG of a batch encoded up front, then
   the batch's requests, a barrier at each batch's end), with the PNGs encoded in the request workers but the barrier
   kept, and after (``stream_batches``: encoding in the workers, no barrier). ``x before`` is the speed-up.

Every run judges the same ``--images`` random 64x64 images ("skull"), after one warm-up request; torch runs on one
thread in the benchmark and in the server (OMP_NUM_THREADS=1), so neither side gets more cores. The tiny model's
answers mean nothing (random weights, ``--max-tokens`` tokens each); only the throughput is compared.

What the ratios mean: the tiny model costs almost nothing per answer, so on this CPU the server's own cost per
request (HTTP, the chat template, decoding the PNG, the processor) dominates, and the served model competes with
the client for two cores: serving is slower than in-process batching there, and concurrency buys little. The fake
server shows what the client does when the server has capacity to spare: images per
second grow with concurrency until the server, not the client, is the limit. On a GPU server (vLLM or SGLang,
continuous batching) one request leaves the GPU mostly idle and concurrent requests are batched together, so
images per second grow nearly with concurrency up to the server's batch capacity (tens to hundreds of requests),
and data parallelism multiplies it by the number of GPUs; the client's cost per image (a PNG of 256x256 and an
HTTP request, about a millisecond) is negligible next to a thinking model's answer. In EMC2 scoring the renders
of a CPPN can be noise-like (tens of milliseconds of PNG encoding each), and with a barrier every batch waits for
its slowest answer: streaming keeps ``concurrency`` requests in flight from the first render to the last, so
scoring takes about ``N / concurrency`` answer times.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from compbook.cppn import emc2  # noqa: E402
from compbook.cppn.judges import ServerJudge, VLMJudge  # noqa: E402
from compbook.cppn.judges.vlm import read_answer  # noqa: E402
from compbook.cppn.network import CPPN  # noqa: E402
from servers import FaultServer, TransformersServe, completion  # noqa: E402
from tiny_vlm import save_servable, tiny_qwen3_vl  # noqa: E402

CONCURRENCY = (1, 4, 16)


def rate(judge, images) -> float:
    """Images per second of one ``judge(images, "skull")`` call."""
    t0 = time.perf_counter()
    judge(images, "skull")
    return len(images) / (time.perf_counter() - t0)


def served_rates(url: str, model: str, images, max_tokens: int) -> dict:
    out = {}
    for c in CONCURRENCY:
        judge = ServerJudge(url, model, concurrency=c, max_tokens=max_tokens, image_size=64, timeout=600)
        judge(images[:1], "skull")                              # warm-up
        out[c] = rate(judge, images)
    return out


class UpFront:
    """The server judge as EMC2 scoring used it before streaming: every PNG of a batch encoded before the first
    request leaves, one call (a barrier) per batch."""

    def __init__(self, judge):
        self.judge, self.identity = judge, judge.identity

    def __call__(self, images, concept, *, reference=None, questions=None):
        payloads = [self.judge.payload(img, concept) for img in images]
        verdicts = [False] * len(images)
        for i, reply in self.judge.client.map(payloads):
            verdicts[i] = bool(read_answer(reply.text, self.judge.parse)[0])
        return torch.tensor(verdicts)


class PerBatch(UpFront):
    """The server judge called once per batch (PNGs encoded in the request workers, the barrier kept)."""

    def __call__(self, images, concept, *, reference=None, questions=None):
        return self.judge(images, concept, reference=reference, questions=questions)


def thinking_answers(delay: float):
    """A fake server's answer after ``delay`` x 0.5 to 3 seconds, drawn from the request (answers of uneven length)."""
    def answer(body: bytes) -> bytes:
        time.sleep(delay * (0.5 + 2.5 * (hashlib.sha256(body).digest()[0] / 255)))
        return completion("yes")
    return answer


def scoring_rows(images: int, delay: float) -> list:
    """Seconds of ``compositional_score`` before / per batch / streamed, for a fixed and a variable answer time."""
    model = CPPN([["tanh", "sin", "gaussian", "sin", "sigmoid", "sin"]] * 4, seed=0, init_scale=6.0)  # noise-like
    kwargs = dict(res=64, sample=images, batch_size=16, progress=False)
    rows = []
    for name, answer, wait in ((f"{delay:g} s an answer", completion("yes"), delay),
                               (f"{delay * 0.5:g}-{delay * 3:g} s an answer", thinking_answers(delay), 0)):
        with FaultServer(default=answer, delay=wait) as fake:
            judge = ServerJudge(fake.url, "fake", concurrency=8, timeout=600)
            emc2.compositional_score(model, judge, "skull", **{**kwargs, "sample": 8})      # warm-up
            times = {how: emc2.compositional_score(model, wrap(judge), "skull", **kwargs).seconds
                     for how, wrap in (("before: PNGs up front, barrier", UpFront),
                                       ("PNGs in workers, barrier", PerBatch), ("after: streamed", lambda j: j))}
        rows += [(name, how, t, times["before: PNGs up front, barrier"] / t) for how, t in times.items()]
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--images", type=int, default=32, help="images per measurement (tiny model)")
    p.add_argument("--max-tokens", type=int, default=8, help="tokens generated per answer")
    p.add_argument("--delay", type=float, default=0.2, help="the fake server's seconds per request")
    p.add_argument("--fake-images", type=int, default=48, help="images per measurement (fake server)")
    p.add_argument("--scoring-images", type=int, default=64, help="perturbations scored (EMC2 scoring)")
    p.add_argument("--scoring-delay", type=float, default=0.5, help="the fake server's seconds per answer (scoring)")
    p.add_argument("--scoring-only", action="store_true", help="measure only the EMC2 scoring (4.)")
    args = p.parse_args()
    torch.set_num_threads(1)
    scoring = scoring_rows(args.scoring_images, args.scoring_delay)
    if not args.scoring_only:
        compare_judges(args)
    print(f"\nEMC2 scoring: {args.scoring_images} noise-like renders (64 px, sent at 256 px), batches of 16, "
          f"concurrency 8, fake server")
    print(f"{'answer time':22s} {'scoring':34s} {'seconds':>8s} {'x before':>9s}")
    for name, how, t, ratio in scoring:
        print(f"{name:22s} {how:34s} {t:8.2f} {ratio:9.2f}")


def compare_judges(args) -> None:
    """Measurements 1 to 3: images per second of each judge."""
    images = torch.rand(args.images, 64, 64, 3, generator=torch.Generator().manual_seed(0))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model, processor = tiny_qwen3_vl()
        local = VLMJudge.from_model(model, processor, model_id="tiny", batch_size=8,
                                    max_new_tokens=args.max_tokens, image_size=64)
        local(images[:1], "skull")
        base = rate(local, images)
        rows.append(("VLMJudge in process (batch 8)", "-", base))
        folder = save_servable(model, processor, Path(tmp) / "tiny-qwen3-vl")
        for name, extra in (("transformers serve", []), ("transformers serve --continuous-batching",
                                                          ["--continuous-batching"])):
            server = TransformersServe(folder, log=Path(tmp) / "serve.log", extra=extra).start()
            try:
                for c, r in served_rates(server.url, server.model, images, args.max_tokens).items():
                    rows.append((f"ServerJudge -> {name}", c, r))
            finally:
                server.kill()
    fake_images = torch.rand(args.fake_images, 16, 16, 3, generator=torch.Generator().manual_seed(1))
    with FaultServer(default=completion("yes"), delay=args.delay) as fake:
        fake_rates = served_rates(fake.url, "fake", fake_images, args.max_tokens)
    rows += [(f"ServerJudge -> fake server ({args.delay:g} s a request)", c, r) for c, r in fake_rates.items()]
    print(f"{time.strftime('%Y-%m-%d')}, {args.images} images (tiny model, {args.max_tokens} tokens each), "
          f"{args.fake_images} (fake server)")
    print(f"{'judge':58s} {'conc.':>5s} {'images/s':>9s} {'x in-process':>12s} {'x conc. 1':>9s}")
    first = {}
    for name, c, r in rows:
        first.setdefault(name, r)
        vs_base = f"{r / base:12.2f}" if "fake" not in name else f"{'':12s}"
        print(f"{name:58s} {str(c):>5s} {r:9.2f} {vs_base} {r / first[name]:9.2f}")


if __name__ == "__main__":
    main()
