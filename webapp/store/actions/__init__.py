"""The run store's actions: every write of a run's data, each in its own transaction."""
