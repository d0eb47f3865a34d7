"""Two costs of running nbgrader's own steps many times in one process, removed.

Both are scoped to a grading run (context managers) and change no result:

- `schema_checked_once`: nbgrader validates every cell's metadata with `jsonschema.validate`,
  which checks the schema itself again on every call (about 40 ms a notebook, twice per
  submission). Here the schema is checked once and its validator reused.
- `quick_sqlite_commits`: nbgrader commits once per cell (about 13 commits a submission),
  each an fsync. On SQLite the gradebook is switched to write-ahead logging with
  `synchronous=NORMAL`: a commit survives a crash of the process; a power cut can lose the
  last few, which a rerun grades again (the results are recorded after the gradebook).
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from functools import lru_cache

import jsonschema
from nbgrader.nbgraderformat import common
from sqlalchemy import event, text


@lru_cache(maxsize=8)
def _validator(schema_json: str):
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _validate(instance, schema, *args, **kwargs):
    """`jsonschema.validate` with the schema checked once."""
    error = jsonschema.exceptions.best_match(
        _validator(json.dumps(schema, sort_keys=True)).iter_errors(instance))
    if error is not None:
        raise error


class _JsonschemaOnce:
    """Stands in for the `jsonschema` module inside nbgrader's metadata validator."""

    validate = staticmethod(_validate)

    def __getattr__(self, name):
        return getattr(jsonschema, name)


@contextmanager
def schema_checked_once():
    saved = common.jsonschema
    common.jsonschema = _JsonschemaOnce()
    try:
        yield
    finally:
        common.jsonschema = saved


def _normal_sync(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


@contextmanager
def quick_sqlite_commits(gradebook):
    """Write-ahead logging and NORMAL sync on a SQLite gradebook; nothing for other databases."""
    engine = gradebook.engine
    if engine.dialect.name != "sqlite":
        yield
        return
    gradebook.db.execute(text("PRAGMA journal_mode=WAL"))
    gradebook.db.execute(text("PRAGMA synchronous=NORMAL"))
    gradebook.db.commit()
    event.listen(engine, "connect", _normal_sync)
    try:
        yield
    finally:
        event.remove(engine, "connect", _normal_sync)
