"""Two costs of running nbgrader's own steps many times in one process, removed.

Both are scoped to a grading run (context managers) and change no result:

- `schema_checked_once`: nbgrader validates every cell's metadata with `jsonschema.validate`,
  which checks the schema itself again on every call (about 40 ms a notebook, twice per
  submission). Here the schema is checked once and its validator reused; and since the kit
  puts every graded cell's nbgrader metadata back as released, the same few metadata come
  back in every submission, twice: one found valid is not validated again (2 ms a pass).
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
from nbformat import NotebookNode
from nbgrader.nbgraderformat import common
from sqlalchemy import event, text


@lru_cache(maxsize=8)
def _validator(schema_json: str):
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


_PLAIN = (str, int, float, bool, type(None))
_VALID_LIMIT = 4096  # metadata remembered as valid; a class of odd notebooks: cleared
_valid: set[tuple[str, str]] = set()  # (the schema's JSON, the metadata's `_plain_key`)


def _plain_key(value) -> str | None:
    """`value` as a key that tells apart any two values jsonschema could judge differently
    (its repr, made of JSON's own types only: `1`, `1.0`, `True` and `"1"` each their own);
    None for anything else, which is then simply validated."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) in (dict, NotebookNode):
            if not all(type(key) is str for key in item):
                return None
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif type(item) not in _PLAIN:
            return None
    return repr(value)


_last_schema: list = [(None, "")]  # nbgrader reads its schema anew for each notebook


def _schema_json(schema) -> str:
    """The schema as JSON text, made once for each of nbgrader's schema objects: one
    validator object checks all of a notebook's cells against the same one. (The slot holds
    one tuple, replaced whole: read once, it is one schema's.)"""
    kept = _last_schema[0]
    if kept[0] is not schema:
        kept = _last_schema[0] = (schema, json.dumps(schema, sort_keys=True))
    return kept[1]


def _validate(instance, schema, *args, **kwargs):
    """`jsonschema.validate` with the schema checked once, and metadata already found valid
    against it not checked again."""
    schema_json = _schema_json(schema)
    key = _plain_key(instance)
    if key is not None and (schema_json, key) in _valid:
        return
    error = jsonschema.exceptions.best_match(_validator(schema_json).iter_errors(instance))
    if error is not None:
        raise error
    if key is not None:
        if len(_valid) >= _VALID_LIMIT:
            _valid.clear()
        _valid.add((schema_json, key))


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
