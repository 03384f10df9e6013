"""Part C's studies behind chapters 15 and 16: the k / lambda study, object regions, the reference optimiser, the claims table."""
