"""The Celery app. The broker comes from settings (file-system by default)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("contextsim")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["webapp"])
