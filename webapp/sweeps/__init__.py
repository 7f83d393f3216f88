"""Sweeps: what-if grids over runs as background jobs, their progress and outcome."""
