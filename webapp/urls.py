"""The site's routes: each feature's views (webapp/<feature>/views.py)."""

from django.contrib.auth import views as auth_views
from django.urls import path
from django_ratelimit.decorators import ratelimit

from webapp.access.views import limits, sharing, tokens
from webapp.dashboard import views as dashboard
from webapp.estimators import views as estimators
from webapp.fleet import views as collections
from webapp.ingest.live import views as api
from webapp.ingest.otlp import views as otlp
from webapp.ingest.uploads import views as uploads
from webapp.overview import views as overview
from webapp.runs import views as runs
from webapp.sweeps import views as sweeps
from webapp.tuning import views as tunings

urlpatterns = [
    path("", runs.runs_list, name="runs"),
    path("upload/", uploads.upload, name="upload"),
    path("imports/<str:public_id>/", uploads.import_status, name="import-status"),
    path("imports/<str:public_id>/again/", uploads.import_again, name="import-again"),
    path("runs/<str:public_id>/edit/", runs.edit_run, name="run-edit"),
    path("runs/<str:public_id>/delete/", runs.delete_run, name="run-delete"),
    path("runs/<str:public_id>/", dashboard.run_dashboard, name="run"),
    path("runs/<str:public_id>/requests/", estimators.run_requests, name="run-requests"),
    path("runs/<str:public_id>/live/", dashboard.run_live, name="run-live"),
    path("runs/<str:public_id>/ledger/", dashboard.ledger, name="ledger"),
    path("runs/<str:public_id>/estimators/", estimators.run_estimators, name="run-estimators"),
    path("runs/<str:public_id>/estimators/fit/", estimators.fit_custom, name="fit-custom"),
    path("estimators/", estimators.playground, name="playground"),
    path("runs/<str:public_id>/steps/<int:step>/", dashboard.step_inspector, name="step"),
    path(
        "runs/<str:public_id>/messages/<int:index>/",
        dashboard.message_text,
        name="message-text",
    ),
    path(
        "runs/<str:public_id>/export.<str:kind>",
        dashboard.export_records,
        name="export",
    ),
    path("runs/<str:public_id>/share/", sharing.share_page, name="share"),
    path(
        "runs/<str:public_id>/share/<str:token>/revoke/",
        sharing.revoke_share,
        name="revoke-share",
    ),
    path("s/<str:token>/", sharing.open_share, name="open-share"),
    path("collections/<str:public_id>/", collections.collection, name="collection"),
    path("sessions/<str:name>/", runs.captured_session, name="captured-session"),
    path("overview/", overview.overview, name="overview"),
    path(
        "collections/<str:public_id>/frontier/",
        collections.collection_frontier,
        name="collection-frontier",
    ),
    path("sweeps/", sweeps.sweeps_list, name="sweeps"),
    path("sweeps/new/", sweeps.new_sweep, name="sweep-new"),
    path("sweeps/<str:public_id>/", sweeps.sweep_detail, name="sweep"),
    path("tunings/", tunings.tunings_list, name="tunings"),
    path("tunings/new/", tunings.new_tuning, name="tuning-new"),
    path("tunings/<str:public_id>/", tunings.tuning_detail, name="tuning"),
    path("tunings/<str:public_id>/cancel/", tunings.cancel_tuning, name="tuning-cancel"),
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", tokens.revoke_token, name="revoke-token"),
    path("api/runs/", api.runs, name="api-runs"),
    path("api/runs/<str:public_id>/", api.run_figures, name="api-run"),
    path("api/runs/<str:public_id>/messages/", api.append, name="api-append"),
    # The OTLP/HTTP trace and logs receivers, at the exporters' default paths and under /otlp/.
    path("v1/traces", otlp.traces, name="otlp-traces"),
    path("otlp/v1/traces", otlp.traces, name="otlp-traces-prefixed"),
    path("v1/logs", otlp.logs, name="otlp-logs"),
    path("otlp/v1/logs", otlp.logs, name="otlp-logs-prefixed"),
    path(
        "login/",
        ratelimit(key="post:username", rate=limits.sign_in_rate, method="POST", block=True)(
            ratelimit(key="ip", rate=limits.sign_in_rate, method="POST", block=True)(
                auth_views.LoginView.as_view()
            )
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
