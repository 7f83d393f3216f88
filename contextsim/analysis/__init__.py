"""Analysis: what the records mean for a person.

Problem detectors, what-if sweeps over fleets of runs, estimators compared by writing
script, and reports of all of it as plain data."""
