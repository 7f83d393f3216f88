"""The command line: `python -m contextsim <command>` (main), one module per command
that is more than a few lines (export_config)."""
