"""The vendored plotly.js bundles are the ones their README records (version, checksum,
licence), and each chart page loads the smallest one that draws its traces."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

VENDOR = Path(__file__).resolve().parents[2] / "static" / "vendor"


@pytest.mark.parametrize("bundle", ["basic", "cartesian"])
def test_a_vendored_bundle_is_the_version_and_checksum_its_readme_records(bundle):
    readme = (VENDOR / "README.md").read_text()
    code = (VENDOR / f"plotly-{bundle}.min.js").read_bytes()
    version = re.search(rf"plotly\.js-{bundle}-dist-min@([\d.]+)", readme)
    assert version is not None
    assert f"({bundle} - minified) v{version[1]}".encode() in code[:200]
    assert hashlib.sha256(code).hexdigest() in readme
    assert "MIT" in (VENDOR / "plotly-LICENSE.txt").read_text()


def _bundle(page: str) -> str:
    src = re.search(r'<script src="([^"]*plotly[^"]*)"', page)
    assert src is not None
    name = src[1].rsplit("/", 1)[1]
    found = finders.find(f"vendor/{name}")
    assert found is not None and Path(found).read_bytes() == (VENDOR / name).read_bytes()
    return name


def test_the_dashboard_loads_the_basic_bundle_and_the_ledger_the_one_with_heatmaps(
    fleet, alice_client
):
    client: Client = alice_client
    run = fleet[0].public_id
    assert _bundle(client.get(f"/runs/{run}/").content.decode()) == "plotly-basic.min.js"
    ledger = client.get(f"/runs/{run}/ledger/").content.decode()
    assert _bundle(ledger) == "plotly-cartesian.min.js"


def test_only_the_ledger_draws_a_trace_the_basic_bundle_lacks():
    web = Path(__file__).resolve().parents[2] / "webapp"
    found = [*web.glob("*/charts/*.py"), *web.glob("*/charts.py"), *web.glob("*/frontier.py")]
    assert len(found) >= 7  # every chart module of every feature
    kinds = {
        path.name if path.name != "charts.py" else f"{path.parent.name}.py": set(
            re.findall(r'"type": "(\w+)"', path.read_text())
        )
        for path in found
    }
    shapes = {"line", "rect", "log", "linear", "category", "date"}
    beyond = {name for name, found in kinds.items() if found - shapes - {"scatter", "bar", "pie"}}
    assert beyond == {"ledger.py"}
