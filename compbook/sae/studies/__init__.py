"""Part C's studies of chapters 15-16: the k / lambda study, object regions, reference optimiser, claims table."""
