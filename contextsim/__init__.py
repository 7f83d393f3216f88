"""contextsim: inspect and simulate LLM context windows.

The core is pure Python and deterministic. It imports nothing from Django, Celery,
plotly or the web application, so it can run in a notebook, a CLI or a worker.
"""

__version__ = "0.1.0"
