"""Estimator pages: a run's text by script, estimates against measured usage, the
playground, fitted custom estimators."""
