"""Load node logs from ``landing/syslog`` into ``raw.syslog_lines`` — incrementally and losslessly.

Per new or changed file (SHA-256, like sacct dumps): parse the lines (:mod:`gpusre.models.sources.syslog.parse`),
recognize events (:mod:`gpusre.models.logs.event_catalog`), re-read the port-state lines in sequence
(:mod:`~gpusre.models.sources.syslog.link_states`), give a line naming a NIC by its interface only the PCI
address the node's kernel lines link it to (:mod:`~gpusre.models.sources.syslog.nic_identity`), key every
line by its masked message, and replace the file's rows. Unparseable lines go to ``raw.rejects``.

Three steps (:mod:`gpusre.models.ingest.staging`), so that parsing runs in several processes:
:func:`plan_syslog` (reads the ledger, the miner's config and the jobs' time span; splits the files
into shards), :func:`parse_syslog_shard` (no warehouse: writes each file's rows to the Parquet lake
(:mod:`gpusre.models.ingest.lake`), invisible until published, and stages its rejects and the
distinct masked messages it saw) and :func:`publish_syslog` (one DuckDB transaction: rejects,
ledger rows, the new masked messages mined by Drain3 in landing order into
``raw.syslog_message_templates``, the miner state). Template ids depend on the order Drain3 sees
messages, so they are assigned only in the publish, in landing order: the result is the same with
one parse step or many. :func:`ingest_syslog_files` runs the three in this process. A crash or
error anywhere leaves the views exactly as they were.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone as dt_timezone
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.alerts.nodes import HostMapping, node_names
from gpusre.models.ingest.background_writer import BackgroundWriter
from gpusre.models.logs.event_catalog import classify_messages, may_match_canonical
from gpusre.models.logs.masking import canonical_digits
from gpusre.models.ingest.ledger import (SAME_CONTENT, FileIngest, loaded_contents, log_parse_crash,
                                        same_content, same_content_rechecks)
from gpusre.models.ingest.landing_files import LandingRead, SourceScan, read_landing_file, scan_source
from gpusre.models.ingest.staging import (IngestPlan, StagedFile, clear_staged, plan_ingest, publish_files,
                                          read_staged, write_staged)
from gpusre.models.sources.syslog.parse import (FILE_COUNTS_SCHEMA, LINE_SCHEMA, PLACEHOLDER_HOST, REJECT_SCHEMA, SyslogBatchResult,
                                               SyslogInput, host_from_filename,
                                               parse_syslog_batch)
from gpusre.models.sources.syslog.link_states import with_logical_link_losses
from gpusre.models.sources.syslog.nic_identity import with_nic_addresses
from gpusre.models.logs.templates import TemplateConfig, TemplateMiner, canonical_forms, distinct_first_seen
from gpusre.models.warehouse import append_arrow, transaction
from gpusre.models.ingest.lake import delete_lake_files, remove_unlisted_files, version_files, write_file_sets
from gpusre.models.sources.registry import lake_table

__all__ = ["SYSLOG_MINER", "discover_syslog_files", "ingest_syslog_files", "load_miner", "parse_syslog_shard",
           "plan_syslog", "publish_syslog", "save_miner", "scan_syslog_files"]

SYSLOG_MINER = "syslog"
#: The lake table of node-log lines (raw.syslog_lines).
SYSLOG_LAKE = lake_table("syslog")
_DATE_IN_PATH = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def scan_syslog_files(landing: Path) -> SourceScan:
    """Every node log under ``landing/syslog`` (recursively, any name; README and hidden files
    ignored), in a stable order, and the ignored files with the reason."""
    return scan_source(landing, "syslog", lambda _name: None)


def discover_syslog_files(landing: Path) -> list[Path]:
    """Every file under ``landing/syslog`` (recursively; README files excluded), in a stable order."""
    return scan_syslog_files(landing).files


def load_miner(con: duckdb.DuckDBPyConnection, miner: str = SYSLOG_MINER) -> TemplateMiner:
    """The persisted miner, or a new one on the first night."""
    rows = con.execute("SELECT state FROM raw.template_miners WHERE miner = ?", [miner]).fetchall()
    return TemplateMiner.from_state(bytes(rows[0][0])) if rows else TemplateMiner.new()


def save_miner(con: duckdb.DuckDBPyConnection, template_miner: TemplateMiner, miner: str = SYSLOG_MINER) -> None:
    """Replace the persisted state of ``miner`` (inside the caller's transaction)."""
    con.execute("DELETE FROM raw.template_miners WHERE miner = ?", [miner])
    con.execute(
        "INSERT INTO raw.template_miners VALUES (?, ?, ?, now())",
        [miner, template_miner.state(), template_miner.templates().height],
    )


def _jobs_span(con: duckdb.DuckDBPyConnection) -> tuple[datetime, datetime] | None:
    """The time span of the accounting records, or None before any job is known.

    Read from the raw sacct records, not core.jobs: the node-log parse then waits only for the
    sacct publish and runs beside the core.jobs upsert (a year's upsert takes ~10 s)."""
    lo, hi = con.sql("SELECT min(submit_ts), max(COALESCE(end_ts, start_ts)) FROM raw.sacct_records "
                     "WHERE record_type = 'allocation'").fetchall()[0]
    return (lo, hi) if lo is not None and hi is not None else None


def _year_hint(source_file: str, jobs_span: tuple[datetime, datetime] | None) -> tuple[datetime, datetime] | None:
    """Where RFC 3164 lines (no year) most likely fall: the day in the path, else the jobs' span."""
    m = _DATE_IN_PATH.search(source_file)
    if m:
        day = datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=dt_timezone.utc)
        return day - timedelta(days=2), day + timedelta(days=2)
    return jobs_span


