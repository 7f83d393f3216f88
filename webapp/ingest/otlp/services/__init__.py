"""Writes of the OTLP receiver: spans stored once, placed in live runs."""
