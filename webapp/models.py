"""What the dashboard stores: uploads (the raw file, kept), runs, their messages with
token counts for every estimator, collections of runs, and import jobs."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from contextsim.truth.prices import window_source


def new_public_id() -> str:
    """A short, unguessable id for URLs (72 random bits)."""
    return secrets.token_urlsafe(9)


class Visibility(models.TextChoices):
    PRIVATE = "private", "Private"
    PUBLIC = "public", "Public"


class Collection(models.Model):
    """Runs analysed together: a main session and its subagents."""

    public_id = models.CharField(max_length=16, unique=True, default=new_public_id)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE
    )
    title = models.CharField(max_length=300)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.title


class Upload(models.Model):
    """A file as it was received. Kept even when its import fails, so nothing is lost."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    file = models.FileField(upload_to="uploads/%Y/%m/")
    original_name = models.CharField(max_length=300)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    format_override = models.CharField(max_length=30, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.original_name


class Job(models.Model):
    """What every background job row has (an import, a sweep cell): its state, and the
    lease by which a worker holds it (webapp.jobs.services)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    """Times a worker has taken it (webapp.jobs.services)."""
    lease_until = models.DateTimeField(null=True, blank=True)
    """While running: the worker holding it renews this; past it, the worker is lost."""
    sent = models.DateTimeField(default=timezone.now)
    """When its task was last given to the broker."""

    @property
    def retrying(self) -> str:
        """ "attempt 2 of 3" while on a second or later attempt (a worker was lost), else
        empty."""
        attempt = self.attempts + (self.status == self.Status.QUEUED)
        if self.status not in (self.Status.QUEUED, self.Status.RUNNING) or attempt < 2:
            return ""
        return f"attempt {attempt} of {settings.JOB_ATTEMPTS}"

    class Meta:
        abstract = True


SHOWN_STAGES = ("indexing", "counting")
"""The stages of an import job whose runs are shown (ImportJob.stage)."""


class ImportJob(Job):
    """The import of one upload, run in the request for small files or by a worker."""

    public_id = models.CharField(max_length=16, unique=True, default=new_public_id)
    upload = models.OneToOneField(Upload, on_delete=models.CASCADE, related_name="job")
    warnings = models.JSONField(default=list, blank=True)
    format = models.CharField(max_length=30, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    shown = models.DateTimeField(null=True, blank=True)
    """When its runs could be browsed: written and counted by the estimator they are
    first shown with (their text is indexed after, stage "indexing", and the other
    estimators count after that, stage "counting")."""
    duplicate_of = models.ForeignKey(
        "Upload", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    """An earlier upload of the same owner with the same bytes: nothing was imported
    again (its runs are linked instead) unless the person asked for it."""
    again = models.BooleanField(default=False)
    """Import even though the same file was imported before (the person asked)."""
    recognised: models.ManyToManyField[Run, Any] = models.ManyToManyField(
        "Run", blank=True, related_name="+"
    )
    """Stored runs the upload's runs turned out to be (the same sessions, imported
    before: webapp.store.actions.twins): nothing imported twice, a longer copy's new
    messages added to them."""
    stage = models.CharField(max_length=10, blank=True)
    """While running: "reading" the file, "writing" its messages, "finishing" (their
    skeletons); once its runs are shown, "indexing" their text for search, then
    "counting" them with the slow estimators (messages_written then counts those)."""
    messages_written = models.PositiveIntegerField(default=0)
    messages_total = models.PositiveIntegerField(default=0)

    @property
    def browsable(self) -> bool:
        """Its runs can be browsed: done, or shown and being indexed or counted."""
        running = self.status == self.Status.RUNNING
        return self.status == self.Status.DONE or (running and self.stage in SHOWN_STAGES)


class ReadyRuns(models.Manager["Run"]):
    """Runs whose import has finished: an import still writing its messages in batches
    (webapp.store.actions.saving.do_stage_run, do_fill_run) is seen by no page, search or
    API."""

    def get_queryset(self) -> models.QuerySet[Run]:
        return super().get_queryset().filter(ready=True)


class Run(models.Model):
    """One imported agent conversation. Its figures are computed once at import."""

    public_id = models.CharField(max_length=16, unique=True, default=new_public_id)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE
    )
    collection = models.ForeignKey(
        Collection, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    upload = models.ForeignKey(
        Upload, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    demo_key = models.CharField(max_length=60, blank=True, db_index=True)
    title = models.CharField(max_length=300)
    format = models.CharField(max_length=30, db_index=True)
    model = models.CharField(max_length=120, blank=True)
    session_id = models.CharField(max_length=200, blank=True)
    parent_session_id = models.CharField(max_length=200, blank=True)
    subagent = models.BooleanField(default=False)
    compactions = models.JSONField(default=list, blank=True)
    rejections = models.JSONField(default=list, blank=True)
    """Requests the provider refused, as the log records them (core.Rejection):
    {before_message, reason, overflow, time (seconds since the epoch or null)}."""
    context_window = models.PositiveIntegerField(null=True, blank=True)
    """The window the log states (tokens), if it states one."""
    harness_version = models.CharField(max_length=40, blank=True)
    project = models.CharField(max_length=500, blank=True, default="")
    machine = models.CharField(max_length=100, blank=True, default="")
    """The machine whose watcher sent the run (`watch --to`); "" for one stored here."""
    """The folder the agent worked in (contextsim.model.Run.project)."""
    window_source = models.CharField(max_length=300, blank=True)
    """Where context_window comes from (contextsim.model.Run.window_source)."""
    compaction_request = models.BooleanField(default=False)
    """The request that wrote a compaction's summary (attached to its session's run)."""
    elisions = models.JSONField(default=list, blank=True)
    """Messages the agent sent shortened from some request on (contextsim.model.Elision):
    [{"message", "from_step", "text"}]."""
    message_count = models.PositiveIntegerField(default=0)
    request_count = models.PositiveIntegerField(default=0)
    requests_with_usage = models.PositiveIntegerField(default=0)
    peak_measured_context = models.PositiveBigIntegerField(null=True, blank=True)
    tool_call_count = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    # A streamed run grows: every change bumps the revision (caches key on it) and
    # records when it happened (the dashboard follows a run that changed lately).
    revision = models.PositiveIntegerField(default=0)
    last_append = models.DateTimeField(null=True, blank=True)
    stream_key = models.CharField(max_length=600, blank=True, db_index=True)
    """For a run followed from a log file (tail_run): the file and the run's key in it."""
    notes = models.TextField(blank=True)
    tags: models.ManyToManyField[Tag, Any] = models.ManyToManyField(
        "Tag", blank=True, related_name="runs"
    )
    ready = models.BooleanField(default=True)
    """False while a large import is still writing it; then only `all_objects` has it."""
    rewritten = models.PositiveIntegerField(default=0)
    """The revision of its last change that was not messages added at the end (a
    stream's `start` replacing its tail): a skeleton of a later revision is extended
    with the messages added since, not built again."""
    counting = models.JSONField(default=list, blank=True)
    """Estimators (contextsim.counting.estimators.SLOW) whose counts its import is still making:
    shown meanwhile by their stand-ins (STAND_INS)."""

    objects = ReadyRuns()
    all_objects = models.Manager()

    class Meta:
        ordering = ["-created", "-id"]
        base_manager_name = "all_objects"

    @property
    def window_said(self) -> str:
        """Where the run's default hard limit comes from, for a person."""
        return window_source(self.model, self.context_window, self.window_source)

    def __str__(self) -> str:
        return self.title


