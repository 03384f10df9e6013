"""Every trainer and scorer of the three parts asks ``config.device()`` (a GPU in full mode), on any machine.

The list below is the book's trainers and batch scorers; a new one is added here. Each must reach the device
through ``config.device()`` (directly, or through a helper named here), so that full mode on a GPU never trains
on its CPU. ``tests/test_gpu.py`` runs one step of each on a real GPU where there is one. On a CPU the test
also runs each device-aware helper under a patched ``config.device`` to show that it is the one consulted.
"""

import inspect

import pytest
import torch

from compbook import config
from compbook.binding import complexity, controlled, train as binding_train
from compbook.binding.recipe import train as recipe
from compbook.cppn import backprop, emc2, train as cppn_train, verdicts
from compbook.cppn.judges import semantic
from compbook.sae import s2ae, vlm
from compbook.sae.runs import stack

#: (function, how it reaches the device): a call of config.device() or of a helper that does
TRAINERS_AND_SCORERS = {
    "cppn.train._train (fit, fit_many, pruning, twins, every Part A sweep)": (cppn_train._train, "config.device()"),
    "cppn.emc2.compositional_score (EMC2 renders)": (emc2.compositional_score, "on_scoring_device("),
    "cppn.verdicts.on_scoring_device": (verdicts.on_scoring_device, "config.device()"),
    "cppn.judges.semantic.train_classifier": (semantic.train_classifier, "config.device()"),
    "binding.train.DualStack (chapters 10-11)": (binding_train.DualStack.__init__, "config.device()"),
    "binding.train.train_stack": (binding_train.train_stack, "stack.device"),
    "binding.controlled.train_controlled (chapter 13, the sweep)": (controlled.train_controlled, "config.device()"),
    "binding.complexity.fit_binding_mlp (chapter 12)": (complexity.fit_binding_mlp, "config.device()"),
    "binding.recipe.train_recipe (the recipe, lr_probe, run_one)": (recipe.train_recipe, "run_device()"),
    "sae.s2ae.fit_sae (every SAE of Part C)": (s2ae.fit_sae, "device()"),
    "sae.stack.fit_stack (Part C's SAEs on the sweep runner)": (stack.fit_stack, "default_device()"),
    "sae.vlm.train_vlm (the tiny VLM, object VLMs)": (vlm.train_vlm, "config.device()"),
}


@pytest.mark.parametrize("name", sorted(TRAINERS_AND_SCORERS))
def test_trainer_asks_the_device(name):
    fn, call = TRAINERS_AND_SCORERS[name]
    assert call in inspect.getsource(fn), f"{name} does not reach config.device() (through {call!r})"


def test_no_numpy_of_a_device_tensor_in_the_training_loops():
    """``loss.detach().numpy()`` fails on CUDA: a loop's numbers come back with ``.cpu()`` first."""
    for fn in (binding_train.optimizer_step, cppn_train._train, controlled.train_controlled):
        src = inspect.getsource(fn)
        assert ".detach().numpy()" not in src and "].numpy()" not in src.replace(".cpu().numpy()", ""), \
            f"{fn.__qualname__} converts a possibly-GPU tensor with .numpy() (add .cpu())"


def test_helpers_follow_a_patched_device(monkeypatch):
    """A trainer that asked for the device and then ignored it would pass the source check: here the helpers'
    answer is changed and must be followed (the CPU device stands for a GPU's)."""
    asked = []

    def fake_device():
        asked.append(1)
        return torch.device("cpu")

    monkeypatch.setattr(config, "device", fake_device)
    from compbook.cppn.network import uniform_cppn
    model = uniform_cppn(2, 4, "tanh", seed=0)
    assert emc2.on_scoring_device(model) is model and asked, "on_scoring_device did not ask config.device()"
    assert backprop.default_group_bytes("cpu") == backprop.CPU_GROUP_BYTES
    asked.clear()
    cppn_train.fit(model, torch.rand(8, 8, 3), steps=1, progress=False)
    assert asked, "cppn training did not ask config.device()"
