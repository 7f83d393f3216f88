"""The contextsim dashboard: Django on top of the pure-Python core."""

from webapp.celery import app as celery_app

__all__ = ["celery_app"]
