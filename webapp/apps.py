"""The Django application of contextsim (its models, templates and commands)."""

from django.apps import AppConfig


class WebappConfig(AppConfig):
    name = "webapp"
    verbose_name = "contextsim"
    default_auto_field = "django.db.models.BigAutoField"
