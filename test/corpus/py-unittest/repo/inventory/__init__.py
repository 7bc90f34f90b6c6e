"""Stock levels and reorder points."""
