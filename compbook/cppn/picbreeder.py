"""Picbreeder genomes: load, validate, render as a DAG, and layerize into a :class:`~compbook.cppn.CPPN` (chapter 1).

The genomes (skull, butterfly, apple) are third-party data from FER's public repository; they are never copied into
this project. :func:`load_genome` reads a path you give, or a name: FER's ``picbreeder_genomes/<name>.zip``, found
in a local folder (``$COMPBOOK_PICBREEDER``, ``shared/fer/`` or ``shared/picbreeder/`` beside the checkout) or
downloaded from FER's repository at a pinned commit (or ``$COMPBOOK_PICBREEDER_URL``), checked against its pinned
SHA-256 and cached (:mod:`compbook.cppn.data.fer_files` says where, in which order).
"""

from __future__ import annotations

import io
import math
import os
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import torch
from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from .. import checks
from .data import fer_files
from .network import ACTIVATIONS, CPPN, INPUT_NAMES, outputs_to_rgb

GENOMES = fer_files.GENOMES
ENV_VARIABLE = fer_files.ENV_VARIABLE   # a local folder of FER's files
URL_VARIABLE = fer_files.URL_VARIABLE   # a folder URL laid out as FER's repository
MAX_XML_BYTES = 16 * 2**20  # the largest genome here is 79 kB; anything this big is not a genome
#: Largest |link weight| a genome may hold (our choice: Picbreeder clamps weights to [-3, 3]; a weight of 1e308
#: is finite but its products overflow, so it could only draw NaN).
MAX_WEIGHT = 1e3

_COLOR_LABELS = ("hue", "saturation", "brightness")


class GenomeError(ValueError):
    """A genome file or graph that is not a valid Picbreeder CPPN (the message names the source and the problem)."""


@dataclass(frozen=True)
class Node:
    key: tuple[int, int]          # (branch, id): a node's identity
    kind: str                     # "in", "out" or "hidden"
    label: str | None             # inputs: x, y, d, bias; outputs: ink or hue/saturation/brightness
    activation: str               # a name in compbook.cppn.ACTIVATIONS


@dataclass(frozen=True)
class Link:
    source: tuple[int, int]
    target: tuple[int, int]
    weight: float


@dataclass(frozen=True)
class Genome:
    """A validated Picbreeder genome: nodes, links, and whether it draws in colour (hsv) or grey."""
    name: str
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]

    @property
    def color(self) -> str:
        return "hsv" if any(n.label in _COLOR_LABELS for n in self.outputs) else "gray"

    @property
    def inputs(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "in"]

    @property
    def outputs(self) -> list[Node]:
        """Output nodes in the CPPN's output order: (hue, saturation, brightness) or (ink,)."""
        outs = {n.label: n for n in self.nodes if n.kind == "out"}
        return [outs[l] for l in (_COLOR_LABELS if "hue" in outs else ("ink",))]

    def node(self, key) -> Node:
        return self._by_key[key]

    @cached_property
    def _by_key(self) -> dict:           # computed once (a frozen genome never changes)
        return {n.key: n for n in self.nodes}

    @cached_property
    def _order(self) -> tuple:
        return tuple(_topological_order(self.name, self.nodes, self.links))

    def topological_order(self) -> list[tuple[int, int]]:
        """Node keys in an order where every link goes forward (the graph is checked acyclic at load)."""
        return list(self._order)

    def depths(self) -> dict[tuple[int, int], int]:
        """Longest-path depth of every node from the inputs (inputs are at depth 0)."""
        depth, incoming = {}, _incoming(self.links)
        for k in self.topological_order():
            is_input = self.node(k).kind == "in"
            depth[k] = 0 if is_input else 1 + max((depth[l.source] for l in incoming.get(k, [])), default=0)
        return depth


