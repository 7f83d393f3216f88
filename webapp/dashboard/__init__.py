"""A run's dashboard: controls, composition chart, summary, problems, trace table,
step inspector, ledger."""
