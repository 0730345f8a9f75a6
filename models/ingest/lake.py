"""The raw layer as a Parquet lake: ``<lake>/<table>/day=YYYY-MM-DD/<landing-file-id>.parquet``.

Why: typed raw rows stored inside the DuckDB file cost most of an ingest's CPU (the compressed
insert runs on about one core), and a single database file should not hold years of node logs.
Raw record tables are written as Hive-partitioned Parquet (zstd) under a lake folder next to the
warehouse; the warehouse exposes each as a view of the same name and columns (``raw.syslog_lines``
…), so queries, the snapshot and the tests read one contract. ``raw.rejects``,
``raw.ingested_files`` and every core/mart table stay DuckDB tables.

**One atomic file set per landing file version.** A landing file's rows become one Parquet file
per day its rows fall on (or one file, for a table with ``LakeTable.day_of_landing_file``),
named ``<landing-file-id>-<sha256[:16]>`` (a stable id of its landing path
and its content hash, :func:`version_stem`). Each file is written under a temporary name the views'
glob does not match (``.<name>.<pid>.parquet.tmp``), fsynced, then renamed in place (atomic on POSIX).
The views show a version only once ``raw.ingested_files`` records that SHA-256 for the landing file,
so the DuckDB commit that writes the ledger (with rejects and core) is the one atomic switch: a kill
before it leaves the old version visible and the new files invisible, and the rerun parses the file
again into the same names. After the commit, :func:`remove_unlisted_files` deletes superseded
versions, the files of killed runs and temporary files: a rerun over a changed landing file thus
replaces exactly that file's Parquet files.

**Views.** Each view reads ``read_parquet('<lake>/<table>/*/*.parquet')`` with absolute paths,
keeps the files of ledger versions and casts every column to the type declared in ``sql/ddl`` (schema ``lake``: empty tables that only
carry the column list and types). A zero-row ``_schema.parquet`` per table keeps the glob
non-empty, so an empty lake gives an empty, typed view. It lies in the last day folder
(``day=9999-12-31``): DuckDB estimates a glob's rows from its first file times the number of files,
so a zero-row first file made every lake scan look empty, and its hash joins (the ledger filter of
each view among them) built on the lake: a full scan of a year's node logs ran out of 1 GB. A copy of the DuckDB file (the snapshot)
keeps those absolute paths and its own ledger, so its ``raw.*`` views read the lake's files of the
versions it knows (a landing file re-ingested after the snapshot drops out of the snapshot's raw
views until the next snapshot, as its old files are deleted).

**Compaction.** A ``compactable`` table's old days may be merged into one file per day under
``<lake>/_compacted/<table>/`` (:mod:`gpusre.models.ingest.lake_compaction`); the manifest
``raw.lake_compacted_versions`` says which versions each holds. Its view then reads a merged
version from the compacted file only, and of a compacted file the rows of versions the ledger holds.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["COMPACTED_DIR", "LakeTable", "MANIFEST", "SCHEMA_FILE", "VERSION_COLUMN", "compacted_files",
           "compacted_relation_sql", "compacted_root", "compacted_version_files", "create_lake_views",
           "delete_lake_files", "ensure_view", "files_relation_sql", "lake_files", "lake_of", "lake_root", "landing_file_id",
           "ledger_stems_sql", "read_schema", "reads_lake", "remove_unlisted_files", "storage_schema",
           "unlisted_files", "version_files", "version_stem", "version_stem_sql", "write_atomic", "write_file_sets"]

#: Zero-row file per table that keeps the view's glob non-empty (and carries the Arrow schema); last
#: in the glob's order, so DuckDB's row estimate (first file x files) comes from a data file.
SCHEMA_FILE = "day=9999-12-31/_schema.parquet"
#: Where gpusre before 2026-12-03 kept it (first in the glob): moved on open.
_LEGACY_SCHEMA_FILE = "day=1970-01-01/_schema.parquet"
#: Rows without any timestamp still need a day folder.
_NO_DAY = date(1970, 1, 1)
_TMP_SUFFIX = ".parquet.tmp"
#: Parquet codec: zstd compresses node logs about as well as DuckDB's own storage at a fraction of the CPU.
COMPRESSION = "zstd"
#: Rows per Parquet row group: DuckDB parallelizes a scan per row group.
ROW_GROUP_ROWS = 122_880
#: zstd's fastest level (Arrow's default; Polars' default is 3).
COMPRESSION_LEVEL = 1
#: Compacted files of a table live in their own tree, ``<lake>/_compacted/<table>/day=…/``: their
#: rows carry the version they came from (:data:`VERSION_COLUMN`), which the table's own files
#: need not (a new column there would rewrite every file of an existing lake).
COMPACTED_DIR = "_compacted"
#: In compacted files: the :func:`version_stem` of the landing-file version each row came from.
VERSION_COLUMN = "lake_version"
#: The manifest: which landing-file versions (and rows) each compacted file holds.
MANIFEST = "raw.lake_compacted_versions"


@dataclass(frozen=True)
class LakeTable:
    """A raw record table kept in the lake: its name (``raw.<name>`` view, ``lake.<name>`` types)
    and the timestamp columns whose first non-NULL value gives a row's day folder.

    ``day_of_landing_file``: one file per landing file version, in the day folder of its latest row,
    instead of one per row day. For sources whose files are snapshots over a window (a nightly sacct
    dump also lists the still running and pending jobs, whose rows fall on ~10 earlier days): per
    row day, most of their files held a few dozen rows and writing them cost more than the parse."""

    name: str
    day_columns: tuple[str, ...]
    #: Columns kept in the files but not shown by the view (keys its ``join`` uses).
    hidden: tuple[str, ...] = ()
    #: SQL joined to the files (aliased ``l``) in the view, e.g. a lookup table of template ids.
    join: str = ""
    #: ``(column, SQL expression)`` pairs replacing ``l."column"`` in the view.
    expressions: tuple[tuple[str, str], ...] = ()
    day_of_landing_file: bool = False
    #: The ``raw.ingested_files.source_kind`` of the landing files it holds ('' = any): the view's
    #: ledger filter reads only those rows, which also keeps DuckDB's estimate of that side below
    #: the lake scan's, so the filter's hash table is built on the ledger.
    source_kind: str = ""
    #: Old days' files may be merged into one compacted file per day (:mod:`gpusre.models.ingest.lake_compaction`):
    #: for tables with a file per landing file *and day* (node logs shipped per node: 2,000 files a
    #: day). The view then also reads the compacted files. Tables read by version elsewhere (sacct's
    #: re-read dumps) are not compacted.
    compactable: bool = False


def lake_root(warehouse: Path | str) -> Path:
    """The lake of a warehouse file: ``GPUSRE_LAKE`` when set, else ``<dir>/<stem>.lake`` next to it
    (per warehouse file, so two warehouses in one folder never share raw rows)."""
    override = os.environ.get("GPUSRE_LAKE")
    if override:
        return Path(override).absolute()
    warehouse = Path(warehouse).absolute()
    return warehouse.with_name(f"{warehouse.stem}.lake")


def landing_file_id(source_file: str) -> str:
    """The stable file name stem of one landing file's Parquet files: a hash of its landing path
    (paths may hold characters a file name cannot, and a rerun must hit the same names)."""
    return hashlib.sha256(source_file.encode("utf-8")).hexdigest()[:24]


def storage_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with extension types (such as JSON) replaced by their storage type: how rows are
    written to the lake (the view casts back)."""
    return pa.schema([pa.field(f.name, f.type.storage_type if isinstance(f.type, pa.ExtensionType) else f.type)
                      for f in schema])


