"""The WSGI application, as `manage.py serve` and any WSGI server run it."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
application = get_wsgi_application()

from webapp.runtime import heap  # noqa: E402

heap.settle()
