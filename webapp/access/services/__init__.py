"""Writes of access: share links and API tokens."""
