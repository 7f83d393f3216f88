"""One session is one run: a staged run that is a session its owner imported before
(the same format, session id and kind, with the same messages, or a copy that stops
sooner or goes on further) is recognised by its content, not by its bytes. A copy with
nothing new is dropped; a longer one extends the stored run as `tail_run` does
(appends.do_sync_run: the new messages, the tail that changed replaced, its header as
the longer copy says). Either way the session keeps one run, so a collection never
holds it twice."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from webapp.models import Message, Run
from webapp.store.actions.appends import do_sync_run
from webapp.store.actions.saving import do_drop_runs
from webapp.store.reads import stored_run


@dataclass(frozen=True, slots=True)
class Recognised:
    """A staged run found to be `stored`, and how: "the same", "a shorter copy" or
    "a longer copy" (`added` messages added or replaced)."""

    stored: Run
    how: str
    added: int = 0

    def describe(self, name: str) -> str:
        """A line for the import's warnings."""
        said = f"{name}: the session {self.stored.title[:80]!r} was imported before"
        if self.how == "a longer copy":
            return f"{said}; this longer copy added {self.added:,} message(s) to it"
        return f"{said} ({self.how}): nothing new, nothing imported twice"


def twin_of(staged: Run) -> Run | None:
    """The owner's stored run of the same session as `staged` (format, session id,
    parent session, subagent or compaction request alike); None when it has no
    session id or none was stored."""
    if not staged.session_id:
        return None
    return (
        Run.objects.filter(
            owner_id=staged.owner_id,
            format=staged.format,
            session_id=staged.session_id,
            parent_session_id=staged.parent_session_id,
            subagent=staged.subagent,
            compaction_request=staged.compaction_request,
        )
        .exclude(pk=staged.pk)
        .order_by("id")
        .first()
    )


def _hashes(run: Run) -> list[str]:
    rows = Message.objects.filter(run_id=run.pk).order_by("index")
    return list(rows.values_list("content_hash", flat=True))


def _first_difference(a: Sequence[str], b: Sequence[str]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def do_settle_twins(staged: list[Run]) -> tuple[list[Run], list[Recognised]]:
    """Of an import's staged runs, those still to publish, and what the others were
    recognised as (those are dropped, their new messages moved to the stored run).
    A run whose messages part from the stored one's before its last message is a
    different conversation of the same session id: it is kept."""
    kept: list[Run] = []
    found: list[Recognised] = []
    for run in staged:
        stored = twin_of(run)
        if stored is None:
            kept.append(run)
            continue
        old, new = _hashes(stored), _hashes(run)
        first = _first_difference(old, new)
        if first == len(new):
            found.append(Recognised(stored, "the same" if first == len(old) else "a shorter copy"))
        elif first >= len(old) - 1 and len(old) > 1 and stored.owner is not None:
            # It goes on where the stored run stops (the stored last message may have
            # been a response still being written when that copy was made).
            extended, added = do_sync_run(stored.owner, stored.stream_key, stored_run(run), stored)
            found.append(Recognised(extended, "a longer copy", added or 0))
        else:
            kept.append(run)
            continue
        do_drop_runs([run])
    return kept, found
