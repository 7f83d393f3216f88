"""Workarounds where ordinary Django was too slow or unsafe for a figure users see, fenced
here; README.md says why each exists and which bench proves it."""
