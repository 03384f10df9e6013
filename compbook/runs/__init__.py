"""The run machinery: run-time estimates, the sweep runner, model servers."""
