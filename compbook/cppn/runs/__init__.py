"""Part A's long runs: the experiments of chapters 6-9 as functions, their sweeps, full-mode times."""
