from django.contrib.auth import views as auth_views
from django.urls import path

from webapp import (
    views,
    views_api,
    views_dashboard,
    views_estimators,
    views_fleet,
    views_sharing,
    views_sweeps,
    views_tokens,
)

urlpatterns = [
    path("", views.runs_list, name="runs"),
    path("upload/", views.upload, name="upload"),
    path("imports/<str:public_id>/", views.import_status, name="import-status"),
    path("runs/<str:public_id>/", views_dashboard.run_dashboard, name="run"),
    path("runs/<str:public_id>/requests/", views.run_detail, name="run-requests"),
    path("runs/<str:public_id>/live/", views_dashboard.run_live, name="run-live"),
    path("runs/<str:public_id>/ledger/", views_dashboard.ledger, name="ledger"),
    path(
        "runs/<str:public_id>/estimators/", views_estimators.run_estimators, name="run-estimators"
    ),
    path("runs/<str:public_id>/estimators/fit/", views_estimators.fit_custom, name="fit-custom"),
    path("estimators/", views_estimators.playground, name="playground"),
    path("runs/<str:public_id>/steps/<int:step>/", views_dashboard.step_inspector, name="step"),
    path(
        "runs/<str:public_id>/messages/<int:index>/",
        views_dashboard.message_text,
        name="message-text",
    ),
    path(
        "runs/<str:public_id>/export.<str:kind>",
        views_dashboard.export_records,
        name="export",
    ),
    path("runs/<str:public_id>/share/", views_sharing.share_page, name="share"),
    path(
        "runs/<str:public_id>/share/<str:token>/revoke/",
        views_sharing.revoke_share,
        name="revoke-share",
    ),
    path("s/<str:token>/", views_sharing.open_share, name="open-share"),
    path("collections/<str:public_id>/", views_fleet.collection, name="collection"),
    path("sweeps/", views_sweeps.sweeps_list, name="sweeps"),
    path("sweeps/new/", views_sweeps.new_sweep, name="sweep-new"),
    path("sweeps/<str:public_id>/", views_sweeps.sweep_detail, name="sweep"),
    path("tokens/", views_tokens.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", views_tokens.revoke_token, name="revoke-token"),
    path("api/runs/", views_api.create_runs, name="api-runs"),
    path("api/runs/<str:public_id>/", views_api.run_figures, name="api-run"),
    path("api/runs/<str:public_id>/messages/", views_api.append, name="api-append"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
