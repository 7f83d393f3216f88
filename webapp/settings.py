"""The one settings module. Everything is read from the environment, with safe local
defaults: SQLite, a file-system Celery broker, DEBUG off, private runs.

DATABASE_URL       e.g. postgres://user@127.0.0.1:5432/contextsim (default: SQLite in var/)
CELERY_BROKER_URL  e.g. redis://127.0.0.1:6379/0 or amqp://guest@127.0.0.1// (default:
                   a file-system broker under var/, which needs no server)
SECRET_KEY         required when DEBUG is off and the server is not local
DEBUG              1 / 0 (default 0)
ALLOWED_HOSTS      comma separated (default: localhost, 127.0.0.1)
CONTEXTSIM_DATA_DIR  where SQLite, uploads and the file broker live (default: ./var)
CONTEXTSIM_LOCAL_USER  when set, every visitor is signed in as this user (single-user
                   local mode); unset for a shared deployment (`serve` on loopback
                   implies it for requests from this machine only)
CONTEXTSIM_HTTPS   1 behind TLS: trusts X-Forwarded-Proto, Secure cookies, HSTS, https
                   redirect (each also alone: CONTEXTSIM_BEHIND_PROXY, _SECURE_COOKIES,
                   _SSL_REDIRECT, _HSTS_SECONDS, _HSTS_SUBDOMAINS, _HSTS_PRELOAD)
CSRF_TRUSTED_ORIGINS  comma separated, e.g. https://contextsim.example.org
CONTEXTSIM_JOB_LEASE  seconds a worker's hold on a job lasts unrenewed (default 60): a
                   job whose worker died is taken up again this long after
CONTEXTSIM_SQLITE_TIMEOUT  seconds a write waits for another to end (default 30)
CONTEXTSIM_JOB_ATTEMPTS  times a job is tried before it fails as "worker lost" (3)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from webapp.access.static_headers import add_headers as add_static_headers

BASE_DIR = Path(__file__).resolve().parent.parent


TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off", ""})


def env_bool(name: str, default: bool) -> bool:
    """The environment variable `name` as a boolean, `default` when unset. A value that
    is neither true nor false (a typo such as "ture") stops the start with the variable
    named, rather than silently meaning false."""
    value = os.environ.get(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word not in TRUE | FALSE:
        raise ImproperlyConfigured(
            f"{name}={value!r}: expected one of {', '.join(sorted(TRUE))} or "
            f"{', '.join(sorted(FALSE - {''}))}"
        )
    return word in TRUE


DATA_DIR = Path(os.environ.get("CONTEXTSIM_DATA_DIR", BASE_DIR / "var"))
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    # A per-installation key kept beside the local database: safe by default, stable
    # across restarts, and never the same on two machines.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        import secrets

        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "webapp",
    "csp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "webapp.runtime.full_disk.full_disk_middleware",
    "webapp.access.local_mode.upload_size_middleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "webapp.access.local_mode.local_user_middleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "webapp.access.local_mode.no_store_middleware",
    "django_ratelimit.middleware.RatelimitMiddleware",
    "csp.middleware.CSPMiddleware",
]

# Content-Security-Policy (django-csp): scripts only from this site (no inline script,
# no eval); styles may be inline because plotly.js and htmx set them on elements.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Rate limits (django-ratelimit, counted in the cache: one process's memory by default,
# shared when CACHE_URL names Redis): sign-in attempts and bad API keys per address.
CACHES = {
    "default": (
        {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": os.environ["CACHE_URL"],
            # A Redis that does not answer within a second counts as down.
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1},
        }
        if os.environ.get("CACHE_URL", "").startswith("redis")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
# Redis down: the limits let requests through (logged by django_redis) instead of
# failing every request that counts (django-redis's ignored exceptions, read as
# django-ratelimit's fail-open).
DJANGO_REDIS_IGNORE_EXCEPTIONS = True
DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
RATELIMIT_FAIL_OPEN = True
RATE_SIGN_IN = os.environ.get("CONTEXTSIM_RATE_SIGN_IN", "10/m")
RATE_BAD_API_KEYS = os.environ.get("CONTEXTSIM_RATE_BAD_API_KEYS", "20/m")
RATE_RETRY_AFTER = 60
"""Seconds a limited visitor is told to wait (the limits count per minute)."""
RATELIMIT_VIEW = "webapp.access.views.limits.too_many"
# One web process (serve) counts in its own memory, which is all it needs; scaled out,
# set CACHE_URL so every process counts together.
SILENCED_SYSTEM_CHECKS = [] if os.environ.get("CACHE_URL") else ["django_ratelimit.W001"]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "NAME": "django",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "builtins": ["template_partials.templatetags.partials"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'contextsim.sqlite3'}"),
        conn_max_age=60,
        # A kept connection the server dropped (a restart, a failover) is found before
        # it is used and replaced: the threads of the proxy and the workers keep theirs.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # WAL lets the web server read while a worker imports; the timeout rides out
    # short write locks instead of failing with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": float(os.environ.get("CONTEXTSIM_SQLITE_TIMEOUT", "30")),
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs"
LOGOUT_REDIRECT_URL = "runs"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
# In development serve straight from the source folders; otherwise from STATIC_ROOT,
# where `collectstatic` (run by `serve`) leaves gzip and brotli copies.
WHITENOISE_USE_FINDERS = DEBUG or env_bool("CONTEXTSIM_STATIC_FROM_SOURCE", False)
# Unversioned names: cache for ten minutes, so plotly.js (1.5 MB, static/vendor) is
# fetched and compiled once per visit, while an upgrade still shows within minutes.
WHITENOISE_MAX_AGE = 600
WHITENOISE_ADD_HEADERS_FUNCTION = add_static_headers
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
]
STORAGES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
MEDIA_ROOT = DATA_DIR / "media"
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# Uploads in S3-compatible object storage, so that workers on other machines can read
# them (django-storages; credentials from boto3's usual AWS_* variables). A file read
# back is spooled to disk past FILE_UPLOAD_MAX_MEMORY_SIZE: django-storages' default
# keeps the whole object in memory.
S3_BUCKET = os.environ.get("CONTEXTSIM_S3_BUCKET", "")
if S3_BUCKET:
    STORAGES["default"] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": S3_BUCKET,
            "endpoint_url": os.environ.get("CONTEXTSIM_S3_ENDPOINT_URL") or None,
            "region_name": os.environ.get("CONTEXTSIM_S3_REGION") or None,
            "location": os.environ.get("CONTEXTSIM_S3_PREFIX", ""),
            "file_overwrite": False,
            "default_acl": None,
            "max_memory_size": FILE_UPLOAD_MAX_MEMORY_SIZE,
        },
    }
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("CONTEXTSIM_MAX_REQUEST_BYTES", 20 * 1024 * 1024))
"""The largest body a page, the API or the OTLP receiver reads (webapp.runtime.doors)."""
MAX_PROXY_REQUEST_BYTES = int(
    os.environ.get("CONTEXTSIM_MAX_PROXY_REQUEST_BYTES", 64 * 1024 * 1024)
)
"""The largest model call the capture proxy forwards: above the providers' own limits
(Anthropic's Messages API takes at most 32 MB a request)."""
MAX_PROXY_RECORD_BYTES = int(os.environ.get("CONTEXTSIM_MAX_PROXY_RECORD_BYTES", 64 * 1024 * 1024))
"""The most of an upstream's answer the capture proxy records (as sent, and once
inflated): the client still gets every byte; what is recorded is cut there, saying so."""
# The capture proxy's upstreams (webapp.ingest.proxy.views), and how long it waits between two
# pieces of an answer (a model thinking before it writes) before giving up.
UPSTREAM_ANTHROPIC = os.environ.get("CONTEXTSIM_UPSTREAM_ANTHROPIC", "https://api.anthropic.com")
UPSTREAM_OPENAI = os.environ.get("CONTEXTSIM_UPSTREAM_OPENAI", "https://api.openai.com")
UPSTREAM_GEMINI = os.environ.get(
    "CONTEXTSIM_UPSTREAM_GEMINI", "https://generativelanguage.googleapis.com"
)
UPSTREAM_READ_TIMEOUT = float(os.environ.get("CONTEXTSIM_UPSTREAM_READ_TIMEOUT", 600))

MAX_UPLOAD_BYTES = int(os.environ.get("CONTEXTSIM_MAX_UPLOAD_BYTES", 512 * 1024 * 1024))
MAX_SWEEP_CELLS = int(os.environ.get("CONTEXTSIM_MAX_SWEEP_CELLS", 2_000))
"""Runs x configurations in one sweep."""
MAX_QUEUED_CELLS = int(os.environ.get("CONTEXTSIM_MAX_QUEUED_CELLS", 10_000))
"""Cells one person's sweeps may have waiting at once."""
MAX_PLAYGROUND_CHARS = int(os.environ.get("CONTEXTSIM_MAX_PLAYGROUND_CHARS", 2_000_000))
"""Characters the estimator playground counts for a signed-in person; a visitor who is
not signed in gets a tenth of it (the playground is open to anyone)."""

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False

# Behind TLS (a reverse proxy that terminates it): CONTEXTSIM_HTTPS=1 turns on all that
# follows; each can also be set on its own. `check --deploy` is then clean.
HTTPS = env_bool("CONTEXTSIM_HTTPS", False)
BEHIND_PROXY = env_bool("CONTEXTSIM_BEHIND_PROXY", HTTPS)
"""A reverse proxy is in front: its X-Forwarded-Proto and, from the addresses in
CONTEXTSIM_FORWARDED_ALLOW_IPS, its X-Forwarded-For are believed (webapp.runtime.server)."""
if BEHIND_PROXY:
    # Trust the proxy's word that the visitor used https (share links say https://).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("CONTEXTSIM_SECURE_COOKIES", HTTPS)
SECURE_SSL_REDIRECT = env_bool("CONTEXTSIM_SSL_REDIRECT", HTTPS)
SECURE_HSTS_SECONDS = int(os.environ.get("CONTEXTSIM_HSTS_SECONDS", 31_536_000 if HTTPS else 0))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CONTEXTSIM_HSTS_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("CONTEXTSIM_HSTS_PRELOAD", HTTPS)
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

LOCAL_USER = os.environ.get("CONTEXTSIM_LOCAL_USER", "")
LOCAL_USER_EXPLICIT = bool(LOCAL_USER)
"""Configured by the operator: every request is the local user (webapp.access.local_mode).
Implied by `serve` on loopback: only plainly local requests are."""

JOB_LEASE_SECONDS = max(2, int(os.environ.get("CONTEXTSIM_JOB_LEASE", "60")))
JOB_ATTEMPTS = max(1, int(os.environ.get("CONTEXTSIM_JOB_ATTEMPTS", "3")))

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue = DATA_DIR / "broker"
    for sub in ("queue", "processed", "control"):
        (_queue / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue / "queue"),
        "data_folder_out": str(_queue / "queue"),
        "processed_folder": str(_queue / "processed"),
        "control_folder": str(_queue / "control"),
        "store_processed": False,
        # Kombu polls the folder once a second by default: a sweep of many short
        # tasks would wait on the poll rather than compute.
        "polling_interval": 0.1,
    }
    # The file-system transport has no fan-out, which remote control needs.
    CELERY_WORKER_ENABLE_REMOTE_CONTROL = False
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # Redis gives an unacknowledged task back after this long: as long as a job's
    # lease, so a lost worker's prefetched tasks return as soon as its jobs would.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": JOB_LEASE_SECONDS}
CELERY_BEAT_SCHEDULE = {
    "reap-jobs": {"task": "webapp.tasks.reap_jobs", "schedule": JOB_LEASE_SECONDS / 2},
    # What a view had to make in memory (an idle live run's skeletons, an older
    # layout's) is stored by this job, never by the view (reads never write).
    "derive-pending": {"task": "webapp.tasks.derive_pending", "schedule": 30},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # httpx logs every request's URL at INFO: the capture proxy's upstream URLs carry
    # the query a client sent, keys included (`?key=...`).
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}
