"""The demo runs state the seed incident's window (1,000,000 tokens), as newly
generated ones do, so their default hard limit stays the incident's."""

from django.db import migrations


def state_window(apps, schema_editor):
    Run = apps.get_model("webapp", "Run")
    Run.objects.filter(demo_key__startswith="demo:", context_window__isnull=True).update(
        context_window=1_000_000
    )


class Migration(migrations.Migration):
    dependencies = [("webapp", "0009_run_window_and_version")]
    operations = [migrations.RunPython(state_window, migrations.RunPython.noop)]
