"""Part A's files: FER's repository files and pickles, checkpoints of CPPNs."""