class Tag(models.Model):
    """A label an owner gives runs, to find and group them (lower case, no spaces)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    name = models.CharField(max_length=40)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="tag_per_owner")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Message(models.Model):
    """One message of a run: its parts as native JSON, its kind, its token count by
    every estimator (computed once at import), and the measured usage of the request
    that produced it, when the log has it."""

    # No index of its own: (run, index) is unique, and its index serves every lookup
    # by run; a third index would be written for each of a big import's rows.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="messages", db_index=False)
    index = models.PositiveIntegerField()
    role = models.CharField(max_length=10)
    kind = models.CharField(max_length=12)
    parts = models.JSONField()
    compact_summary = models.BooleanField(default=False)
    tool_names = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=40)
    counts = models.JSONField(default=dict)
    timestamp = models.DateTimeField(null=True, blank=True)
    """When the log says the message was written (contextsim.model.Message.time)."""
    usage_input = models.PositiveBigIntegerField(null=True, blank=True)
    usage_cache_read = models.PositiveBigIntegerField(null=True, blank=True)
    usage_cache_write = models.PositiveBigIntegerField(null=True, blank=True)
    usage_output = models.PositiveBigIntegerField(null=True, blank=True)
    usage_cache_write_1h = models.PositiveBigIntegerField(null=True, blank=True)
    """Of usage_cache_write, the 1-hour cache writes (contextsim.model.Usage)."""
    # Nullable: SQLite adds a nullable column in place, where another would rebuild the
    # table and drop its search triggers.
    usage_model = models.CharField(max_length=200, null=True, blank=True)
    """The model that answered, where the log says per response (None or "": the
    run's)."""
    source = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="message_run_index_unique")
        ]
        # Whether a run's log gave times is asked on every dashboard request: found in
        # the index, not by reading every message of a long run.
        indexes = [models.Index(fields=["run", "timestamp"], name="message_run_time")]

    @property
    def measured_context(self) -> int | None:
        if self.usage_input is None:
            return None
        return self.usage_input + (self.usage_cache_read or 0) + (self.usage_cache_write or 0)


