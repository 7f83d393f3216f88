"""Messages lose the index of their run alone: the unique (run, index) one serves every
lookup by run, and a big import wrote the third index for each of its rows.

Only the index is dropped: letting Django alter the field would copy the whole table on
SQLite (and drop the search index's triggers with it)."""

import django.db.models.deletion
from django.db import migrations, models

INDEX = "webapp_message_run_id_b54a7227"


class Migration(migrations.Migration):
    dependencies = [
        ("webapp", "0028_span_parents"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="message",
                    name="run",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="messages",
                        to="webapp.run",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{INDEX}"',
                    f'CREATE INDEX "{INDEX}" ON "webapp_message" ("run_id")',
                ),
            ],
        ),
    ]
