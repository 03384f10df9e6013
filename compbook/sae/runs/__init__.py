"""Part C's long runs: SAE sweeps, stacks of SAEs, the full-mode command, activation sources, full-mode times."""