class RunSkeleton(models.Model):
    """A run's skeleton under one estimator (counts and structure, no text) at one of
    its revisions, stored by the import or a job (webapp.store.actions) so that every
    simulation starts without reading or tokenizing text; a skeleton of another
    revision than the run's is not read."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="skeletons")
    estimator = models.CharField(max_length=40)
    data = models.JSONField()
    revision = models.PositiveIntegerField(default=0)
    """The run's revision the skeleton was built from."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "estimator"], name="skeleton_run_estimator")
        ]


class RunShares(models.Model):
    """Where a run's context went over all its requests, as its dashboard shows it by
    default (as_logged, reconciled: contextsim.analysis.context_shares), at one of its
    revisions: what the overview adds up across runs. Stored by a job
    (webapp.store.actions.shares); a form of another revision or layout is not read."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="context_shares")
    data = models.JSONField()
    revision = models.PositiveIntegerField(default=0)
    """The run's revision the shares were computed from."""


class EstimatorReport(models.Model):
    """A run's estimator comparison by script against one reference tokenizer: it reads
    and tokenizes the run's whole text, so it is computed once per revision and kept
    (by a job: webapp.store.actions.derivation.store_report)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="estimator_reports")
    reference = models.CharField(max_length=20)
    data = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)
    revision = models.PositiveIntegerField(default=0)
    """The run's revision the report was computed from (a report of another is not
    read)."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "reference"], name="report_run_reference")
        ]


class CustomRates(models.Model):
    """A `custom` estimator: per-script rates fitted on a run's measured usage. Its
    estimator name, `custom-<public id>`, is what query strings and skeletons use."""

    public_id = models.CharField(max_length=16, unique=True, default=new_public_id)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    label = models.CharField(max_length=300)
    rates = models.JSONField()
    source_run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL)
    error_before = models.JSONField(default=dict)
    error_after = models.FloatField(default=0.0)
    requests = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)

    @property
    def estimator_name(self) -> str:
        return f"custom-{self.public_id}"


class Sweep(models.Model):
    """A what-if sweep: configurations (policy x budget, see contextsim.analysis.sweep.Config)
    over a set of runs, one cell per (run, configuration), each computed by a worker.
    Private to its owner."""

    public_id = models.CharField(max_length=16, unique=True, default=new_public_id)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    title = models.CharField(max_length=300)
    estimator = models.CharField(max_length=40)
    hard_limit = models.PositiveBigIntegerField()
    configs = models.JSONField()
    runs = models.ManyToManyField(Run, related_name="sweeps")
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.title


class SweepCell(Job):
    """One (run, configuration) of a sweep: its outcome (contextsim.analysis.sweep.Outcome as a
    dict) once a worker has simulated it, or the error that stopped it."""

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="cells")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    config = models.PositiveIntegerField()
    outcome = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["sweep", "run", "config"], name="cell_unique")
        ]
        indexes = [models.Index(fields=["status", "lease_until"], name="cell_lease")]


class Tuning(models.Model):
    """A search of context mechanisms' settings over a set of runs (issue 35,
    contextsim.analysis.tuning): one cell per (run, mechanism), each searched by a
    worker; `spaces` holds each mechanism's grid, fixed when it was made (for the
    smallest window of its runs), so that every cell searches the same points. Private
    to its owner."""

    public_id = models.CharField(max_length=16, unique=True, default=new_public_id)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    title = models.CharField(max_length=300)
    estimator = models.CharField(max_length=40)
    spaces = models.JSONField()
    """{mechanism: {"policy": name, "label": text, "dimensions": [[name, values, ordered]]}}"""
    runs = models.ManyToManyField(Run, related_name="tunings")
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    finished = models.DateTimeField(null=True, blank=True)
    cancelled = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.title


class TuningCell(Job):
    """One (run, mechanism) of a tuning: once searched, `result` holds the run's
    outcome at every grid point (in grid order), as it was really (as_logged) and as
    the simulation reproduces it (its own policy), and the simulations it took."""

    tuning = models.ForeignKey(Tuning, on_delete=models.CASCADE, related_name="cells")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    mechanism = models.CharField(max_length=60)
    result = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tuning", "run", "mechanism"], name="tuning_cell_unique"
            )
        ]
        indexes = [models.Index(fields=["status", "lease_until"], name="tuning_cell_lease")]


def new_share_token() -> str:
    """An unguessable share token (144 random bits)."""
    return secrets.token_urlsafe(18)


class ShareLink(models.Model):
    """Read-only access to one run for whoever holds the link, until it is revoked."""

    token = models.CharField(max_length=40, unique=True, default=new_share_token)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="shares")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    created = models.DateTimeField(auto_now_add=True)
    revoked = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]


