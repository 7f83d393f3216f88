import json
import zlib

from django.db import migrations, models
from django.db.models import Count


def count_batches(apps, schema_editor):
    """Groups stored before get a version that is not 0 (0 says: nothing stored)."""
    SpanGroup = apps.get_model("webapp", "SpanGroup")
    stored = SpanGroup.objects.annotate(n=Count("spans")).filter(n__gt=0)
    for group in stored.only("pk"):
        SpanGroup.objects.filter(pk=group.pk).update(version=group.n)


def pack_spans(apps, schema_editor):
    """Spans kept as JSON before are kept compressed (webapp.ingest.otlp.wire.packed)."""
    ReceivedSpan = apps.get_model("webapp", "ReceivedSpan")
    for pk, span in ReceivedSpan.objects.values_list("pk", "span").iterator():
        text = json.dumps(span, separators=(",", ":"), ensure_ascii=False)
        body = zlib.compress(text.encode(), 1)
        ReceivedSpan.objects.filter(pk=pk).update(packed="json", body=body)


class Migration(migrations.Migration):
    dependencies = [("webapp", "0024_received_spans")]

    operations = [
        migrations.AddField(
            model_name="spangroup",
            name="version",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_batches, migrations.RunPython.noop),
        migrations.AddField(
            model_name="receivedspan",
            name="packed",
            field=models.CharField(default="json", max_length=8),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="receivedspan",
            name="body",
            field=models.BinaryField(default=b""),
            preserve_default=False,
        ),
        migrations.RunPython(pack_spans, migrations.RunPython.noop),
        migrations.RemoveField(model_name="receivedspan", name="span"),
    ]