def _reads_alike(source_file: str) -> tuple[str | None, str | None]:
    """What a node log's name adds to its content's rows: the node of lines naming none, and the
    day RFC 3164 lines take their year from. A rotated copy keeps both (``kern.log`` ->
    ``kern.log.1`` -> ``kern.log.2.gz``); two nodes' files with equal bytes are two nodes' lines."""
    day = _DATE_IN_PATH.search(source_file)
    return host_from_filename(source_file), day[0] if day else None


def _tagged(program: pl.Expr, program_text: pl.Expr, message: pl.Expr) -> pl.Expr:
    """``program_text: message`` where ``program`` is set, else ``message``: patterns such as
    'slurmd: error:' include the program tag, so lines are classified with it."""
    return pl.when(program.is_not_null()).then(pl.concat_str([program_text, pl.lit(": "), message])).otherwise(message)


def _events(lines: pl.DataFrame, forms: pl.Series, form_of_row: pl.Series) -> pl.DataFrame:
    """:func:`classify_messages` of each line's ``program: message`` (one row per line, without
    ``gpu_index``), reading only the lines whose canonical form may match a pattern.

    Lines sharing a program and a message form share the verdict of the literal scan, so it runs
    once per distinct pair (a few thousand a night, against millions of lines)."""
    programs, program_of_row = distinct_first_seen(lines["program"])
    pair = program_of_row.cast(pl.UInt64) * len(forms) + form_of_row.cast(pl.UInt64)
    pairs, pair_of_row = distinct_first_seen(pair)
    program = programs.gather(pairs // len(forms))
    # canonical_digits of 'program: message' is the program's form, ': ' and the message's form.
    tagged_forms = pl.select(_tagged(pl.lit(program), pl.lit(canonical_digits(program.fill_null(""))),
                                     pl.lit(forms.gather(pairs % len(forms))))).to_series()
    rows = may_match_canonical(tagged_forms).gather(pair_of_row).arg_true()
    tagged = lines[rows].select(_tagged(pl.col("program"), pl.col("program"), pl.col("message"))).to_series()
    found = classify_messages(tagged).drop("gpu_index").with_columns(rows.alias("_row"))
    return (pl.int_range(lines.height, dtype=rows.dtype, eager=True).alias("_row").to_frame()
            .join(found, on="_row", how="left", maintain_order="left").drop("_row"))


def _lines_frame(lines: pl.DataFrame, masker: TemplateMiner, hosts: HostMapping) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The lake rows of parsed lines (events recognized, node named, ``message_key``) and the
    distinct ``(source_file, message_key, masked)`` in order of first appearance per file."""
    forms, form_of_row = canonical_forms(lines["message"])
    events = _events(lines, forms, form_of_row)
    keys, distinct = masker.key_messages(lines["message"], (forms, form_of_row))
    # The same host -> node rule as alerts, with cluster.yaml's alerts.nodes settings (lower case,
    # no DNS suffix or port, rewrites such as gpu001-bmc -> gpu001, the node list's spelling); a
    # host it will not call a node (an address, a server outside the node list) keeps its first label.
    # Per distinct host (a night has millions of lines from a few thousand hosts).
    host_names = lines["host"].drop_nulls().unique()
    placeholder = host_names.str.contains(PLACEHOLDER_HOST)
    resolved = node_names(host_names, hosts.mapping, hosts.known_nodes or None)
    named = resolved.fill_null(pl.select(
        pl.when(placeholder).then(host_names.str.to_lowercase())   # an address is not cut at its first dot
        .otherwise(host_names.str.to_lowercase().str.split(".").list.first())).to_series())
    node = lines["host"].replace_strict(host_names, named, default=None, return_dtype=pl.String)
    # A line whose host is only an address or localhost (a central server that could not resolve the
    # sender, a local logger) belongs to the node its file is named after, when the name gives one —
    # unless the address is a node's alias (cluster.yaml node_aliases): a relay's file names the relay.
    placeholders = host_names.filter(placeholder & resolved.is_null())
    if placeholders.len():
        files = lines["source_file"].unique()
        file_nodes = node_names(pl.Series([host_from_filename(f) for f in files.to_list()], dtype=pl.String),
                                hosts.mapping, hosts.known_nodes or None)
        by_file = lines["source_file"].replace_strict(files, file_nodes, default=None, return_dtype=pl.String)
        node = pl.select(pl.when(lines["host"].is_in(placeholders.implode()) & by_file.is_not_null())
                         .then(by_file).otherwise(node)).to_series().alias("node")
    rows = pl.concat([lines.with_columns(node=node, message_key=keys), events], how="horizontal")
    # A port leaving ACTIVE for INIT/ARMED (the subnet manager dropped it) is a link loss; the same
    # lines at a bring-up are not: only the port's previous state tells (link_states).
    rows = with_logical_link_losses(rows)
    # networkd's 'ibp26s0: Gained carrier' names the interface only: it takes the PCI address the node's
    # kernel lines link ibp26s0 to, so it clears that NIC's Link DOWN, not another rail's (nic_identity).
    rows = with_nic_addresses(rows)
    seen = (rows.select("source_file", "message_key").with_row_index("seq")
            .unique(["source_file", "message_key"], keep="first", maintain_order=True)
            .join(distinct, on="message_key", how="left", maintain_order="left"))
    return rows, seen.select("source_file", "seq", "message_key", "masked")


#: Lines classified and keyed per batch: per-call overheads dominate for the thousands of small
#: per-node daily files a cluster produces, so files are processed together.
BATCH_LINES = 1_000_000
#: Bytes of landing files parsed as one frame (:func:`parse_syslog_batch`): a per-node daily file
#: of a few hundred kB parsed alone costs ~20 ms of query overheads; 200 of them together ~0.3 s.
#: 32 MB rather than 16: the parse of 10 M lines (2,000 per-node files) took 22.4 s against 23.9 s
#: (means of six alternated pairs, five won) for ~120 MB more peak RSS (1.66 against 1.54 GB), 2026-12-07.
PARSE_BATCH_BYTES = 32 << 20


def plan_syslog(con: duckdb.DuckDBPyConnection, landing: Path, *, shards: int = 1, timezone: str = "UTC",
                hosts: HostMapping | None = None) -> IngestPlan:
    """The plan of a node-log ingest (reads the warehouse): files split into ``shards``, and what
    the parse steps need from the warehouse (the miner's config, the jobs' span for the year of
    RFC 3164 lines)."""
    rows = con.execute("SELECT state FROM raw.template_miners WHERE miner = ?", [SYSLOG_MINER]).fetchall()
    config = (TemplateMiner.from_state(bytes(rows[0][0])) if rows else TemplateMiner.new()).config
    scan = scan_syslog_files(landing)
    # Only a file without a date in its path needs the accounting's span (a scan of the sacct lake).
    undated = any(_DATE_IN_PATH.search(path.relative_to(landing).as_posix()) is None for path in scan.files)
    plan = plan_ingest(con, landing, "syslog", scan, shards, {
        "timezone": timezone, "hosts": hosts or HostMapping(), "jobs_span": _jobs_span(con) if undated else None,
        "template_config": config.to_json_dict()})
    return _with_rotation(con, plan)


def _with_rotation(con: duckdb.DuckDBPyConnection, plan: IngestPlan) -> IngestPlan:
    """``plan`` made aware of rotated copies (the ledger holds node logs by decompressed content):
    ``settings['kept_contents']``, the contents loaded files not read in this run keep (a parse
    step ignores a file with one of them unread), and the files ignored as a copy of a file read
    again now moved from ``unchanged`` into the read set (``settings['recheck']``): if that file
    changed, they hold the only copy of its old content."""
    reread = {name for shard in plan.shards for name in shard}
    kept: dict[tuple[str, tuple[str | None, str | None]], str] = {}
    for name, sha in loaded_contents(con, plan.source, reread):
        kept.setdefault((sha, _reads_alike(name)), name)
    recheck = {name: twin for name, twin in same_content_rechecks(con, plan.source, reread).items()
               if name in plan.unchanged}
    shards = plan.shards
    if recheck:
        # Into the twin's parse step (same order as a single process would read them).
        lists = [list(shard) for shard in plan.shards] or [[]]
        shard_of = {name: i for i, shard in enumerate(plan.shards) for name in shard}
        for name, twin in recheck.items():
            lists[shard_of.get(twin, 0)].append(name)
        order = plan.order
        shards = tuple(tuple(sorted(shard, key=order.__getitem__)) for shard in lists)
    return replace(plan, shards=shards, unchanged=plan.unchanged - set(recheck),
                   settings={**plan.settings, "kept_contents": kept, "recheck": frozenset(recheck)})


def _parse_batch(inputs: list[SyslogInput], timezone: str) -> tuple[SyslogBatchResult, dict[str, str]]:
    """Parse files as one batch, and the files whose parse raised: ``{source_file: reason}`` (no
    rows). A batch that raises is split in halves until the failing files are alone, so that a
    parser failure refuses only the file it comes from (one bad file costs log2(n) re-parses)."""
    try:
        return parse_syslog_batch(inputs, timezone=timezone), {}
    except Exception as exc:  # noqa: BLE001 - a parser failure refuses its file only
        if len(inputs) == 1:
            name = inputs[0].source_file
            files = pl.DataFrame({"source_file": [name], "rows_read": [0], "rows_loaded": [0], "rows_rejected": [0],
                                  "rows_dst_guessed": [0]}, schema=FILE_COUNTS_SCHEMA)
            empty = SyslogBatchResult(pl.DataFrame(schema=LINE_SCHEMA), pl.DataFrame(schema=REJECT_SCHEMA), files)
            return empty, {name: log_parse_crash(name, exc)}
    middle = len(inputs) // 2
    (left, left_crashes), (right, right_crashes) = (_parse_batch(inputs[:middle], timezone),
                                                    _parse_batch(inputs[middle:], timezone))
    joined = SyslogBatchResult(pl.concat([left.lines, right.lines]), pl.concat([left.rejects, right.rejects]),
                               pl.concat([left.files, right.files]))
    return joined, {**left_crashes, **right_crashes}


def parse_syslog_shard(plan: IngestPlan, shard: int, progress: Callable[[str], None] | None = None) -> list[StagedFile]:
    """Parse the new or changed files of one shard into the lake (invisible until published) and
    stage their rejects and masked messages; no warehouse connection. Safe in any process.

    Files are parsed ``PARSE_BATCH_BYTES`` at a time as one frame, and their lines classified,
    keyed ``BATCH_LINES`` at a time on a second thread and written to the lake on a third."""
    landing, lake = Path(plan.landing), Path(plan.lake)
    settings = plan.settings
    hosts: HostMapping = settings["hosts"]
    masker = TemplateMiner.new(TemplateConfig.from_json_dict(settings["template_config"]))
    files = plan.shards[shard]
    out: dict[str, StagedFile] = {}
    versions: dict[str, str] = {}
    reads: list[tuple[str, LandingRead]] = []
    read_bytes = 0
    pending: list[pl.DataFrame] = []
    pending_rows = 0
    batch_no = 0
    parse_no = 0
    done = 0

    def write(rows: pl.DataFrame, seen: pl.DataFrame, batch: int, batch_versions: dict[str, str]) -> None:
        write_file_sets(lake, SYSLOG_LAKE, rows, batch_versions)
        write_staged(lake, "syslog", shard, batch, "messages", seen)

    def frame(lines: pl.DataFrame, batch: int, batch_versions: dict[str, str], lake_writer: BackgroundWriter) -> None:
        rows, seen = _lines_frame(lines, masker, hosts)
        lake_writer.drain()  # at most one batch being written while the next is framed
        lake_writer.submit(write, rows, seen, batch, batch_versions)

    def flush(framer: BackgroundWriter, lake_writer: BackgroundWriter) -> None:
        nonlocal pending_rows, batch_no
        lines = pl.concat(pending, how="vertical")
        pending.clear()
        pending_rows = 0
        # A three-stage pipeline: this thread parses a batch while the framer classifies and keys
        # the one before (one batch at a time, in order, so the masker is used by one thread only)
        # and the lake writer encodes the one before that. On 2 cores the third stage gained
        # 0.5-1.3 s of ~20 s (10 M lines) for ~150 MB more peak RSS (2026-12-03).
        framer.drain()
        framer.submit(frame, lines, batch_no, dict(versions), lake_writer)
        batch_no += 1

    def parse_reads() -> None:
        nonlocal read_bytes, parse_no, pending_rows, done
        inputs = [SyslogInput(read.data, name, host_from_filename(name), _year_hint(name, settings["jobs_span"]))
                  for name, read in reads]
        parsed, crashes = _parse_batch(inputs, settings["timezone"])
        faults = {name: read.fault or crashes.get(name) for name, read in reads}
        # The line-0 reject of a file refused whole or past a fault.
        refused = [(name, fault) for name, fault in faults.items() if fault]
        rejects = pl.concat([parsed.rejects, pl.DataFrame(
            {"source_file": [n for n, _ in refused], "line_no": [0] * len(refused), "raw": [None] * len(refused),
             "error": [f for _, f in refused]}, schema=parsed.rejects.schema)])
        write_staged(lake, "syslog", shard, parse_no, "rejects", rejects)
        parse_no += 1
        for (name, read), (_, rows_read, rows_loaded, rows_rejected, dst_guessed) in zip(
                reads, parsed.files.iter_rows(), strict=True):
            fault = faults[name]
            out[name] = StagedFile(FileIngest(name, "refused" if fault else "loaded", rows_read, rows_loaded,
                                              rows_rejected, fault, rows_dst_guessed=dst_guessed),
                                   versions[name], read.size)
        if parsed.lines.height:
            pending.append(parsed.lines)
            pending_rows += parsed.lines.height
        done += len(reads)
        if progress:
            progress(f"syslog {done}/{len(files)} files: {parsed.lines.height} lines, "
                     f"{parsed.rejects.height} rejected in the last {len(reads)}")
        reads.clear()
        read_bytes = 0

    # Lines are classified and keyed, and written to the lake, on two more threads while this
    # thread parses the next batch: Polars, NumPy and Parquet encoding release the GIL. (The lake
    # writer closes last: the framer's queued batches submit writes to it.)
    with BackgroundWriter("syslog-lake") as lake_writer, BackgroundWriter("syslog-framer") as framer:
        kept: dict[tuple[str, tuple[str | None, str | None]], str] = settings.get("kept_contents", {})
        recheck: frozenset[str] = settings.get("recheck", frozenset())
        for source_file in files:
            read = read_landing_file(landing / source_file)
            # The ledger holds node logs by decompressed content (see _with_rotation).
            sha = read.content_sha256 or read.sha256
            if sha and plan.known.get(source_file) == sha and source_file not in recheck:
                out[source_file] = StagedFile(FileIngest(source_file, "unchanged"), sha, read.size)
                continue
            twin = kept.get((sha, _reads_alike(source_file))) if sha and not read.fault else None
            if twin is not None and twin != source_file:
                # A rotated copy of a file whose rows stay (messages-20261111 compressed to
                # messages-20261111.gz): its lines are loaded already.
                out[source_file] = StagedFile(FileIngest(source_file, "ignored", error=SAME_CONTENT.format(twin)),
                                              sha, read.size)
                continue
            versions[source_file] = sha
            reads.append((source_file, read))
            read_bytes += len(read.data)
            if read_bytes >= PARSE_BATCH_BYTES:
                parse_reads()
            if pending_rows >= BATCH_LINES:
                flush(framer, lake_writer)
        if reads:
            parse_reads()
        if pending:
            flush(framer, lake_writer)
        framer.drain()
        lake_writer.drain()
    return [out[name] for name in files]


def publish_syslog(con: duckdb.DuckDBPyConnection, plan: IngestPlan, staged: list[StagedFile]) -> list[FileIngest]:
    """Make the parsed files visible in one transaction (call it outside one): rejects, ledger rows,
    and the masked messages never seen before mined in landing order into
    ``raw.syslog_message_templates``, with the miner state. Then delete superseded lake files."""
    lake = Path(plan.lake)
    order = plan.order_frame()
    with transaction(con):
        staged, copies = _ignore_copies(con, plan, staged)
        results = publish_files(con, plan, staged)
        if copies:
            con.execute("DELETE FROM raw.rejects WHERE source_kind = ? AND source_file IN (SELECT unnest(?))",
                        [plan.source, copies])
        messages = [p.as_posix() for p in read_staged(lake, "syslog", "messages")]
        if messages:
            seen = pl.read_parquet(messages).join(order, on="source_file").sort("file_order", "seq")
            seen = seen.filter(~pl.col("source_file").is_in(copies))
            known = con.sql("SELECT message_key FROM raw.syslog_message_templates").pl()
            new = (seen.unique("message_key", keep="first", maintain_order=True)
                   .join(known, on="message_key", how="anti", maintain_order="left"))
            if new.height:
                miner = load_miner(con)
                append_arrow(con, "raw.syslog_message_templates", miner.mine_keys(new.select("message_key", "masked")).to_arrow())
                save_miner(con, miner)
    remove_unlisted_files(con, lake, SYSLOG_LAKE.name)
    clear_staged(lake, "syslog")
    return results


def _ignore_copies(con: duckdb.DuckDBPyConnection, plan: IngestPlan,
                   staged: list[StagedFile]) -> tuple[list[StagedFile], list[str]]:
    """``staged`` with each file parsed in this run whose content another file holds after it
    (:func:`same_content`: two names of one rotated log in one run, or a file that was a copy of one
    read again and unchanged) turned ``ignored``, and those files. Their file sets are deleted
    before the commit: the ledger will name that version, and no view may show its rows."""
    read = {s.result.source_file for s in staged if s.result.status != "unchanged"}
    kept = loaded_contents(con, plan.source, read)
    order = plan.order
    in_order = sorted(staged, key=lambda s: order.get(s.result.source_file, -1))
    twins = same_content(kept, [(s.result.source_file, s.sha256, s.result.status) for s in in_order],
                         _reads_alike)
    if not twins:
        return staged, []
    delete_lake_files(version_files(Path(plan.lake), SYSLOG_LAKE.name,
                                    [(s.result.source_file, s.sha256) for s in staged if s.result.source_file in twins]))
    return [StagedFile(FileIngest(s.result.source_file, "ignored", error=SAME_CONTENT.format(twins[s.result.source_file])),
                       s.sha256, s.size) if s.result.source_file in twins else s for s in staged], list(twins)


def ingest_syslog_files(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    *,
    timezone: str = "UTC",
    hosts: HostMapping | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[FileIngest]:
    """Ingest every new or changed node log under ``landing/syslog`` in this process: plan, one
    parse step, publish. Call it outside a transaction.

    ``hosts``: how log host names become Slurm node names (cluster.yaml's ``alerts.nodes`` and node
    list); applied when a file is ingested, so a changed mapping reaches files ingested later.
    """
    plan = plan_syslog(con, landing, timezone=timezone, hosts=hosts)
    return publish_syslog(con, plan, parse_syslog_shard(plan, 0, progress))
