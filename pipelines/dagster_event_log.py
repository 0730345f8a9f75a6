"""The Dagster event log of a gpusre instance: Dagster's own SQLite event log, with its connections kept open.

Dagster 1.13's :class:`SqliteEventLogStorage` builds a new SQLAlchemy engine for every connect and
throws it away afterwards (``NullPool``). A small ``gpusre run`` stores ~430 events and claims the
``duckdb_warehouse`` pool slot for ~40 steps: ~1,200 connects per run. Each one that closes the
last connection to a WAL database makes SQLite checkpoint the log and fsync, so the event log cost
2–3 ms per connect — several seconds of every run, measured 2026-12-07 (see README, issue 15).

This class keeps one engine (and its pooled connection) per shard — the index and the few most
recent run shards — and lets SQLite sync WAL commits at checkpoints only (``synchronous=NORMAL``:
the database cannot be corrupted by a crash, a power cut can lose the last events). The files,
tables and migrations are Dagster's own, so ``dagster dev`` reads an instance written with this
storage as any other, and the default storage can read it back.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine

#: Engines kept open: the index shard and the run shards of the runs still being written or read.
#: A ``gpusre run`` writes three runs; ``dagster dev`` reads many, so older shards are closed.
MAX_OPEN_SHARDS = 8


def _sync_at_checkpoints(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


class KeptOpenSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log storage with one engine per shard kept open (see the module doc).

    Configured in the instance's ``dagster.yaml`` (``gpusre run`` writes it)::

        event_log_storage:
          module: gpusre.pipelines.dagster_event_log
          class: KeptOpenSqliteEventLogStorage
          config:
            base_dir: <dagster home>/history/runs
    """

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None,  # ty: ignore[invalid-method-override]
                          config_value: Mapping[str, Any]) -> KeptOpenSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    def _engine(self, shard: str) -> Engine:
        with self._engines_lock:
            engine = self._engines.pop(shard, None)
            if engine is None:
                engine = create_engine(self.conn_string_for_shard(shard),
                                       connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS,
                                                     "check_same_thread": False})
                event.listen(engine, "connect", _sync_at_checkpoints)
            self._engines[shard] = engine  # most recently used last
            while len(self._engines) > MAX_OPEN_SHARDS:
                oldest = next(k for k in self._engines if k != INDEX_SHARD_NAME)
                self._engines.pop(oldest).dispose()
            return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        # Same contract as Dagster's: one connection at a time per storage, in a transaction,
        # the shard's tables created on its first use.
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def has_table(self, table_name: str) -> bool:
        engine = self._engine(INDEX_SHARD_NAME)
        with engine.connect() as conn:
            return bool(engine.dialect.has_table(conn, table_name))

    def dispose(self) -> None:
        super().dispose()
        with self._engines_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()
