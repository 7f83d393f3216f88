"""The vendored plotly.js bundle is the one its README records (version, checksum,
licence), and the chart pages load it."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from django.contrib.staticfiles import finders
from django.test import Client

VENDOR = Path(__file__).resolve().parents[2] / "static" / "vendor"


def test_the_vendored_bundle_is_the_version_and_checksum_its_readme_records():
    readme = (VENDOR / "README.md").read_text()
    bundle = (VENDOR / "plotly-cartesian.min.js").read_bytes()
    version = re.search(r"plotly\.js-cartesian-dist-min@([\d.]+)", readme)
    assert version is not None
    assert f"(cartesian - minified) v{version[1]}".encode() in bundle[:200]
    assert hashlib.sha256(bundle).hexdigest() in readme
    assert "MIT" in (VENDOR / "plotly-LICENSE.txt").read_text()


def test_chart_pages_load_the_cartesian_bundle_and_it_is_served(fleet, alice_client):
    client: Client = alice_client
    page = client.get(f"/runs/{fleet[0].public_id}/").content.decode()
    src = re.search(r'<script src="([^"]*plotly[^"]*)"', page)
    assert src is not None and src[1].endswith("vendor/plotly-cartesian.min.js")
    found = finders.find("vendor/plotly-cartesian.min.js")
    assert (
        found is not None
        and Path(found).read_bytes() == (VENDOR / "plotly-cartesian.min.js").read_bytes()
    )
