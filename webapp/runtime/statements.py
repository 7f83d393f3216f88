"""Statements written out from the models' metadata for the hottest paths: a key's
owner, an append, rows updated in batches. Building the SQL of a query through the ORM
took 0.1-0.5 ms each, most of an append's own time; these are built once per process
(and database vendor) and run as they are. What they read comes back as the ORM gives it:
each value through the same converters (aware datetimes, booleans), rows as model
instances whose other fields are deferred (read when first used, as with `.only()`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Field, ForeignKey, IntegerField, Model
from django.db.models.expressions import Col

M = TypeVar("M", bound=Model)


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)
    assert isinstance(field, Field)
    return field


def _column(model: type[Model], name: str) -> str:
    """The quoted column of `model`'s field `name`."""
    return connection.ops.quote_name(str(_field(model, name).column))


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@cache
def _select(
    vendor: str, model: type[Model], fields: tuple[str, ...], where: tuple[str, ...], lock: bool
) -> str:
    columns = ", ".join(_column(model, f) for f in fields)
    tests = " AND ".join(f"{_column(model, f)} = %s" for f in where)
    sql = f"SELECT {columns} FROM {_table(model)} WHERE {tests}"
    return sql + " FOR UPDATE" if lock and connection.features.has_select_for_update else sql


def read(
    model: type[M],
    fields: Sequence[str],
    where: dict[str, Any],
    *,
    lock: bool = False,
) -> M | None:
    """The one row of `model` whose fields equal `where` (by `=`, ANDed), as an
    instance with `fields` loaded, or None; `lock` takes its row lock where the
    database has them (SELECT ... FOR UPDATE), as select_for_update does. Managers'
    filters do not apply: say them in `where`."""
    sql = _select(connection.vendor, model, tuple(fields), tuple(where), lock)
    with connection.cursor() as cursor:
        values = [_field(model, f).get_db_prep_value(v, connection) for f, v in where.items()]
        cursor.execute(sql, values)
        row = cursor.fetchone()
    if row is None:
        return None
    meta = model._meta
    loaded = {}
    for name, value in zip(fields, row, strict=True):
        field = _field(model, name)
        loaded[field.attname] = _converted(field, value)
    # from_db takes the values in the model's field order.
    attnames = [f.attname for f in meta.concrete_fields if f.attname in loaded]
    return model.from_db(connection.alias, attnames, [loaded[a] for a in attnames])


def _converted(field: Field[Any, Any], value: Any) -> Any:
    """`value` as read by the ORM: the backend's and the field's converters."""
    if value is None:
        return None
    column = Col(field.model._meta.db_table, field)
    for convert in connection.ops.get_db_converters(column) + field.get_db_converters(connection):
        value = convert(value, column, connection)
    return value


@cache
def _update(vendor: str, model: type[Model], fields: tuple[str, ...]) -> str:
    assigned = ", ".join(f"{_column(model, f)} = %s" for f in fields)
    key = _column(model, model._meta.pk.name)
    return f"UPDATE {_table(model)} SET {assigned} WHERE {key} = %s"


def update_rows(objects: Sequence[Model], fields: Sequence[str]) -> None:
    """Write `fields` of each of `objects` (rows of one model) to its row: one
    statement run for every row by the driver. Django's bulk_update builds one CASE
    per field and row, most of a batch's time at hundreds of rows."""
    if not objects:
        return
    model = type(objects[0])
    columns = [_field(model, f) for f in fields]
    sql = _update(connection.vendor, model, tuple(fields))
    # Whole numbers and keys go to the driver as they are; other values are prepared
    # by their fields, once per value object (a batch's rows share their time).
    plain = [isinstance(c, IntegerField | ForeignKey) for c in columns]
    prepared: list[dict[int, Any]] = [{} for _ in columns]
    params = []
    for o in objects:
        row = []
        for c, is_plain, seen in zip(columns, plain, prepared, strict=True):
            value = getattr(o, c.attname)
            if not is_plain:
                if id(value) not in seen:
                    seen[id(value)] = c.get_db_prep_save(value, connection)
                value = seen[id(value)]
            row.append(value)
        params.append((*row, o.pk))
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


@cache
def _delete(vendor: str, model: type[Model], where: str) -> str:
    return f"DELETE FROM {_table(model)} WHERE {_column(model, where)} = %s"


def delete(model: type[Model], where: str, value: Any) -> None:
    """Delete the rows of `model` whose field `where` is `value`: for models no other
    row refers to and no signal watches (nothing to collect first)."""
    with connection.cursor() as cursor:
        cursor.execute(_delete(connection.vendor, model, where), [value])