# -- loading ---------------------------------------------------------------------------------------------------
def find_genome(name: str, download: bool = True) -> Path:
    """The path of a named genome (``"skull"``, ``"butterfly"``, ``"apple"``): FER's
    ``picbreeder_genomes/<name>.zip``, found locally or downloaded and checked by digest
    (:func:`compbook.cppn.data.fer_files.fetch`)."""
    if name not in GENOMES:
        raise GenomeError(f"unknown genome name {name!r}: expected a path or one of {sorted(GENOMES)}")
    return fer_files.fetch(f"picbreeder_genomes/{name}.zip", download)


def reference_render(name: str, download: bool = True) -> np.ndarray:
    """The reference implementation's 256x256 render of a named genome, RGB floats ``(256, 256, 3)`` in [0, 1]
    (FER's ``data/picbreeder_<name>/img.png``, found or downloaded like the genomes)."""
    from ..book.images import load_image
    if name not in GENOMES:
        raise GenomeError(f"unknown genome name {name!r}: expected one of {sorted(GENOMES)}")
    return load_image(fer_files.fetch(f"data/picbreeder_{name}/img.png", download))


def _read_xml_bytes(path: Path) -> bytes:
    checks.file_path(path, "genome file")
    if path.stat().st_size > MAX_XML_BYTES:
        raise GenomeError(f"{path}: {path.stat().st_size} bytes is too large for a genome")
    return _xml_bytes(path.read_bytes(), str(path))


def _xml_bytes(raw: bytes, where: str) -> bytes:
    """The genome XML of a file's bytes: the bytes themselves, or the one member of a zip."""
    if not zipfile.is_zipfile(io.BytesIO(raw)):
        return raw
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            members = [i for i in z.infolist() if not i.is_dir()]
            if len(members) != 1:
                raise GenomeError(f"{where}: expected one genome XML in the zip, found {len(members)} files")
            if members[0].file_size > MAX_XML_BYTES:
                raise GenomeError(f"{where}: zip member {members[0].filename!r} unpacks to "
                                  f"{members[0].file_size} bytes, too large for a genome")
            with z.open(members[0]) as f:
                data = f.read(MAX_XML_BYTES + 1)
    except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError) as e:
        raise GenomeError(f"{where}: corrupt or truncated zip ({e})") from e
    if len(data) > MAX_XML_BYTES:
        raise GenomeError(f"{where}: genome XML is too large")
    return data


def load_genome(source: str | os.PathLike, download: bool = True) -> Genome:
    """Load and validate a Picbreeder genome from a path (zip or XML) or a name (``"skull"`` ...).

    Raises :class:`GenomeError` (a ``ValueError``) naming the source for a corrupt file, a non-genome, a cycle,
    an unknown activation, a link to a missing node, or a weight that is not finite or beyond
    :data:`MAX_WEIGHT`; a path that is a folder raises ``ValueError``, a missing one ``FileNotFoundError``.
    """
    if not isinstance(source, (str, os.PathLike)) or str(source) == "":
        raise GenomeError(f"source must be a genome name {sorted(GENOMES)} or a path, got {source!r}")
    path = Path(source)
    if str(source) not in GENOMES and not path.exists() and path.suffix == "" and len(path.parts) == 1:
        raise GenomeError(f"unknown genome name {str(source)!r}: expected a path or one of {sorted(GENOMES)}")
    if str(source) in GENOMES and not path.exists():
        path = find_genome(str(source), download=download)
    name = str(source) if str(source) in GENOMES else path.stem
    return parse_genome(_read_xml_bytes(path), name=name, where=str(path))


def _key(elem, where: str, what: str) -> tuple[int, int]:
    if elem is None:
        raise GenomeError(f"{where}: {what} has no branch/id marking")
    try:
        return int(elem.get("branch")), int(elem.get("id"))
    except (TypeError, ValueError):
        raise GenomeError(f"{where}: {what} has a malformed marking {dict(elem.attrib)}") from None


