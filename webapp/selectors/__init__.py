"""Selectors: reads, one module per kind of thing read, with the visibility rules
applied. They never write (derived data kept beside a run is webapp.derived's)."""
