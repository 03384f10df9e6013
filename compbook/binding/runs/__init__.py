"""Part B's long runs: the coverage sweep, its scoring and tasks, full-mode times."""
