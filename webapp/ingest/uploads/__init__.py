"""Uploads: the form, the import jobs, their progress."""
