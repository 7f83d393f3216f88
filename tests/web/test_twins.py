"""One session is one run: a re-upload of a session imported before (as a zip, a copy
with other bytes, a truncated copy or a longer one) is recognised by its content and
never makes a second run in the collection; a longer copy extends the stored run."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from tests.conftest import corpus_files
from tests.web.test_import_service import import_bytes
from webapp.models import Message, Run

CORPUS = corpus_files("claude_code", "pai_b7a09704*.jsonl")


def _lines(path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _zip(name: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(name, data)
    return out.getvalue()


def _assistant_lines(lines: list[bytes]) -> list[int]:
    found = []
    for n, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("type") == "assistant":
            found.append(n)
    return found


def _zip_of(paths) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path in paths:
            archive.writestr(path.name, path.read_bytes())
    return out.getvalue()


@pytest.mark.django_db
@pytest.mark.skipif(len(CORPUS) < 2, reason="the pai session and its subagent are not here")
def test_a_session_uploaded_again_as_a_zip_or_a_shorter_copy_is_the_same_run(alice):
    main_path = next(p for p in CORPUS if "agent-" not in p.name)
    first = import_bytes(alice, "project.zip", _zip_of(CORPUS))
    assert first.status == "done"
    runs = set(Run.objects.values_list("pk", "message_count"))
    (main,) = Run.objects.filter(subagent=False, compaction_request=False)
    assert main.collection is not None
    in_collection = main.collection.runs.count()
    # The main session again, alone, its bytes in another zip: the same content.
    again = import_bytes(alice, "again.zip", _zip(main_path.name, main_path.read_bytes()))
    assert again.status == "done" and again.duplicate_of is None
    assert set(Run.objects.values_list("pk", "message_count")) == runs
    assert list(again.recognised.all()) == [main]
    assert any("(the same)" in w for w in again.warnings)
    # Cut after half its responses: a shorter copy, recognised too.
    lines = _lines(main_path)
    cut = _assistant_lines(lines)[len(_assistant_lines(lines)) // 2]
    shorter = import_bytes(alice, "shorter.jsonl", b"".join(lines[:cut]))
    assert set(Run.objects.values_list("pk", "message_count")) == runs
    assert any("a shorter copy" in w for w in shorter.warnings)
    # The whole folder again: nothing new in the collection.
    import_bytes(alice, "project-again.zip", _zip_of(reversed(CORPUS)))
    main.refresh_from_db()
    assert main.collection.runs.count() == in_collection
    assert set(Run.objects.values_list("pk", "message_count")) == runs


@pytest.mark.django_db
@pytest.mark.parametrize("path", CORPUS[:1])
def test_a_longer_copy_extends_the_stored_run(alice, path):
    lines = _lines(path)
    cut = _assistant_lines(lines)[len(_assistant_lines(lines)) // 2]
    import_bytes(alice, "start.jsonl", b"".join(lines[:cut]))
    (stored,) = Run.objects.filter(subagent=False, compaction_request=False)
    shorter = stored.message_count
    whole = import_bytes(alice, path.name, b"".join(lines))
    assert whole.status == "done"
    (after,) = Run.objects.filter(subagent=False, compaction_request=False)
    assert after.pk == stored.pk and after.message_count > shorter
    assert any("this longer copy added" in w for w in whole.warnings)
    # Its messages are the whole file's, in order: as if it had been imported whole.
    fresh_owner_run = _import_fresh(path, lines)
    assert (
        list(
            Message.objects.filter(run=after)
            .order_by("index")
            .values_list("content_hash", flat=True)
        )
        == fresh_owner_run
    )


def _import_fresh(path, lines) -> list[str]:
    from django.contrib.auth.models import User

    other = User.objects.create_user("carol")
    import_bytes(other, path.name, b"".join(lines))
    run = Run.objects.get(owner=other, subagent=False, compaction_request=False)
    return list(
        Message.objects.filter(run=run).order_by("index").values_list("content_hash", flat=True)
    )


@pytest.mark.django_db
def test_another_conversation_with_the_same_session_id_is_kept(alice):
    def log(text: str) -> bytes:
        entries = [
            {
                "type": "user",
                "sessionId": "s-1",
                "uuid": "u1",
                "message": {"role": "user", "content": text},
            },
            {
                "type": "assistant",
                "sessionId": "s-1",
                "uuid": "a1",
                "message": {
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": "ok"}],
                },
            },
        ]
        return "".join(json.dumps(e) + "\n" for e in entries).encode()

    import_bytes(alice, "a.jsonl", log("first question"))
    other = import_bytes(alice, "b.jsonl", log("a different question"))
    assert other.status == "done" and not other.recognised.exists()
    assert Run.objects.count() == 2