def parse_genome(xml: bytes | str, name: str = "genome", where: str = "<xml>") -> Genome:
    """Parse and validate genome XML text (see :func:`load_genome`)."""
    if not isinstance(xml, (str, bytes)):
        raise GenomeError(f"{where}: xml must be str or bytes, got {type(xml).__name__}")
    try:
        root = ElementTree.fromstring(xml)
    except (ElementTree.ParseError, DefusedXmlException, ValueError) as e:
        raise GenomeError(f"{where}: not a well-formed genome XML ({type(e).__name__}: {e})") from e
    genome = root if root.tag == "genome" else root.find("genome")
    if genome is None or genome.find("nodes") is None or genome.find("links") is None:
        raise GenomeError(f"{where}: not a Picbreeder genome (no <genome> with <nodes> and <links>)")
    nodes = []
    for e in genome.find("nodes").findall("node"):
        key = _key(e.find("marking"), where, "a node")
        kind = e.get("type")
        if kind not in ("in", "out", "hidden"):
            raise GenomeError(f"{where}: node {key} has unknown type {kind!r}")
        act_elem = e.find("activation")
        act = (act_elem.text or "").strip() if act_elem is not None else ""
        act = act[:-3] if act.endswith("(x)") else act
        if act not in ACTIVATIONS or act == "cache":
            raise GenomeError(f"{where}: node {key} has unknown activation {act!r}")
        bias = float(e.get("bias", "0") or 0)
        if bias != 0:
            raise GenomeError(f"{where}: node {key} has a node bias {bias}; CPPNs here have no bias terms")
        nodes.append(Node(key, kind, e.get("label"), act))
    keys = [n.key for n in nodes]
    if len(set(keys)) != len(keys):
        raise GenomeError(f"{where}: duplicate node markings")
    by_key = {n.key: n for n in nodes}
    links = []
    for e in genome.find("links").findall("link"):
        src, tgt = _key(e.find("source"), where, "a link source"), _key(e.find("target"), where, "a link target")
        for end, k in (("source", src), ("target", tgt)):
            if k not in by_key:
                raise GenomeError(f"{where}: a link's {end} {k} is not a node of the genome")
        if by_key[tgt].kind == "in":
            raise GenomeError(f"{where}: link {src}->{tgt} points into an input node")
        try:
            w = float(e.find("weight").text)
        except (AttributeError, TypeError, ValueError):
            raise GenomeError(f"{where}: link {src}->{tgt} has no numeric weight") from None
        if not math.isfinite(w):
            raise GenomeError(f"{where}: link {src}->{tgt} has a non-finite weight {w}")
        if abs(w) > MAX_WEIGHT:
            raise GenomeError(f"{where}: link {src}->{tgt} has weight {w:g}, beyond the range "
                              f"[-{MAX_WEIGHT:g}, {MAX_WEIGHT:g}] a genome may hold (Picbreeder's is [-3, 3])")
        links.append(Link(src, tgt, w))
    labels = {n.label for n in nodes if n.kind == "in"}
    if labels != set(INPUT_NAMES) or len([n for n in nodes if n.kind == "in"]) != 4:
        raise GenomeError(f"{where}: inputs must be labelled {INPUT_NAMES} once each, got {sorted(map(str, labels))}")
    outs = sorted(str(n.label) for n in nodes if n.kind == "out")
    if outs not in (["ink"], sorted(_COLOR_LABELS)):
        raise GenomeError(f"{where}: outputs must be 'ink' or hue/saturation/brightness, got {outs}")
    _topological_order(where, nodes, links)  # raises on a cycle
    return Genome(name, tuple(nodes), tuple(links))


def _incoming(links) -> dict:
    inc: dict = {}
    for l in links:
        inc.setdefault(l.target, []).append(l)
    return inc


def _topological_order(where, nodes, links) -> list[tuple[int, int]]:
    indegree = {n.key: 0 for n in nodes}
    outgoing: dict = {}
    for l in links:
        indegree[l.target] += 1
        outgoing.setdefault(l.source, []).append(l.target)
    ready = sorted(k for k, d in indegree.items() if d == 0)
    order = []
    while ready:
        k = ready.pop()
        order.append(k)
        for t in outgoing.get(k, []):
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
    if len(order) != len(nodes):
        stuck = sorted(k for k, d in indegree.items() if d > 0)
        raise GenomeError(f"{where}: the graph has a cycle (through nodes {stuck[:5]})")
    return order


