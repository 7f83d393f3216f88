"""The agent systems contextsim knows, one folder each.

A system's folder holds everything about one real system: its log format (`format.py`,
an Importer), its context policies (`policies.py` and any others), their export back
into the system's own configuration (`export.py`), and a README with the versions its
facts hold for and where they come from. Its `__init__.py` is its manifest (a
contextsim.systems.manifest.System naming those parts by dotted path), which
contextsim.registry reads; nothing of a system is imported until it is first used.

Adding an agent system is adding a folder and one line in contextsim.registry.SYSTEMS.
"""
