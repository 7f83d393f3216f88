"""The Django application of contextsim (its models, templates and commands)."""

from django.apps import AppConfig


class WebappConfig(AppConfig):
    name = "webapp"
    verbose_name = "contextsim"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_logged_out

        from webapp.access import grants as share_grants

        user_logged_in.connect(share_grants.drop, dispatch_uid="drop-share-grants-in")
        user_logged_out.connect(share_grants.drop, dispatch_uid="drop-share-grants-out")
