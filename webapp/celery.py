"""The Celery app. The broker comes from settings (file-system by default)."""

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# The file-system broker (the embedded default) writes each message whole before a
# worker can take it (webapp.runtime.embedded_broker).
TRANSPORT_ALIASES["filesystem"] = "webapp.runtime.embedded_broker:Transport"

app = Celery("contextsim")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["webapp"])
