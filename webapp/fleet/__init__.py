"""A collection as a fleet: every run of it simulated under one set of controls."""
