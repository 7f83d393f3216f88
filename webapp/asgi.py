"""The ASGI entry point (`manage.py serve` runs it with uvicorn): the capture proxy
(`/proxy/...`, webapp.ingest.proxy.views) on the event loop, the streaming API's appends through
Django in threads of their own (webapp.runtime.append_lane), everything else through Django;
all of it behind the doors' size and origin checks (webapp.runtime.doors)."""

from __future__ import annotations

import os
import warnings

from django.core.asgi import get_asgi_application

# WhiteNoise serves static files with a synchronous iterator, which Django's ASGI
# handler reads whole in a thread: fine for our few, small, compressed files.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous")

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
django_app = get_asgi_application()

from webapp.access.services.tokens import caller  # noqa: E402
from webapp.ingest.proxy import views as proxy  # noqa: E402
from webapp.runtime import append_lane, doors, heap  # noqa: E402

heap.settle()


async def dispatch(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] == "lifespan":
        # Nothing to start or stop: the proxy's client pool is made on first use.
        await receive()  # lifespan.startup
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["type"] == "http" and scope["path"].startswith(proxy.PREFIX):
        await proxy.app(scope, receive, send)
        return
    if append_lane.serves(scope):
        await append_lane.app(scope, receive, send)
        return
    await django_app(scope, receive, send)


application = doors.guarded(dispatch, caller)
"""Every door bounded before its body is read, machine doors closed to other sites
(webapp.runtime.doors)."""
