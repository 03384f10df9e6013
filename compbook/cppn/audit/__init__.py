"""Part A's audit (the notes chapters): blind verdicts, judges against labellers, what the score counts, re-reads, the claims table."""
