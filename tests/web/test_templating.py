"""The template backend lets what a page rendered go as soon as it is rendered, not at
the garbage collector's next pass."""

from __future__ import annotations

import gc
import weakref

from django.template import engines
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.utils.safestring import SafeString


class Data:
    def __str__(self) -> str:
        return "<data>"


def _alive_after_rendering(render) -> bool:
    data = Data()
    gone = weakref.ref(data)
    gc.disable()
    try:
        render(data)
        del data
        return gone() is not None
    finally:
        gc.enable()


def test_a_request_context_is_let_go_without_a_collection():
    request = RequestFactory().get("/")
    template = engines["django"].from_string("{% for i in '12' %}{{ data }}{% endfor %}")
    assert not _alive_after_rendering(lambda data: template.render({"data": data}, request))


def test_a_page_from_the_loader_is_let_go_and_stays_safe_to_include():
    request = RequestFactory().get("/")
    out: list[str] = []
    assert not _alive_after_rendering(
        lambda data: out.append(
            render_to_string("registration/login.html", {"data": data}, request)
        )
    )
    assert "<form" in out[0] and isinstance(out[0], SafeString)
