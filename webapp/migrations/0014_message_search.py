"""Full-text search over message text: an FTS5 table kept by triggers on SQLite, a GIN
expression index on PostgreSQL (selectors.search reads them)."""

from django.db import migrations

# The strings of a message's parts, but not their structure (type names, ids).
SQLITE_TEXT = (
    "SELECT group_concat(value, ' ') FROM json_tree({row}.parts) "
    "WHERE type = 'text' AND key NOT IN ('type', 'id', 'call_id', 'media_type')"
)
NEW_ROW = (
    "INSERT INTO webapp_message_fts(rowid, body) "
    f"VALUES (new.id, ({SQLITE_TEXT.format(row='new')})); "
)
SQLITE_UP = [
    "CREATE VIRTUAL TABLE webapp_message_fts USING fts5(body, tokenize = 'unicode61')",
    f"CREATE TRIGGER webapp_message_fts_insert AFTER INSERT ON webapp_message BEGIN {NEW_ROW}END",
    "CREATE TRIGGER webapp_message_fts_delete AFTER DELETE ON webapp_message BEGIN "
    "DELETE FROM webapp_message_fts WHERE rowid = old.id; END",
    "CREATE TRIGGER webapp_message_fts_update AFTER UPDATE OF parts ON webapp_message BEGIN "
    "DELETE FROM webapp_message_fts WHERE rowid = old.id; "
    f"{NEW_ROW}END",
    "INSERT INTO webapp_message_fts(rowid, body) "
    f"SELECT m.id, ({SQLITE_TEXT.format(row='m')}) FROM webapp_message m",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS webapp_message_fts_insert",
    "DROP TRIGGER IF EXISTS webapp_message_fts_delete",
    "DROP TRIGGER IF EXISTS webapp_message_fts_update",
    "DROP TABLE IF EXISTS webapp_message_fts",
]
POSTGRES_UP = [
    "CREATE INDEX webapp_message_search ON webapp_message "
    "USING GIN (jsonb_to_tsvector('simple'::regconfig, parts, '[\"string\"]'))"
]
POSTGRES_DOWN = ["DROP INDEX IF EXISTS webapp_message_search"]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor):
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("webapp", "0013_run_management")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_UP, "postgresql": POSTGRES_UP}),
            _run({"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN}),
        )
    ]
