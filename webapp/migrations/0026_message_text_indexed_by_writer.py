"""SQLite's full-text index of message text is filled by the code that writes messages
(webapp.store.actions.rows), not by a trigger that walked each new row's JSON again
in SQL (half the time of writing a batch). Deletes and edits still go by trigger."""

import importlib

from django.db import migrations

SEARCH = importlib.import_module("webapp.migrations.0014_message_search")


def _drop(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS webapp_message_fts_insert")


def _restore(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(
            "CREATE TRIGGER webapp_message_fts_insert AFTER INSERT ON webapp_message "
            f"BEGIN {SEARCH.NEW_ROW}END"
        )


class Migration(migrations.Migration):
    dependencies = [("webapp", "0025_span_versions_and_packed_spans")]

    operations = [migrations.RunPython(_drop, _restore)]