def read_schema(lake: Path, table: str) -> pa.Schema:
    """The Arrow schema rows of ``table`` are written with (its ``_schema.parquet``, as storage types)."""
    return storage_schema(pq.read_schema(lake / table / SCHEMA_FILE))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(table: pa.Table | pl.DataFrame, target: Path, *, sync: bool = True) -> None:
    """Write ``table`` to ``target`` under a temporary name in the same folder, then rename; with
    ``sync`` the file is fsynced first (lake files: the ledger commit that shows them must not
    outlive them). Staged files (:mod:`gpusre.models.ingest.staging`) live only for one run and
    skip the fsync."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.stem}.{os.getpid()}{_TMP_SUFFIX}")
    try:
        with tmp.open("wb") as fh:
            if isinstance(table, pl.DataFrame):
                table.write_parquet(fh, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL,
                                    row_group_size=ROW_GROUP_ROWS)
            else:
                pq.write_table(table, fh, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL,
                               row_group_size=ROW_GROUP_ROWS)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def version_stem(source_file: str, sha256: str) -> str:
    """File name stem of one version of a landing file: ``<landing-file-id>-<sha256[:16]>``.

    The content hash in the name makes a file set immutable: a changed landing file gets new
    names, and the ledger (``raw.ingested_files``) says which version the views show."""
    return f"{landing_file_id(source_file)}-{sha256[:16]}"


#: The same stem in SQL over ``raw.ingested_files`` (DuckDB's sha256() is hex of the UTF-8 bytes, as hashlib's).
def version_stem_sql(ledger: str) -> str:
    """:func:`version_stem` of the ledger row aliased ``ledger``, in SQL."""
    return f"left(sha256({ledger}.source_file), 24) || '-' || left({ledger}.sha256, 16)"


_LEDGER_STEMS_SQL = f"SELECT {version_stem_sql('f')} FROM raw.ingested_files AS f"


def ledger_stems_sql(source_kind: str = "") -> str:
    """A query of the version stems the ledger holds (of ``source_kind``'s files; '' = every file)."""
    return _LEDGER_STEMS_SQL + (f" WHERE f.source_kind = {_quote(source_kind)}" if source_kind else "")


def lake_files(lake: Path, table: str, days: Iterable[date] | None = None) -> list[Path]:
    """Every file under the day folders of ``table`` (data, schema and temporary files), or of
    ``days`` only; not its compacted files (:func:`compacted_files`)."""
    return _day_folder_files(lake / table, days)


def compacted_root(lake: Path, table: str) -> Path:
    """The folder of ``table``'s compacted files (``<lake>/_compacted/<table>``)."""
    return lake / COMPACTED_DIR / table


def compacted_files(lake: Path, table: str, days: Iterable[date] | None = None) -> list[Path]:
    """Every file under the day folders of ``table``'s compacted tree (data, schema and temporary
    files), or of ``days`` only."""
    return _day_folder_files(compacted_root(lake, table), days)


def _day_folder_files(root: Path, days: Iterable[date] | None = None) -> list[Path]:
    if not root.is_dir():
        return []
    if days is None:
        folders = [entry.path for entry in os.scandir(root) if entry.is_dir()]
    else:
        folders = [path for path in {root / f"day={day.isoformat()}" for day in days} if path.is_dir()]
    return [Path(entry.path) for folder in folders for entry in os.scandir(folder)]


def _day_frame(rows: pl.DataFrame, spec: LakeTable) -> pl.Series:
    cols = [pl.col(c).dt.convert_time_zone("UTC") if isinstance(rows.schema[c], pl.Datetime)
            and rows.schema[c].time_zone else pl.col(c) for c in spec.day_columns]
    return rows.select(pl.coalesce(cols).dt.date().fill_null(_NO_DAY).alias("day")).to_series()


#: Threads writing the files of one call of :func:`write_file_sets`. Four even on 2 cores: each
#: small file waits on its fsync, and more writers overlap those waits (2,000 per-node files of
#: 5,000 lines, 2-core VM, 2026-12-03: 19.6 s with 2 threads, 18.6 s with 4, 18.3-18.9 s with 8).
_WRITE_THREADS = 4


def _polars_schema(schema: pa.Schema) -> dict[str, pl.DataType]:
    """The Polars types that write ``schema``'s storage types to Parquet."""
    return dict(pl.from_arrow(schema.empty_table()).schema)  # type: ignore[union-attr]


def write_file_sets(lake: Path, spec: LakeTable, rows: pa.Table | pl.DataFrame, versions: Mapping[str, str]) -> int:
    """Write the rows of each landing file as its file set; return how many files were written.

    ``versions`` maps every landing file in ``rows`` to the SHA-256 the ledger will record for it.
    One Parquet file per landing file and day (per landing file for a table with
    ``day_of_landing_file``), each atomic (temporary name, fsync, rename). The
    views show a file set once the ledger records that version (the caller's transaction
    commits); :func:`remove_unlisted_files` deletes the superseded versions after that."""
    frame = rows if isinstance(rows, pl.DataFrame) else pl.from_arrow(rows)
    assert isinstance(frame, pl.DataFrame)
    if not frame.height:
        return 0
    schema = read_schema(lake, spec.name)
    # Columns a writer does not produce (a lookup key, or the looked-up column itself) are NULL.
    frame = frame.with_columns(pl.lit(None).alias(name) for name in schema.names if name not in frame.columns)
    keyed = frame.with_columns(_day_frame(frame, spec).alias("__day"))
    if spec.day_of_landing_file:
        keyed = keyed.with_columns(pl.col("__day").max().over("source_file"))
    # Each file set's rows must be contiguous; they usually are (a batch is files in order, a
    # file's lines mostly in time order), and then a sort would only move every column.
    file_set = pl.struct("source_file", "__day")
    runs, sets = keyed.select(file_set.rle_id().max() + 1, file_set.n_unique().alias("sets")).row(0)
    if runs != sets:
        keyed = keyed.sort("source_file", "__day", maintain_order=True)
    groups = keyed.group_by("source_file", "__day", maintain_order=True).len()
    # One cast to the storage types, then zero-copy slices: per-part conversions cost more than the
    # Parquet encoding for thousands of small per-node files. Polars writes the files itself:
    # converting its strings to Arrow's layout first cost as much CPU as the encoding (0.25 s per
    # million node-log lines), and its writer uses every core.
    table = keyed.select(schema.names).cast(_polars_schema(schema))
    offsets = [0, *groups["len"].cum_sum().to_list()]
    targets = [lake / spec.name / f"day={day.isoformat()}" / f"{version_stem(source_file, versions[source_file])}.parquet"
               for source_file, day in groups.select("source_file", "__day").iter_rows()]
    for folder in {t.parent for t in targets}:
        folder.mkdir(parents=True, exist_ok=True)

    def write(i: int) -> None:
        write_atomic(table.slice(offsets[i], offsets[i + 1] - offsets[i]), targets[i])

    # Each small file costs ~3 ms of Parquet encoding and an fsync, which pyarrow does without
    # the GIL, so a few threads overlap them.
    with ThreadPoolExecutor(max_workers=_WRITE_THREADS) as pool:
        list(pool.map(write, range(len(targets))))
    for folder in {t.parent for t in targets}:
        _fsync_dir(folder)
    return len(targets)


def unlisted_files(con: duckdb.DuckDBPyConnection, lake: Path, table: str,
                   days: Iterable[date] | None = None) -> tuple[list[Path], list[Path]]:
    """``(stale, live)``: the files of ``table`` (of ``days`` only, if given) that no ledger row
    names — superseded versions of changed landing files, file sets of a run killed before its
    commit, temporary files, and the files a compaction superseded (versions the manifest lists as
    compacted, compacted files it no longer lists) — and its own (not compacted) files that remain."""
    keep = {f"{stem}.parquet" for (stem,) in con.sql(_LEDGER_STEMS_SQL).fetchall()}
    # A compacted version's own files are superseded by the compacted file holding its rows;
    # compacted files no manifest row names were replaced, or written by a killed compaction.
    compacted = con.execute(f"SELECT version_stem, compacted_file FROM {MANIFEST} WHERE lake_table = ?",
                            [table]).fetchall()
    keep -= {f"{stem}.parquet" for stem, _ in compacted}
    keep_compacted = {f"{name}.parquet" for _, name in compacted} | {Path(SCHEMA_FILE).name}
    keep.add(Path(SCHEMA_FILE).name)
    stale, live = [], []
    for path in lake_files(lake, table, days):
        (live if path.name in keep else stale).append(path)
    stale += [p for p in compacted_files(lake, table, days) if p.name not in keep_compacted]
    return stale, live


def delete_lake_files(paths: Sequence[Path]) -> int:
    """Delete ``paths`` (those of :func:`unlisted_files`) and sync their folders; how many there were."""
    for path in paths:
        path.unlink(missing_ok=True)
    for folder in {p.parent for p in paths}:
        _fsync_dir(folder)
    return len(paths)


def remove_unlisted_files(con: duckdb.DuckDBPyConnection, lake: Path, table: str,
                          days: Iterable[date] | None = None) -> int:
    """Delete the files of ``table`` (of ``days`` only, if given) that no ledger row names
    (:func:`unlisted_files`). Call it after the transaction committed, holding the warehouse's run
    lock (no other writer)."""
    return delete_lake_files(unlisted_files(con, lake, table, days)[0])


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _lake_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'lake' AND table_name = ? ORDER BY ordinal_position", [table]).fetchall()]


def _select_sql(spec: LakeTable, columns: list[tuple[str, str]], files_sql: str) -> str:
    """``SELECT <the view's columns> FROM read_parquet(<files_sql>) AS l <join>`` (no ledger filter)."""
    expressions = dict(spec.expressions)
    select = ", ".join(f'CAST({expressions.get(name, f"l.{chr(34)}{name}{chr(34)}")} AS {dtype}) AS "{name}"'
                       for name, dtype in columns if name not in spec.hidden)
    return (f"SELECT {select} FROM read_parquet({files_sql}, hive_partitioning = false, "
            f"filename = '__lake_file') AS l {spec.join}")


#: Set before a statement that hash-joins a ``raw.*`` lake view with a table, and ``RESET
#: disabled_optimizers`` after it. DuckDB estimates a lake scan as its first file's rows times the
#: files (it was 0 while the schema file came first), which can fall below the table's, so it would
#: build the hash table on the lake scan — every wide record: a first load of a year of sacct ran
#: out of the 1 GB default. With it, the join builds on the side written on the right.
#: (``sql/core/jobs_upsert.sql`` spells it out; a test holds it to this.)
LAKE_JOIN_BUILD_SIDE = "SET disabled_optimizers = 'build_side_probe_side'"


def _view_sql(lake: Path, spec: LakeTable, columns: list[tuple[str, str]]) -> str:
    glob = _quote((lake / spec.name).as_posix() + "/*/*.parquet")
    # Only the versions the ledger records: files of a landing file not yet committed (a run killed
    # between its Parquet writes and its commit) and superseded versions stay invisible.
    ledger = ledger_stems_sql(spec.source_kind)
    if not spec.compactable:
        return (f"CREATE OR REPLACE VIEW raw.{spec.name} AS {_select_sql(spec, columns, glob)} "
                f"WHERE parse_filename(l.__lake_file, true) IN ({ledger})")
    # A compacted version is read from its compacted file only (its own files are deleted once the
    # compaction commits, and until then must not count twice); a compacted file shows once its
    # manifest rows commit, and of its rows those of versions the ledger still holds.
    manifest = f"{MANIFEST} WHERE lake_table = {_quote(spec.name)}"
    own = f"{ledger} {'AND' if spec.source_kind else 'WHERE'} {version_stem_sql('f')} NOT IN (SELECT version_stem FROM {manifest})"
    compacted_glob = _quote(compacted_root(lake, spec.name).as_posix() + "/*/*.parquet")
    return (f"CREATE OR REPLACE VIEW raw.{spec.name} AS {_select_sql(spec, columns, glob)} "
            f"WHERE parse_filename(l.__lake_file, true) IN ({own}) "
            f"UNION ALL {_select_sql(spec, columns, compacted_glob)} "
            f"WHERE parse_filename(l.__lake_file, true) IN (SELECT compacted_file FROM {manifest}) "
            f"AND l.{VERSION_COLUMN} IN ({ledger})")


def files_relation_sql(con: duckdb.DuckDBPyConnection, spec: LakeTable, parameter: str) -> str:
    """A query with the columns of the ``raw.<table>`` view over the lake files listed in the SQL
    list parameter ``parameter`` (e.g. ``$files``) only: how a step reads just the file sets it
    has not seen yet, without listing the whole table."""
    return _select_sql(spec, _lake_columns(con, spec.name), parameter)


def reads_lake(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """True when ``raw.<table>`` is the view over the lake's files (a warehouse opened with
    :func:`gpusre.models.warehouse.connect`), False when it reads the bare ``lake.<table>`` of the DDL."""
    rows = con.execute("SELECT sql FROM duckdb_views() WHERE schema_name = 'raw' AND view_name = ? AND NOT temporary",
                       [table]).fetchall()
    return bool(rows) and "read_parquet" in rows[0][0]


def ledger_file_rows_sql(con: duckdb.DuckDBPyConnection, table: str, source_kind: str) -> str:
    """A query of ``(source_file, rows)``: per ledger row of ``source_kind``, the rows ``raw.<table>``
    shows for it. Over the lake they are read from the Parquet footers of the version's files (a
    year of sacct dumps: 0.1 s instead of a scan of every record); over the bare DDL, counted."""
    if not reads_lake(con, table):
        return (f"SELECT f.source_file, count(r.source_file) AS rows FROM raw.ingested_files AS f "
                f"LEFT JOIN raw.{table} AS r USING (source_file) WHERE f.source_kind = '{source_kind}' GROUP BY ALL")
    glob = _quote((lake_of(con) / table).as_posix() + "/*/*.parquet")
    # A compacted version's rows: what the manifest recorded when its compacted file was written.
    return (f"WITH compacted AS (SELECT version_stem, sum(rows) AS rows FROM {MANIFEST} "
            f"WHERE lake_table = {_quote(table)} GROUP BY ALL) "
            f"SELECT f.source_file, coalesce(any_value(c.rows), sum(m.num_rows), 0)::BIGINT AS rows "
            f"FROM raw.ingested_files AS f LEFT JOIN compacted AS c ON c.version_stem = {version_stem_sql('f')} "
            f"LEFT JOIN parquet_file_metadata({glob}) AS m ON c.version_stem IS NULL "
            f"AND parse_filename(m.file_name, true) = {version_stem_sql('f')} "
            f"WHERE f.source_kind = '{source_kind}' GROUP BY f.source_file")


def version_files(lake: Path, table: str, versions: Iterable[tuple[str, str]]) -> list[Path]:
    """The Parquet files of the landing-file ``versions`` (``(source_file, sha256)`` pairs) in ``table``
    (one listing of the table's day folders; a compacted version's rows are in
    :func:`compacted_version_files`)."""
    wanted = {f"{version_stem(source_file, sha)}.parquet" for source_file, sha in versions}
    return sorted(p for p in lake_files(lake, table) if p.name in wanted)


def compacted_version_files(con: duckdb.DuckDBPyConnection, table: str,
                            versions: Iterable[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Of the landing-file ``versions``, those a compaction merged: (the compacted files holding
    their rows, their version stems). Read them with :func:`compacted_relation_sql`."""
    stems = [version_stem(source_file, sha) for source_file, sha in versions]
    rows = con.execute(f"SELECT day, compacted_file, version_stem FROM {MANIFEST} "
                       "WHERE lake_table = ? AND version_stem IN (SELECT unnest(?))", [table, stems]).fetchall()
    root = compacted_root(lake_of(con), table)
    files = sorted({(root / f"day={day.isoformat()}" / f"{name}.parquet").as_posix() for day, name, _ in rows})
    return files, sorted({stem for _, _, stem in rows})


def compacted_relation_sql(con: duckdb.DuckDBPyConnection, spec: LakeTable, files: str, stems: str) -> str:
    """:func:`files_relation_sql` over compacted files (the SQL list parameter ``files``), keeping
    the rows of the version stems in the SQL list parameter ``stems`` only."""
    return (f"{_select_sql(spec, _lake_columns(con, spec.name), files)} "
            f"WHERE l.{VERSION_COLUMN} IN (SELECT unnest({stems}))")


def _empty_table(con: duckdb.DuckDBPyConnection, table: str) -> pa.Table:
    """``lake.<table>`` with no rows, as Arrow (its column names and types)."""
    empty = con.sql(f"SELECT * FROM lake.{table} LIMIT 0").arrow()
    return empty if isinstance(empty, pa.Table) else empty.read_all()  # DuckDB 2.0 may return a reader


def _compacted_empty_table(con: duckdb.DuckDBPyConnection, table: str) -> pa.Table:
    """The schema of ``table``'s compacted files: its columns and :data:`VERSION_COLUMN`."""
    empty = _empty_table(con, table)
    return empty.append_column(pa.field(VERSION_COLUMN, pa.string()), pa.array([], pa.string()))


def _upgrade_files(empty: pa.Table, root: Path) -> None:
    """Files written before ``lake.<table>`` gained a column get it (NULL), so one schema reads them
    all: a lake written by an older gpusre is rewritten once, file by file (each atomic). ``empty``
    is the current schema, ``root`` the table's folder (or its compacted tree)."""
    schema_file = root / SCHEMA_FILE
    if set(empty.column_names) <= set(pq.read_schema(schema_file).names):
        return
    schema = storage_schema(empty.schema)
    for path in _day_folder_files(root):
        if path.name.endswith(".parquet") and path.name != Path(SCHEMA_FILE).name:
            table = pq.read_table(path)
            for name in schema.names:
                if name not in table.column_names:
                    table = table.append_column(schema.field(name), pa.nulls(table.num_rows, schema.field(name).type))
            write_atomic(table.select(schema.names).cast(schema), path)
    write_atomic(empty, schema_file)


def _move_legacy_schema_file(legacy: Path, schema_file: Path) -> None:
    """Move a schema file from its pre-2026-12-03 place (first in the glob) to the last day folder."""
    if not legacy.exists():
        return
    if schema_file.exists():
        legacy.unlink()
    else:
        schema_file.parent.mkdir(parents=True, exist_ok=True)
        os.replace(legacy, schema_file)
        _fsync_dir(schema_file.parent)
    _fsync_dir(legacy.parent)
    if not any(legacy.parent.iterdir()):  # rows without a timestamp may share the folder
        legacy.parent.rmdir()


def create_lake_views(con: duckdb.DuckDBPyConnection, lake: Path, tables: Sequence[LakeTable]) -> None:
    """Write each table's ``_schema.parquet`` (once) and (re)create its ``raw.<table>`` view over
    ``lake``; a warehouse from before the lake has its ``raw.<table>`` rows moved into the lake
    first (per landing file, like an ingest) and the table dropped."""
    for spec in tables:
        schema_file = lake / spec.name / SCHEMA_FILE
        _move_legacy_schema_file(lake / spec.name / _LEGACY_SCHEMA_FILE, schema_file)
        if not schema_file.exists():
            write_atomic(_empty_table(con, spec.name), schema_file)
        else:
            _upgrade_files(_empty_table(con, spec.name), lake / spec.name)
        if spec.compactable:
            compacted_schema = compacted_root(lake, spec.name) / SCHEMA_FILE
            if not compacted_schema.exists():
                write_atomic(_compacted_empty_table(con, spec.name), compacted_schema)
            else:
                _upgrade_files(_compacted_empty_table(con, spec.name), compacted_root(lake, spec.name))
        kind = con.execute("SELECT table_type FROM information_schema.tables WHERE table_schema = 'raw' "
                           "AND table_name = ?", [spec.name]).fetchall()
        if kind and kind[0][0] == "BASE TABLE":
            _migrate_table(con, lake, spec)
        ensure_view(con, "raw", spec.name, _view_sql(lake, spec, _lake_columns(con, spec.name)))


def ensure_view(con: duckdb.DuckDBPyConnection, schema: str, name: str, create_sql: str) -> None:
    """Run ``create_sql`` (a ``CREATE OR REPLACE VIEW``) unless the view already has that definition:
    every writable open calls this, and an unchanged view should cost no catalog write."""
    current = con.execute("SELECT sql FROM duckdb_views() WHERE schema_name = ? AND view_name = ? AND NOT temporary",
                          [schema, name]).fetchall()
    if not current or _view_body(current[0][0]) != _normalized_body(con, create_sql):
        # Replacing a view drops its comments (the warehouse contract): only when it really changed.
        con.execute(create_sql)


def _view_body(sql: str) -> str:
    """The query of a stored ``CREATE VIEW x AS <query>`` statement."""
    return sql.split(" AS ", 1)[1].strip().rstrip(";")


def _normalized_body(con: duckdb.DuckDBPyConnection, create_sql: str) -> str:
    """The query of ``create_sql`` as DuckDB stores it (it drops quotes and reformats), from a temporary
    view: comparing our text with the stored one would see a change on every open."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW __gpusre_view_probe AS {_view_body(create_sql)}")
    try:
        return _view_body(con.execute("SELECT sql FROM duckdb_views() WHERE view_name = '__gpusre_view_probe' "
                                      "AND temporary").fetchall()[0][0])
    finally:
        con.execute("DROP VIEW __gpusre_view_probe")


def _migrate_table(con: duckdb.DuckDBPyConnection, lake: Path, spec: LakeTable) -> None:
    """Move a pre-lake ``raw.<table>`` (a DuckDB table) into the lake, then drop it."""
    versions = dict(con.execute(f"""SELECT DISTINCT r.source_file, f.sha256 FROM raw.{spec.name} AS r
                                    JOIN raw.ingested_files AS f USING (source_file)""").fetchall())
    for source_file, sha in versions.items():
        rows = con.sql(f"SELECT * FROM raw.{spec.name} WHERE source_file = ? ORDER BY line_no",
                       params=[source_file]).pl()
        write_file_sets(lake, spec, rows, {source_file: sha})
    con.execute(f"DROP TABLE raw.{spec.name}")


def lake_of(con: duckdb.DuckDBPyConnection) -> Path:
    """The lake of the warehouse file ``con`` is connected to (see :func:`lake_root`)."""
    path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    return lake_root(Path(path))