# -- rendering -------------------------------------------------------------------------------------------------
_NP_ACTIVATIONS = {
    "identity": lambda z: z,
    "gaussian": lambda z: 2.0 * np.exp(-z * z) - 1.0,
    "sigmoid": lambda z: 2.0 / (1.0 + np.exp(-z)) - 1.0,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "relu": lambda z: np.maximum(z, 0.0),
}


def render(genome: Genome, res: int = 256, budget_mb: float | None = None) -> np.ndarray:
    """Render by direct DAG evaluation in float64: an image ``(res, res, 3)`` in [0, 1].

    Every node's value is kept (``(res, res)`` float64 each): a render whose buffers would exceed ``budget_mb``
    MiB (default :func:`compbook.checks.render_budget_mb`) is refused with ``ValueError`` before allocating.
    """
    if not isinstance(genome, Genome):
        raise ValueError(f"genome must be a Genome (load_genome(...)), got {type(genome).__name__}")
    # every node's value, and the coordinates, a node's weighted sum and activation temporaries, the outputs and
    # colours (24, measured in tests/test_memory_guards.py)
    res = checks.check_render_size(res, len(genome.nodes) + 24, 8, f"picbreeder.render of {genome.name!r}",
                                   budget_mb)
    t = np.linspace(-1.0, 1.0, res)
    y, x = np.meshgrid(t, t, indexing="ij")
    inputs = {"x": x, "y": y, "d": 1.4 * np.sqrt(x * x + y * y), "bias": np.ones_like(x)}
    incoming, value = _incoming(genome.links), {}
    with np.errstate(over="ignore", invalid="ignore"):   # an overflow is reported below, once, by name
        for k in genome.topological_order():
            n = genome.node(k)
            if n.kind == "in":
                value[k] = inputs[n.label]
                continue
            z = sum((l.weight * value[l.source] for l in incoming.get(k, [])), np.zeros_like(x))
            value[k] = _NP_ACTIVATIONS[n.activation](z)
    out = torch.from_numpy(np.stack([value[n.key] for n in genome.outputs], -1))
    if not bool(torch.isfinite(out).all()):
        raise GenomeError(f"{genome.name}: the render overflows to NaN or inf (largest |weight| "
                          f"{max(abs(l.weight) for l in genome.links):g}): the weights are too large to draw")
    return outputs_to_rgb(out, genome.color).numpy()


