"""The runs list: search, filters, a run's management (rename, notes, tags, delete) and
session trees."""
