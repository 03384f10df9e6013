"""Part A's audit, behind the notes chapters.

Blind verdicts, judges against labellers, what the score counts, re-reads, the claims table.
"""
