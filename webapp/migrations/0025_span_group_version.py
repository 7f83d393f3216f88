from django.db import migrations, models
from django.db.models import Count


def count_batches(apps, schema_editor):
    """Groups stored before get a version that is not 0 (0 says: nothing stored)."""
    SpanGroup = apps.get_model("webapp", "SpanGroup")
    stored = SpanGroup.objects.annotate(n=Count("spans")).filter(n__gt=0)
    for group in stored.only("pk"):
        SpanGroup.objects.filter(pk=group.pk).update(version=group.n)


class Migration(migrations.Migration):
    dependencies = [("webapp", "0024_received_spans")]

    operations = [
        migrations.AddField(
            model_name="spangroup",
            name="version",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_batches, migrations.RunPython.noop),
    ]
