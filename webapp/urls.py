from django.contrib.auth import views as auth_views
from django.urls import path

from webapp import views

urlpatterns = [
    path("", views.runs_list, name="runs"),
    path("upload/", views.upload, name="upload"),
    path("imports/<str:public_id>/", views.import_status, name="import-status"),
    path("runs/<str:public_id>/", views.run_detail, name="run"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
