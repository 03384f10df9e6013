"""CPPNs: coordinate MLPs that draw an image, neuron by neuron (chapter 1).

A CPPN maps each pixel's coordinates (x, y, d, bias) through hidden layers *without bias terms*, each neuron with
its own activation, to (h, s, v) (or a grey brightness) shown through HSV->RGB, as in Picbreeder and in FER's code.
Layer ``l`` holds a weight matrix ``W_l (out, in)`` and a connectivity mask of the same shape (a buffer): the
network computes with ``W_l * mask_l``, so a masked weight is exactly zero and gets exactly zero gradient.

Every function here accepts weights with leading batch dimensions ``(..., out, in)``: the same code renders one
network or trains many of one shape at once (:mod:`compbook.cppn.train`).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Mapping, Sequence

import torch
from torch import nn

from .. import checks

INPUT_NAMES = ("x", "y", "d", "bias")
COLOR_MODES = {"hsv": 3, "gray": 1}


def _gaussian(z):
    return 2.0 * torch.exp(-z * z) - 1.0


def _sigmoid(z):
    return 2.0 * torch.sigmoid(z) - 1.0


#: Picbreeder's activations (FER's definitions): gaussian and sigmoid are rescaled to (-1, 1].
#: "cache" is an identity neuron that only carries a value forward (layerized skip links).
ACTIVATIONS = {
    "identity": lambda z: z,
    "cache": lambda z: z,
    "gaussian": _gaussian,
    "sigmoid": _sigmoid,
    "sin": torch.sin,
    "cos": torch.cos,
    "tanh": torch.tanh,
    "relu": torch.relu,
}


#: Most hidden layers a CPPN may have (our choice: the deepest network in the book, Picbreeder's apple layerized,
#: has 33; each layer costs Python objects, a few KiB and a quarter of a millisecond to build, that no memory
#: estimate of its weights counts, so a depth of a million would take minutes before any budget refused it).
MAX_DEPTH = 1024


def check_activation(name: str, where: str = "activation") -> str:
    """Return ``name`` if it is a known activation, else raise ``ValueError`` naming ``where``."""
    if not isinstance(name, str) or name not in ACTIVATIONS:
        raise ValueError(f"{where}: unknown activation {name!r}; known: {sorted(ACTIVATIONS)}")
    return name


def layout_from_counts(counts: Mapping[str, int]) -> list[str]:
    """One layer's activation layout from counts, e.g. ``{"cache": 15, "gaussian": 4, "sin": 1}`` (FER's arch)."""
    if not isinstance(counts, Mapping):
        raise ValueError(f"counts must be a mapping name -> count, got {counts!r}")
    layer, sizes = [], {}
    for name, n in counts.items():
        check_activation(name, "layout_from_counts")
        n = checks.integer(n, f"layout_from_counts: count of {name!r}", None)
        if n < 0:
            raise ValueError(f"layout_from_counts: negative count {n} for {name!r}")
        sizes[name] = n
    # the list (8 bytes a slot, grown by up to 1/8) and the largest [name] * n it is extended by
    checks.check_budget(9.0 * sum(sizes.values()) + 8.0 * max(sizes.values(), default=0),
                        f"layout_from_counts({sizes!r:.80}): a layer of {sum(sizes.values()):,} neurons")
    for name, n in sizes.items():
        layer += [name] * n
    return layer


def check_size(widths: Sequence[int], n_out: int, what: str) -> None:
    """Refuse, before anything is allocated, a network whose weights, masks and their copies (about 16 bytes
    per weight) and activation lists would exceed the memory budget (:func:`compbook.checks.check_budget`)."""
    n = sum(o * i for o, i in zip(list(widths) + [n_out], [len(INPUT_NAMES)] + list(widths)))
    checks.check_budget(16.0 * n + 8.0 * sum(widths), f"{what}: {n:,} weights")


def coordinate_grid(res: int, dtype=torch.float32, device=None) -> torch.Tensor:
    """The CPPN's inputs on a ``res x res`` grid: a tensor ``(res*res, 4)`` of (x, y, d, bias), row-major.

    x and y are ``linspace(-1, 1, res)``; x varies along columns, y along rows; d = 1.4 * sqrt(x^2 + y^2); bias = 1.
    """
    res = checks.check_render_size(res, 12, 4, "coordinate_grid")
    t = torch.linspace(-1.0, 1.0, res, dtype=dtype, device=device)
    y, x = torch.meshgrid(t, t, indexing="ij")
    d = 1.4 * torch.sqrt(x * x + y * y)
    return torch.stack([x, y, d, torch.ones_like(x)], dim=-1).reshape(res * res, 4)


def hsv_to_rgb(hsv: torch.Tensor) -> torch.Tensor:
    """HSV in [0, 1] to RGB in [0, 1]; ``hsv`` is a real floating tensor ``(..., 3)`` of finite values (another
    last size, NaN or inf: ``ValueError`` naming ``hsv``, never NaN out).

    The closed form of the hexcone model: channel n in (r, g, b) is v - v s clamp(min(k, 4 - k), 0, 1) with
    k = (n' + 6 h) mod 6 and n' = 5, 3, 1.
    """
    if not isinstance(hsv, torch.Tensor) or hsv.is_complex() or not hsv.is_floating_point():
        raise ValueError(f"hsv must be a real floating-point tensor (..., 3), got "
                         f"{hsv.dtype if isinstance(hsv, torch.Tensor) else type(hsv).__name__}")
    if hsv.ndim == 0 or hsv.shape[-1] != 3:
        raise ValueError(f"hsv must have shape (..., 3) (hue, saturation, value), got {tuple(hsv.shape)}")
    return _hsv_to_rgb(checks.finite(hsv, "hsv"))


def _hsv_to_rgb(hsv: torch.Tensor) -> torch.Tensor:
    """:func:`hsv_to_rgb` unchecked: the renderer's path (its outputs are checked where they are made)."""
    h, s, v = hsv[..., :1], hsv[..., 1:2], hsv[..., 2:3]
    k = torch.remainder(torch.tensor([5.0, 3.0, 1.0], dtype=hsv.dtype, device=hsv.device) + 6.0 * h, 6.0)
    return v - v * s * torch.minimum(k, 4.0 - k).clamp(0.0, 1.0)


def _clip(t: torch.Tensor, straight_through: bool) -> torch.Tensor:
    """clamp(t, 0, 1); with ``straight_through`` its gradient is 1 everywhere (the value is unchanged)."""
    c = t.clamp(0.0, 1.0)
    return t + (c - t).detach() if straight_through else c


def outputs_to_rgb(out: torch.Tensor, color: str, straight_through: bool = False) -> torch.Tensor:
    """Map raw CPPN outputs ``(..., 3)`` (h, s, v) or ``(..., 1)`` (grey) to RGB ``(..., 3)`` in [0, 1].

    Picbreeder's convention: hsv2rgb((h + 1) mod 1, clip(s, 0, 1), clip(|v|, 0, 1)); grey is clip(|v|, 0, 1).
    ``straight_through`` lets gradients pass the clips as if they were identities (the image is the same):
    training uses it so that a saturated output (white, or negative saturation) is not a dead end.
    """
    if color == "hsv":
        h, s, v = out.unbind(-1)
        hsv = [torch.remainder(h + 1.0, 1.0), _clip(s, straight_through), _clip(v.abs(), straight_through)]
        return _hsv_to_rgb(torch.stack(hsv, -1))
    if color == "gray":
        return _clip(out[..., :1].abs(), straight_through).expand(*out.shape[:-1], 3)
    raise ValueError(f"color must be one of {sorted(COLOR_MODES)}, got {color!r}")


class ActivationLayer(nn.Module):
    """Applies a per-neuron activation layout to the last dimension of its input.

    Neurons are visited in runs of equal activations (slices); when the layout has many short runs (layerized
    Picbreeder layers), it is permuted once so that each activation is one run, then permuted back.
    """

    max_runs = 4

    def __init__(self, names: Sequence[str]):
        super().__init__()
        self.names = [check_activation(n, "activation layout") for n in names]
        kind = _kinds(self.names)
        self.permuted = len(_runs(kind)) > self.max_runs
        if self.permuted:
            order, self.runs = grouped_layout(self.names)
            self.register_buffer("order", torch.tensor(order), persistent=False)
            self.register_buffer("inverse", torch.argsort(torch.tensor(order)), persistent=False)
        else:
            self.runs = tuple(_runs(kind))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        if len(self.runs) == 1:
            return ACTIVATIONS[self.runs[0][0]](z)
        if self.permuted:
            z = z.index_select(-1, self.order)
        out = torch.empty_like(z)
        for name, a, b in self.runs:
            out[..., a:b] = ACTIVATIONS[name](z[..., a:b])
        return out.index_select(-1, self.inverse) if self.permuted else out


def grouped_layout(names: Sequence[str]) -> tuple[list[int], tuple[tuple[str, int, int], ...]]:
    """A neuron order that makes each activation one contiguous run (identities first; cache counts as
    identity), and the runs ``((name, start, stop), ...)`` in that order. Permuting a layer's neurons (its
    weight rows, and the next layer's columns) gives the same network."""
    kind = _kinds(names)
    order = sorted(range(len(kind)), key=lambda i: (kind[i] != "identity", kind[i], i))
    return order, tuple(_runs([kind[i] for i in order]))


def _kinds(names: Sequence[str]) -> list[str]:
    """Activation names with "cache" read as "identity" (a cache neuron is an identity that carries a value)."""
    return ["identity" if n == "cache" else n for n in names]


def active_runs(runs: Sequence[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """The runs of :func:`grouped_layout` that compute something (identity runs pass values through)."""
    return [r for r in runs if r[0] != "identity"]


def _runs(names: Sequence[str]) -> list[tuple[str, int, int]]:
    """Maximal runs of equal names: ``[(name, start, stop), ...]``."""
    runs = []
    for i, n in enumerate(names):
        if runs and runs[-1][0] == n:
            runs[-1] = (n, runs[-1][1], i + 1)
        else:
            runs.append((n, i, i + 1))
    return runs


def init_weights(shapes: Sequence[tuple[int, int]], init_scale: float = 1.0,
                 generator: torch.Generator | None = None, batch: tuple[int, ...] = ()) -> list[torch.Tensor]:
    """Random weights ``N(0, init_scale^2 / fan_in)`` for layers of the given ``(out, in)`` shapes (our choice)."""
    return [torch.randn(*batch, o, i, generator=generator) * (init_scale / math.sqrt(i)) for o, i in shapes]


class CPPN(nn.Module):
    """A CPPN: inputs (x, y, d, bias) -> hidden layers (no biases, per-neuron activations) -> linear -> (h, s, v).

    Args:
        activations: one list of activation names per hidden layer; its length is that layer's width.
        color: ``"hsv"`` (3 outputs) or ``"gray"`` (1 output).
        weights: optional list of ``(out, in)`` tensors, one per layer including the output layer.
        masks: optional list of 0/1 tensors of the same shapes (default all ones: dense).
        init_scale, seed: random initialisation when ``weights`` is not given.

    Layers are numbered ``0 .. depth``: ``0..depth-1`` hidden, ``depth`` the output layer. A weight is named
    ``(layer, out, in)``.
    """

    def __init__(self, activations: Sequence[Sequence[str]], color: str = "hsv",
                 weights: Sequence[torch.Tensor] | None = None,
                 masks: Sequence[torch.Tensor] | None = None, init_scale: float = 1.0, seed: int = 0):
        super().__init__()
        activations = _check_layers(activations)
        color = checks.choice(color, "color", COLOR_MODES)
        self.color = color
        self.activations = [list(layer) for layer in activations]
        n_out = COLOR_MODES[color]
        widths = [len(layer) for layer in self.activations]
        self.shapes = list(zip(widths + [n_out], [len(INPUT_NAMES)] + widths))
        if weights is None:
            # float32 weights: a scale near float32's largest value would draw inf weights
            init_scale = checks.real(init_scale, "init_scale", 0, 1e30, low_open=True)
            seed = checks.seed(seed)
            weights = init_weights(self.shapes, init_scale, torch.Generator().manual_seed(seed))
        if isinstance(weights, torch.Tensor) or len(weights) != len(self.shapes):
            raise ValueError(f"weights: expected {len(self.shapes)} matrices, got {len(weights)}")
        masks = masks if masks is not None else [torch.ones(s) for s in self.shapes]
        if isinstance(masks, torch.Tensor) or len(masks) != len(self.shapes):
            raise ValueError(f"masks: expected {len(self.shapes)} matrices, got {len(masks)}")
        self.weights = nn.ParameterList()
        for l, (w, m, s) in enumerate(zip(weights, masks, self.shapes)):
            w = checks.tensor(w, f"weights[{l}]", floating=False)
            w = w if w.is_floating_point() else w.float()
            m = checks.tensor(m, f"masks[{l}]", floating=False).to(w.dtype)
            if tuple(w.shape) != s or tuple(m.shape) != s:
                raise ValueError(f"layer {l}: weight {tuple(w.shape)} and mask {tuple(m.shape)} must be {s}")
            if not torch.isfinite(w).all():
                raise ValueError(f"layer {l}: weights contain NaN or inf")
            self.register_buffer(f"mask{l}", (m != 0).to(w.dtype))
            self.weights.append(nn.Parameter(w * getattr(self, f"mask{l}")))
        self.hidden = nn.ModuleList(ActivationLayer(a) for a in self.activations)

    # -- structure -------------------------------------------------------------------------------------------
    @property
    def depth(self) -> int:
        """Number of hidden layers."""
        return len(self.activations)

    @property
    def widths(self) -> list[int]:
        """Width of each hidden layer."""
        return [len(a) for a in self.activations]

    @property
    def masks(self) -> list[torch.Tensor]:
        """The connectivity masks, one ``(out, in)`` 0/1 tensor per layer (buffers)."""
        return [getattr(self, f"mask{l}") for l in range(len(self.shapes))]

    def effective_weights(self) -> list[torch.Tensor]:
        """``W_l * mask_l`` for every layer: what the network computes with."""
        return [w * m for w, m in zip(self.weights, self.masks)]

    def set_masks(self, masks: Sequence[torch.Tensor]) -> None:
        """Replace the masks (one 0/1 tensor per layer, of the layer shapes) and zero the weights they remove.

        All masks are checked before any is changed: a wrong count or shape leaves the model as it was."""
        if isinstance(masks, torch.Tensor) or len(masks) != len(self.shapes):
            n = "a single tensor" if isinstance(masks, torch.Tensor) else len(masks)
            raise ValueError(f"masks: expected {len(self.shapes)} masks (one per layer), got {n}")
        new = [checks.tensor(m, f"masks[{l}]", s, floating=False) for l, (m, s) in enumerate(zip(masks, self.shapes))]
        for l, m in enumerate(new):
            getattr(self, f"mask{l}").copy_(m != 0)
        self.apply_masks_()

    @torch.no_grad()
    def apply_masks_(self) -> None:
        """Zero every stored weight that its mask removes (keeps the parameters exactly sparse)."""
        for w, m in zip(self.weights, self.masks):
            w.mul_(m)

    def n_weights(self) -> int:
        """Number of non-zero effective weights."""
        return int(sum((w != 0).sum() for w in self.effective_weights()))

    def arch(self) -> str:
        """A short description, e.g. ``"12 x 22, 97.1% zero, hsv"``."""
        total = sum(o * i for o, i in self.shapes)
        width = max(self.widths)
        return f"{self.depth} x {width}, {100 * (1 - self.n_weights() / total):.1f}% zero, {self.color}"

    # -- computation -----------------------------------------------------------------------------------------
    def forward(self, coords: torch.Tensor, weights: Sequence[torch.Tensor] | None = None,
                masks: Sequence[torch.Tensor] | None = None, return_features: bool = False):
        """Raw outputs ``(..., N, n_out)`` for coordinates ``(N, 4)``.

        ``weights`` and ``masks`` (optional) replace the parameters and buffers, with optional leading batch
        dims ``(..., out, in)`` (many networks of this architecture at once). With ``return_features`` also
        returns each hidden layer's post-activation ``(..., N, width_l)``.
        """
        coords = checks.tensor(checks.instance(coords, "coords", torch.Tensor, " (N, 4)"), "coords",
                               (None, len(INPUT_NAMES)))
        ws = self.weights if weights is None else self._check_stack(weights, "weights")
        ms = self.masks if masks is None else self._check_stack(masks, "masks")
        dtype = ws[0].dtype                       # coordinates and masks in the weights' dtype (float64 coords
        h, feats = coords.to(dtype), []           # for a float32 model are read as float32, as the model is)
        for l, (w, m) in enumerate(zip(ws, ms)):
            z = torch.matmul(h, (w * m).to(dtype).transpose(-1, -2))
            h = self.hidden[l](z) if l < self.depth else z
            if return_features and l < self.depth:
                feats.append(h)
        return (h, feats) if return_features else h

    def _check_stack(self, tensors, name: str) -> list[torch.Tensor]:
        """``weights`` / ``masks`` for :meth:`forward`: one tensor ``(..., out, in)`` per layer (the model's shapes)."""
        if isinstance(tensors, torch.Tensor) or len(tensors) != len(self.shapes):
            n = "a single tensor" if isinstance(tensors, torch.Tensor) else len(tensors)
            raise ValueError(f"{name}: expected {len(self.shapes)} tensors (one per layer), got {n}")
        out = []
        for l, (t, s) in enumerate(zip(tensors, self.shapes)):
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"{name}[{l}] must be a tensor (..., {s[0]}, {s[1]}), got {type(t).__name__}")
            if t.ndim < 2 or tuple(t.shape[-2:]) != s:
                raise ValueError(f"{name}[{l}] must have shape (..., {s[0]}, {s[1]}), got {tuple(t.shape)}")
            if name == "weights" and (not t.is_floating_point() or out and t.dtype != out[0].dtype):
                raise ValueError(f"{name}[{l}] must hold floats of one dtype (that of {name}[0], "
                                 f"{out[0].dtype if out else 'a float dtype'}), got {t.dtype}")
            checks.finite(t, f"{name}[{l}]")            # NaN in is refused, never NaN out
            out.append(t)
        try:
            torch.broadcast_shapes(*(t.shape[:-2] for t in out))
        except RuntimeError:
            raise ValueError(f"{name}: batch dimensions {[tuple(t.shape[:-2]) for t in out]} do not "
                             f"broadcast") from None
        return out

    def render_values_per_pixel(self, graph: bool = False) -> int:
        """Numbers a render keeps per pixel at its peak (coordinates, a layer's z and h and the activation's
        scratch, outputs and colours; with ``graph``, autograd's record of every layer's z and h too): what
        :meth:`render` checks against the render budget."""
        return 4 + 3 * max(self.widths) + 12 + (2 * sum(self.widths) if graph else 0)

    def _check_render(self, res, weights, budget_mb) -> int:
        batch = 1
        if weights is not None:
            for d in torch.broadcast_shapes(*(w.shape[:-2] for w in self._check_stack(weights, "weights"))):
                batch *= int(d)
        graph = torch.is_grad_enabled() and any(w.requires_grad for w in (weights or self.weights))
        return checks.check_render_size(res, self.render_values_per_pixel(graph), self.mask0.element_size(),
                                        "CPPN.render", budget_mb, batch)

    def render(self, res: int = 256, weights: Sequence[torch.Tensor] | None = None,
               masks: Sequence[torch.Tensor] | None = None, budget_mb: float | None = None) -> torch.Tensor:
        """The image ``(..., res, res, 3)`` in [0, 1] (a batch of images when ``weights`` carry a batch dim).

        Refused with ``ValueError`` before anything is allocated when its buffers would exceed ``budget_mb`` MiB
        (default: :func:`compbook.checks.render_budget_mb`), and when the outputs overflow to NaN or inf."""
        res = self._check_render(res, weights, budget_mb)
        coords = coordinate_grid(res, dtype=self.mask0.dtype, device=self.mask0.device)
        out = self.forward(coords, weights, masks)
        check_finite_outputs(out, weights if weights is not None else self.weights)
        return outputs_to_rgb(out, self.color).reshape(*out.shape[:-2], res, res, 3)

    def feature_maps(self, res: int = 64, budget_mb: float | None = None) -> list[torch.Tensor]:
        """Every hidden neuron's activation map: one tensor ``(width_l, res, res)`` per hidden layer."""
        per_pixel = 4 + 2 * sum(self.widths)
        res = checks.check_render_size(res, per_pixel, self.mask0.element_size(), "CPPN.feature_maps", budget_mb)
        with torch.no_grad():
            coords = coordinate_grid(res, dtype=self.mask0.dtype, device=self.mask0.device)
            _, feats = self.forward(coords, return_features=True)
        return [f.T.reshape(-1, res, res) for f in feats]

    def clone_with(self, weights: Sequence[torch.Tensor] | None = None,
                   masks: Sequence[torch.Tensor] | None = None) -> "CPPN":
        """A new CPPN of the same architecture with other weights and/or masks (detached copies)."""
        ws = [w.detach().clone() for w in (weights if weights is not None else self.weights)]
        ms = [m.detach().clone() for m in (masks if masks is not None else self.masks)]
        return CPPN(self.activations, self.color, ws, ms)


def uniform_cppn(depth: int, width: int, activation: str | Mapping[str, int] = "tanh", color: str = "hsv",
                 seed: int = 0, init_scale: float = 1.0) -> CPPN:
    """A dense CPPN with ``depth`` hidden layers of ``width`` neurons, each layer with the same activations.

    ``activation`` is one name, or counts per name whose sum must equal ``width`` (FER's
    ``"12;cache:15,gaussian:4,identity:2,sin:1"`` is ``uniform_cppn(12, 22, {"cache": 15, ...})``).
    """
    depth, width = checks.integer(depth, "depth", 1, MAX_DEPTH), checks.integer(width, "width")
    checks.check_budget(16 * width * width * depth + 8 * depth * width,
                        f"uniform_cppn(depth={depth}, width={width}): {depth * width * width:,} weights")
    if not isinstance(activation, (str, Mapping)):
        raise ValueError(f"activation must be an activation name or counts per name, got {activation!r:.80}")
    layer = [check_activation(activation, "uniform_cppn: activation")] * width if isinstance(activation, str) \
        else layout_from_counts(activation)
    if len(layer) != width:
        raise ValueError(f"activation counts sum to {len(layer)}, but width is {width}")
    return CPPN([layer] * depth, color=color, seed=seed, init_scale=init_scale)


def _check_layers(activations) -> list[list[str]]:
    """``activations`` as a list of layers, each a non-empty list of activation names (a layer given as one
    string such as ``"tanh"`` is refused: it would be read letter by letter)."""
    if isinstance(activations, str) or not isinstance(activations, Sequence) or len(activations) < 1:
        raise ValueError(f"activations must be a list of hidden layers, each a list of activation names "
                         f"(depth >= 1), got {activations!r:.80}")
    if len(activations) > MAX_DEPTH:
        raise ValueError(f"activations: {len(activations):,} hidden layers, more than MAX_DEPTH={MAX_DEPTH}")
    for l, layer in enumerate(activations):
        if isinstance(layer, str) or not isinstance(layer, Sequence):
            raise ValueError(f"activations[{l}] must be a list of activation names (one per neuron), got "
                             f"{layer!r:.80}; e.g. [{layer!r}] * width")
        if len(layer) < 1:
            raise ValueError(f"activations[{l}]: every hidden layer needs at least one neuron (width >= 1)")
    check_size([len(layer) for layer in activations], 3, f"CPPN of {len(activations)} hidden layers")
    for l, layer in enumerate(activations):
        for name in layer:
            check_activation(name, f"activations[{l}]")
    return [list(layer) for layer in activations]


def check_finite_outputs(out: torch.Tensor, weights) -> None:
    """Raise ``ValueError`` when raw outputs hold NaN or inf (finite weights whose products overflow)."""
    if not bool(torch.isfinite(out).all()):
        big = max(float(w.detach().abs().max()) for w in weights)
        raise ValueError(f"render: the network's outputs overflow to NaN or inf in {out.dtype} (largest |weight| "
                         f"{big:.3g}); its weights are too large to draw an image")


def layer_activation_counts(model: CPPN) -> list[Counter]:
    """How many neurons of each activation every hidden layer has (for describing an architecture)."""
    return [Counter(layer) for layer in model.activations]