class AppendReceipt(models.Model):
    """The answer to an append that carried an Idempotency-Key: a retry with the same
    key gets this answer again and changes nothing."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="receipts")
    key = models.CharField(max_length=200)
    answer = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="receipt_per_key")]


class ApiToken(models.Model):
    """A key for the HTTP API (live streaming). Only its SHA-256 is kept; the key is
    shown once, when it is created."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12)
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]


class CapturedCall(models.Model):
    """One model call seen by the capture proxy: what the messages of its run do not
    hold. The request's messages, the response and its usage are the run's messages
    (request `step`); kept here are the call's parameters (the body less its messages,
    system prompt, instructions, tools and input), the upstream's status and error,
    and its timing. Headers are never kept: they carry the provider's keys."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, null=True, blank=True, related_name="captured_calls"
    )
    step = models.PositiveIntegerField(null=True, blank=True)
    session = models.CharField(max_length=200, blank=True, db_index=True)
    provider = models.CharField(max_length=20)
    endpoint = models.CharField(max_length=40)
    model = models.CharField(max_length=120, blank=True)
    params = models.JSONField(default=dict, blank=True)
    streamed = models.BooleanField(default=False)
    status = models.PositiveSmallIntegerField(default=0)
    """The upstream's HTTP status; 0 when it gave no answer (timeout, reset)."""
    error = models.TextField(blank=True)
    response_id = models.CharField(max_length=200, blank=True, db_index=True)
    started = models.DateTimeField()
    first_byte_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["started", "id"]


class SpanGroup(models.Model):
    """The model call spans of one conversation (its ``gen_ai.conversation.id`` or
    ``session.id``, else its trace id) received over OTLP for an owner, and the live run
    kept in step with them. Locked while a batch of its spans is stored, so concurrent
    batches of one conversation are applied one after the other."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    key = models.CharField(max_length=300)
    run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    version = models.PositiveIntegerField(default=0)
    """How many batches stored spans of it (0: none stored): a receiver that followed
    it at one version knows that nothing was stored since while it is unchanged."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "key"], name="span_group_per_owner")
        ]


class ReceivedSpan(models.Model):
    """One model call span received over OTLP, compressed (webapp.ingest.otlp.wire.packed):
    its group's run is rebuilt from these. Stored once per owner: an exporter's retry
    adds nothing."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    group = models.ForeignKey(SpanGroup, on_delete=models.CASCADE, related_name="spans")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    start = models.BigIntegerField()
    """When the call started, in nanoseconds since the epoch."""
    parent_id = models.CharField(max_length=16, blank=True)
    """Its parent span's id: a call that names no conversation joins the one its
    parent names, even when the parent arrives later (NamedSpan)."""
    packed = models.CharField(max_length=8)
    """How `body` holds the span: "protobuf" (as an OTLP protobuf body serialized it)
    or "json" (OTLP JSON, ids in hex), zlib-compressed either way."""
    body = models.BinaryField()
    received = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "trace_id", "span_id"], name="span_once_per_owner"
            )
        ]
        indexes = [models.Index(fields=["group", "start"], name="span_group_start")]


class ReceivedEvent(models.Model):
    """A GenAI message event received over OTLP as a log record (the logs signal), kept
    as the span event it stands for (OTLP JSON) until and after its span arrives: the
    span's call is read with it (contextsim.systems.otel.events.log_events). Stored once
    per owner: an exporter's retry adds nothing."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    event = models.JSONField()
    digest = models.CharField(max_length=64)
    """A hash of the record's span, time and content: the same record sent twice has
    the same."""
    received = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "digest"], name="event_once_per_owner")
        ]
        indexes = [
            models.Index(fields=["owner", "trace_id", "span_id"], name="event_span"),
        ]


class NamedSpan(models.Model):
    """A span received over OTLP that names its conversation (an agent's invoke span
    names it, its model calls often not): a call whose parent it is, received before
    or after it, is in that conversation."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    conversation = models.CharField(max_length=300)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "trace_id", "span_id"], name="named_span_once_per_owner"
            )
        ]


class WatchedFile(models.Model):
    """A log file in a folder the owner asked to be watched (webapp.ingest.watch), as it
    was when last read: a file of the same size and time is not read again, across
    restarts; one that could not be read keeps why."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="watched_files"
    )
    path = models.CharField(max_length=1000)
    agent = models.CharField(max_length=30, blank=True)
    """Whose folder it is in ("claude-code", "codex", "gemini-cli"; "" for a folder given)."""
    size = models.BigIntegerField(default=0)
    mtime = models.FloatField(default=0)
    runs = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    read = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "path"], name="watched_file_unique")
        ]
