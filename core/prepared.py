"""ORM queries compiled to SQL once and run many times: the portal's hot paths.

Building and compiling a queryset costs more Python time than PostgreSQL takes
to run it on the portal's hot paths (a profile of next-task + submit put about
half the CPU in the ORM). A ``Prepared`` query is written as an ordinary
queryset whose run-time values are ``Param``s; it is compiled once per thread
and database connection, and each run binds the values (through the fields'
own ``get_db_prep_value``) and applies the ORM's converters to the rows. The
SQL is the ORM's, so lookups, subqueries and row locks stay the ORM's.

On PostgreSQL the query runs on a server-binding cursor, so psycopg prepares it
on the server after ``prepare_threshold`` runs (``DATABASE_PREPARE_THRESHOLD``
in web/settings.py; off when None) and PostgreSQL stops parsing it; with
``DATABASE_PLAN_CACHE_MODE`` (``force_generic_plan`` by default) it plans it once
per connection too, where ``auto`` would plan the state and candidate queries again
on most runs (their bind step took as long as their execution).

The hot paths' writes (a reservation's upsert, a ranking's inserts, update and delete)
are ORM calls as they are; run inside ``server_binding()`` they are bound on the
server too, so PostgreSQL parses and plans each once per connection, not on every run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import Expression, Field, QuerySet


@dataclass(frozen=True)
class _Slot:
    """Where a ``Param``'s value goes in the compiled parameters."""

    name: str
    field: Field


class Param(Expression):
    """A named value supplied when a ``Prepared`` query runs (``output_field`` says its type)."""

    def __init__(self, name: str, output_field: Field):
        super().__init__(output_field=output_field)
        self.name = name

    def as_sql(self, compiler, connection) -> tuple[str, list]:
        return "%s", [_Slot(self.name, self.output_field)]


@dataclass
class _Compiled:
    compiler: Any
    sql: str
    params: tuple
    names: list[str]


class Prepared:
    """``build()`` (a ``values()`` queryset using ``Param``s, no ``extra()``) compiled once per
    thread and connection, run with values."""

    def __init__(self, build: Callable[[], QuerySet], using: str = "default"):
        self.build, self.using = build, using
        self._local = threading.local()

    def _compiled(self, connection) -> _Compiled:
        cached = getattr(self._local, "compiled", None)
        if cached is None or cached.compiler.connection is not connection:
            query = self.build().query
            compiler = query.get_compiler(connection=connection)
            sql, params = compiler.as_sql()
            names = list(query.selected)  # a values() query: its names, in select order
            cached = self._local.compiled = _Compiled(compiler, sql, tuple(params), names)
        return cached

    def rows(self, **values: Any) -> list[dict]:
        """The rows as dicts (column name -> value), with ``values`` bound to the ``Param``s."""
        connection = connections[self.using]
        compiled = self._compiled(connection)
        params = [
            p.field.get_db_prep_value(values[p.name], connection) if isinstance(p, _Slot) else p
            for p in compiled.params
        ]
        with _cursor(connection) as cursor:
            cursor.execute(compiled.sql, params)
            fetched = cursor.fetchall()
        rows = compiled.compiler.results_iter(results=[fetched])
        return [dict(zip(compiled.names, row, strict=True)) for row in rows]

    def first(self, **values: Any) -> dict | None:
        """The first row, or None."""
        rows = self.rows(**values)
        return rows[0] if rows else None


def _cursor(connection):
    """Django's cursor (logged, error-wrapped); on PostgreSQL with prepared statements on,
    over a server-binding psycopg cursor (Django's own class for ``server_side_binding``)."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    _healthy(connection)
    if connection.connection.prepare_threshold is None:
        return connection.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    with connection.wrap_database_errors:
        return connection._prepare_cursor(ServerBindingCursor(connection.connection))


def _healthy(connection) -> None:
    """Connect, first dropping a connection that fails Django's health check
    (``CONN_HEALTH_CHECKS``, once per request) as ``connection.cursor()`` does: after a
    database restart a persistent connection is dead, and its first query would fail."""
    connection.close_if_health_check_failed()
    connection.ensure_connection()


@contextmanager
def server_binding(using: str = "default") -> Iterator[None]:
    """Inside the block, the ORM's own queries on ``using`` are bound on the server (on
    PostgreSQL with prepared statements on), so psycopg prepares each after
    ``prepare_threshold`` runs; nothing changes elsewhere or with prepared statements off.

    For the hot paths' writes, whose SQL Django builds (``bulk_create``, ``update``,
    ``delete``): their values become parameters, the statement text is the same on
    every run, and PostgreSQL stops parsing and planning it. The connection is the
    thread's own, and its cursor class is restored on leaving.
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        yield
        return
    _healthy(connection)
    raw = connection.connection
    if raw.prepare_threshold is None:
        yield
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    before, raw.cursor_factory = raw.cursor_factory, ServerBindingCursor
    try:
        yield
    finally:
        raw.cursor_factory = before


def columns(model: type, prefix: str = "") -> list[str]:
    """The ``values()`` names of ``model``'s concrete columns, reached through ``prefix``
    (e.g. ``"user__"``), for ``instance``."""
    return [prefix + f.attname for f in model._meta.concrete_fields]


def instance(model: type, row: dict, prefix: str = "", using: str = "default"):
    """A ``model`` instance from the ``columns(model, prefix)`` of a row, as the ORM loads
    one (None when the row's primary key there is null: a LEFT JOIN found nothing)."""
    names = [f.attname for f in model._meta.concrete_fields]
    values = [row[prefix + name] for name in names]
    if values[names.index(model._meta.pk.attname)] is None:
        return None
    return model.from_db(using, names, values)