# -- layerizing ------------------------------------------------------------------------------------------------
def layerize(genome: Genome, pad_to_width: bool = True, dtype: torch.dtype = torch.float32) -> CPPN:
    """The genome as a layered :class:`CPPN` whose render equals :func:`render` (up to float32 rounding).

    Every non-input node (outputs too: in Picbreeder an output may feed other nodes) sits in the hidden layer of
    its longest-path depth, with its own activation; a link that skips layers travels through identity ("cache")
    copy neurons, one chain per source node; the final linear layer picks the output nodes with weight 1. Every
    other weight is an exact zero, held by the masks. With ``pad_to_width`` every hidden layer gets the widest
    layer's width (padding neurons have no connections), so SGD networks of the same shape can be compared.
    """
    if not isinstance(genome, Genome):
        raise ValueError(f"genome must be a Genome (load_genome(...)), got {type(genome).__name__}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating torch dtype (torch.float32, torch.float64), got {dtype!r}")
    depth = genome.depths()
    n_layers = max(depth.values())
    inputs = sorted(genome.inputs, key=lambda n: INPUT_NAMES.index(n.label))
    computed = sorted((n for n in genome.nodes if n.kind != "in"), key=lambda n: (n.kind != "out", n.key))
    # slots[l][i]: what neuron i of layer l is, (kind, node key) with kind node/copy/pad; layer 0 = the inputs
    slots = [[("node", n.key) for n in inputs]]
    slots += [[("node", n.key) for n in computed if depth[n.key] == l] for l in range(1, n_layers + 1)]
    last_use = {o.key: n_layers for o in genome.outputs}  # the output layer reads layer n_layers
    for link in genome.links:
        last_use[link.source] = max(last_use.get(link.source, 0), depth[link.target] - 1)
    for l in range(1, n_layers + 1):
        slots[l] += [("copy", key) for key, last in sorted(last_use.items()) if depth[key] < l <= last]
    if pad_to_width:
        width = max(len(s) for s in slots[1:])
        for s in slots[1:]:
            s += [("pad", None)] * (width - len(s))
    holds = [{key: i for i, (kind, key) in enumerate(s) if kind != "pad"} for s in slots]
    incoming = _incoming(genome.links)
    weights = []
    for l, layer in enumerate(slots[1:] + [[("copy", o.key) for o in genome.outputs]]):
        w = torch.zeros(len(layer), len(slots[l]), dtype=torch.float64)
        for i, (kind, key) in enumerate(layer):
            if kind == "copy":
                w[i, holds[l][key]] = 1.0
            elif kind == "node":
                for link in incoming.get(key, []):
                    w[i, holds[l][link.source]] += link.weight
        if not bool(torch.isfinite(w.to(dtype)).all()):
            raise GenomeError(f"{genome.name}: layer {l}'s weights (sums of link weights up to "
                              f"{float(w.abs().max()):g}) overflow {dtype}")
        weights.append(w.to(dtype))
    acts = [[genome.node(key).activation if kind == "node" else "cache" if kind == "copy" else "identity"
             for kind, key in s] for s in slots[1:]]
    return CPPN(acts, color=genome.color, weights=weights, masks=[(w != 0).to(dtype) for w in weights])


def copy_weight_masks(model: CPPN) -> list[torch.Tensor]:
    """The layerization copy weights of a :func:`layerize`\\ d network: bool masks ``(out, in)``, one per layer.

    From :func:`layerize`'s structure, not from values: a copy neuron is the only kind ``layerize`` names
    ``"cache"`` (a genome cannot hold a cache node: :func:`parse_genome` refuses it), so a hidden row whose
    activation is ``"cache"`` holds one copy weight; the output layer's rows only pick output nodes (copies too).
    Only meaningful for a layerized genome (a dense SGD network's "cache" neurons are trained, not copies);
    :func:`genome_link_weights` checks the result against the genome."""
    checks.instance(model, "model", CPPN, " (layerize a genome first)")
    out = []
    for l, w in enumerate(model.effective_weights()):
        nz = w.detach() != 0
        if l < model.depth:
            rows = torch.tensor([a == "cache" for a in model.activations[l]])
            out.append(nz & rows[:, None])
        else:
            out.append(nz.clone())
    return out


def genome_link_weights(genome: Genome, model: CPPN) -> list[torch.Tensor]:
    """Bool masks of the weights of ``layerize(genome)`` that hold genome links (the non-zero, non-copy ones),
    checked against the genome: every copy weight is exactly 1, and there is one link weight per distinct
    (source, target) pair of the genome whose summed weight is non-zero. ``ValueError`` when they differ."""
    checks.instance(genome, "genome", Genome)
    copies = copy_weight_masks(model)
    links = [(w.detach() != 0) & ~c for w, c in zip(model.effective_weights(), copies)]
    values = torch.cat([w.detach()[c] for w, c in zip(model.effective_weights(), copies)])
    if not bool((values == 1).all()):
        raise ValueError(f"{genome.name}: copy weights are not all 1: the model is not layerize(genome)")
    sums: dict = {}
    for l in genome.links:
        sums[(l.source, l.target)] = sums.get((l.source, l.target), 0.0) + l.weight
    expected = sum(1 for v in sums.values() if v != 0)
    found = int(sum(int(m.sum()) for m in links))
    if found != expected:
        raise ValueError(f"{genome.name}: {found} non-copy weights, but the genome has {expected} non-zero "
                         f"links: the model is not layerize(genome)")
    return links
