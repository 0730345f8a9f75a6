"""Node logs through real Dagster materializations into a real DuckDB file: events recognized,
rejects reconcile, reruns change nothing, template ids stay stable when new files arrive."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.ingest_sacct import raw_sacct
from gpusre.assets.ingest_syslog import core_node_events, raw_syslog
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources

FIXTURES = Path(__file__).parent / "fixtures" / "syslog"


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    (root / "sacct").mkdir(parents=True)
    (root / "sacct" / "d.psv").write_text("JobID|State|Submit|Start|End\n1|COMPLETED|2025-02-23T10:00:00|2025-02-23T10:00:00|2025-02-23T11:00:00\n")
    (root / "syslog" / "2025-02-23").mkdir(parents=True)
    # dmesg -T output of a node hit by Xid 119 (gpud test data); the file name names the node.
    shutil.copy(FIXTURES / "gpud_dmesg-with-xid-119.log", root / "syslog" / "2025-02-23" / "gpu017.log")
    return root


def _run(landing: Path, wh: Path) -> dg.ExecuteInProcessResult:
    return dg.materialize([raw_sacct, core_jobs, raw_syslog, core_node_events],
                          resources=default_resources(str(wh), str(landing), str(wh.parent / "r")))


def _state(wh: Path) -> dict[str, list[tuple]]:
    con = connect(wh, read_only=True)
    try:
        return {t: con.sql(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
                for t in ("raw.syslog_lines", "core.node_events", "core.log_templates")}
    finally:
        con.close()


def test_xid_events_recognized_and_counts_reconcile(landing: Path, tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    assert _run(landing, wh).success
    con = connect(wh, read_only=True)
    events = con.sql("SELECT node, kind, code, component, count(*) FROM core.node_events GROUP BY ALL").fetchall()
    files = con.sql("SELECT rows_read, rows_loaded, rows_rejected FROM raw.ingested_files WHERE source_kind = 'syslog'").fetchall()
    lines = con.sql("SELECT count(*), count(template_id), count(DISTINCT template_id) FROM raw.syslog_lines").fetchall()[0]
    con.close()
    assert ("gpu017", "xid", 119, "gsp_firmware") in [e[:4] for e in events]
    read, loaded, rejected = files[0]
    assert read == loaded + rejected and loaded == lines[0]
    assert lines[0] == lines[1] and 1 < lines[2] < lines[0]  # every line templated, far fewer templates


def test_rerun_changes_nothing_and_template_ids_are_stable(landing: Path, tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    _run(landing, wh)
    before = _state(wh)
    _run(landing, wh)
    assert _state(wh) == before
    # Night 2: another node's log arrives; night 1's lines keep their template ids.
    night1 = {(r[0], r[1]): r[9] for r in before["raw.syslog_lines"]}
    shutil.copy(FIXTURES / "gpud_dmesg-with-xid-119.log", landing / "syslog" / "2025-02-23" / "gpu018.log")
    _run(landing, wh)
    after = {(r[0], r[1]): r[9] for r in _state(wh)["raw.syslog_lines"]}
    assert {k: after[k] for k in night1} == night1
    gpu018 = sorted(v for (f, _), v in after.items() if f.endswith("gpu018.log"))
    assert gpu018 == sorted(v for (f, _), v in night1.items() if f.endswith("gpu017.log"))


def test_failed_job_on_a_gsp_timeout_node_is_infrastructure(landing: Path, tmp_path: Path) -> None:
    from gpusre.assets.failures import failure_marts

    (landing / "sacct" / "d.psv").write_text(
        "JobID|State|ExitCode|Submit|Start|End|Elapsed|AllocTRES|NodeList\n"
        "1|COMPLETED|0:0|2025-02-23T10:00:00|2025-02-23T10:00:00|2025-02-23T11:00:00|01:00:00|gres/gpu=8|gpu017\n"
        # Ends 2 minutes after the first Xid 119 on gpu017 (16:24:18): infrastructure.
        "2|FAILED|1:0|2025-02-23T15:26:00|2025-02-23T15:26:00|2025-02-23T16:26:00|01:00:00|gres/gpu=8|gpu017\n"
        # Fails before any event of its node: the user's (non-zero exit, Meta's convention) — but only
        # where the node logs could have shown a fault: gpu099 logged nothing, so that one is unknown.
        "3|FAILED|2:0|2025-02-23T15:00:00|2025-02-23T15:00:00|2025-02-23T15:10:00|00:10:00|gres/gpu=4|gpu017\n"
        "4|FAILED|2:0|2025-02-23T15:00:00|2025-02-23T15:00:00|2025-02-23T15:10:00|00:10:00|gres/gpu=4|gpu099\n")
    (landing / "incidents.csv").write_text(
        "id,start,end,component,root_cause,nodes,notes\n"
        "OPS-1,2025-02-23T16:00:00Z,2025-02-23T18:00:00Z,gsp_firmware,GSP firmware hang (driver 550 bug),gpu017,\n"
        "OPS-2,not-a-time,2025-02-23T18:00:00Z,gpu,x,gpu017,\n")
    wh = tmp_path / "w.duckdb"
    result = dg.materialize([raw_sacct, core_jobs, raw_syslog, core_node_events, failure_marts],
                            resources=default_resources(str(wh), str(landing), str(tmp_path / "r")))
    assert result.success
    con = connect(wh, read_only=True)
    attribution = {r[0]: r[1:] for r in con.sql(
        "SELECT job_id, attribution, lost_gpu_hours, incident_id FROM marts.job_failure_attribution").fetchall()}
    incident = con.sql("SELECT incident_id, label_source, root_cause FROM marts.hw_incidents").fetchall()
    rejects = con.sql("SELECT line_no, error FROM raw.rejects WHERE source_file = 'incidents.csv'").fetchall()
    con.close()
    assert set(attribution) == {"2", "3", "4"}  # job 1 completed: not a failure
    # 8 GPUs x 30 min expected lost work with the site's hourly checkpoints; no restart followed (no job
    # resubmitted it), so no restart overhead — what goodput charges
    assert attribution["2"][0] == "infrastructure" and attribution["2"][1] == pytest.approx(8 * 30 / 60)
    assert attribution["3"][0] == "user" and attribution["3"][1] == 0
    assert attribution["4"][0] == "unknown" and attribution["4"][1] == 0
    # The operator's label wins for the incident the job is attributed to.
    assert (attribution["2"][2], "operator", "GSP firmware hang (driver 550 bug)") in incident
    assert rejects == [(3, "start is not an ISO-8601 time")]


CRASHING_SYSLOG_INGEST = """
import os, sys
from pathlib import Path
import gpusre.models.sources.syslog.ingest as si
from gpusre.models.warehouse import connect
con = connect(Path(sys.argv[1]))
real = si.publish_files
def die(*args, **kwargs):
    real(*args, **kwargs)  # rejects and ledger rows written, not committed
    os._exit(3)  # the process dies while publishing, before COMMIT (kill -9, OOM kill, power loss)
si.publish_files = die
si.ingest_syslog_files(con, Path(sys.argv[2]))
"""


def test_crash_while_publishing_leaves_the_warehouse_as_it_was(landing: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    wh = tmp_path / "w.duckdb"
    _run(landing, wh)
    before = _state(wh)
    shutil.copy(FIXTURES / "gpud_dmesg-with-xid-119.log", landing / "syslog" / "2025-02-23" / "gpu018.log")
    proc = subprocess.run([sys.executable, "-c", CRASHING_SYSLOG_INGEST, str(wh), str(landing)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert _state(wh) == before
    _run(landing, wh)
    assert len(_state(wh)["raw.syslog_lines"]) == 2 * len(before["raw.syslog_lines"])


def test_host_names_map_to_slurm_nodes_by_the_cluster_yaml_rules(landing: Path, tmp_path: Path) -> None:
    """Node logs use the alerts' host -> node rules with cluster.yaml's settings: case, DNS suffix,
    the site's own rewrites and the node list; a host outside the node list keeps its first label."""
    (landing / "cluster.yaml").write_text(
        "nodes: gpu[001-020]\n"
        "alerts:\n"
        "  nodes:\n"
        "    rewrites:\n"
        "      - pattern: '^mgmt-(.+)$'\n"
        "        replacement: '\\1'\n"
    )
    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    (landing / "syslog" / "2025-02-23" / "central.log").write_text(
        f"Feb 23 10:00:00 mgmt-GPU003.cluster.local kernel: {xid}\n"
        f"Feb 23 10:00:01 gpu004-bmc kernel: {xid}\n"  # cluster.yaml replaced the default BMC rewrite
        "Feb 23 10:00:02 OSS01.lustre.local kernel: LustreError: 11-0: lustre-OST0001: operation failed\n"
        "Feb 23 10:00:03 10.1.2.3 kernel: eth0: link up\n"
    )
    # A per-node file whose lines name only an address or localhost (the central server could not
    # resolve the sender): the file's node.
    (landing / "syslog" / "2025-02-23" / "gpu007.log").write_text(
        f"Feb 23 10:00:04 10.1.2.7 kernel: {xid}\nFeb 23 10:00:05 localhost kernel: {xid}\n")
    wh = tmp_path / "w.duckdb"
    assert _run(landing, wh).success
    con = connect(wh, read_only=True)
    nodes = dict(con.sql("SELECT host, node FROM raw.syslog_lines WHERE source_file LIKE '%central.log'").fetchall())
    per_node = con.sql("SELECT host, node FROM raw.syslog_lines WHERE source_file LIKE '%gpu007.log' "
                       "ORDER BY line_no").fetchall()
    events = con.sql("SELECT count(*) FROM core.node_events WHERE node = 'gpu007'").fetchall()
    con.close()
    assert nodes == {"mgmt-GPU003.cluster.local": "gpu003", "gpu004-bmc": "gpu004-bmc",
                     "OSS01.lustre.local": "oss01", "10.1.2.3": "10.1.2.3"}   # no node in the name: the address
    assert per_node == [("10.1.2.7", "gpu007"), ("localhost", "gpu007")] and events == [(2,)]


def test_changed_file_with_rejects_is_replaced_in_one_transaction(landing: Path, tmp_path: Path) -> None:
    """Deletes, reject inserts and line batches run on the writer thread in submission order: a
    changed file's old rows go before its new ones, and small batches still load every line."""
    import gpusre.models.sources.syslog.ingest as si

    day = landing / "syslog" / "2025-02-23"
    (day / "gpu020.log").write_text("Feb 23 10:00:00 gpu020 kernel: a 1\nnot a log line\n")
    wh = tmp_path / "w.duckdb"
    con = connect(wh)
    try:
        si.ingest_syslog_files(con, landing)
        (day / "gpu020.log").write_text(
            "Feb 23 10:00:00 gpu020 kernel: a 1\nFeb 23 10:00:01 gpu020 kernel: b 2\nstill not a log line\n")
        old_batch = si.BATCH_LINES
        si.BATCH_LINES = 1  # one insert per file: several batches queued on the writer
        try:
            results = si.ingest_syslog_files(con, landing)
        finally:
            si.BATCH_LINES = old_batch
        lines = con.sql("SELECT line_no, message FROM raw.syslog_lines "
                        "WHERE source_file LIKE '%gpu020.log' ORDER BY line_no").fetchall()
        rejects = con.sql("SELECT line_no, raw FROM raw.rejects WHERE source_file LIKE '%gpu020.log'").fetchall()
        total = con.sql("SELECT count(*) FROM raw.syslog_lines").fetchall()[0][0]
        loaded = con.sql("SELECT sum(rows_loaded) FROM raw.ingested_files WHERE source_kind = 'syslog'").fetchall()[0][0]
    finally:
        con.close()
    assert [r.status for r in results if r.source_file.endswith("gpu020.log")] == ["loaded"]
    assert lines == [(1, "a 1"), (2, "b 2")]
    assert rejects == [(3, "still not a log line")]
    assert total == loaded


def test_a_failed_write_on_the_writer_thread_rolls_back_the_run(landing: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails on the writer thread surfaces in the caller after the queued writes, and
    the run's one transaction rolls back: earlier batches of the same run leave no rows."""
    import gpusre.models.sources.syslog.ingest as si

    wh = tmp_path / "w.duckdb"
    _run(landing, wh)
    before = _state(wh)
    day = landing / "syslog" / "2025-02-23"
    for node in ("gpu018", "gpu019"):
        shutil.copy(FIXTURES / "gpud_dmesg-with-xid-119.log", day / f"{node}.log")
    monkeypatch.setattr(si, "BATCH_LINES", 1)  # one batch per file: several writes queued
    monkeypatch.setattr(si, "PARSE_BATCH_BYTES", 1)
    real_write = si.write_file_sets
    calls: list[int] = []

    def failing_write(lake, spec, batch, versions):  # type: ignore[no-untyped-def]
        calls.append(batch.height)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_write(lake, spec, batch, versions)

    monkeypatch.setattr(si, "write_file_sets", failing_write)
    con = connect(wh)
    try:
        with pytest.raises(OSError, match="disk full"):
            si.ingest_syslog_files(con, landing)
    finally:
        con.close()
    assert len(calls) == 2
    assert _state(wh) == before  # the first batch's file set is in the lake, but no ledger row shows it
    monkeypatch.setattr(si, "write_file_sets", real_write)
    _run(landing, wh)
    assert len(_state(wh)["raw.syslog_lines"]) == 3 * len(before["raw.syslog_lines"])


def test_a_parser_failure_in_a_batch_refuses_only_its_file(landing: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Files are parsed many at a time; a parser that raises on one file must refuse that file
    alone (line-0 reject, ``refused``), and every other file of the batch loads as it would alone."""
    import gpusre.models.sources.syslog.ingest as si

    day = landing / "syslog" / "2025-02-23"
    for node in ("gpu018", "gpu019", "gpu020", "gpu021"):
        shutil.copy(FIXTURES / "gpud_dmesg-with-xid-119.log", day / f"{node}.log")
    real_parse = si.parse_syslog_batch
    batch_sizes: list[int] = []

    def parse_failing_on_gpu020(inputs, **kw):  # type: ignore[no-untyped-def]
        batch_sizes.append(len(inputs))
        if any(i.source_file.endswith("gpu020.log") for i in inputs):
            raise RuntimeError("parser bug\nsecond line of the message")
        return real_parse(inputs, **kw)

    monkeypatch.setattr(si, "parse_syslog_batch", parse_failing_on_gpu020)
    con = connect(tmp_path / "w.duckdb")
    try:
        results = {r.source_file: r for r in si.ingest_syslog_files(con, landing)}
        per_file = dict(con.sql("SELECT source_file, count(*) FROM raw.syslog_lines GROUP BY ALL").fetchall())
        rejects = con.sql("SELECT source_file, line_no, error FROM raw.rejects").fetchall()
    finally:
        con.close()
    assert batch_sizes[0] == 5  # one batch, split in halves until the failing file is alone
    bad = "syslog/2025-02-23/gpu020.log"
    assert results[bad].status == "refused" and results[bad].rows_loaded == 0
    assert rejects == [(bad, 0, "cannot parse the file: RuntimeError: parser bug")]
    good = [name for name in results if name != bad]
    assert len(good) == 4 and all(results[n].status == "loaded" for n in good)
    assert len({per_file[n] for n in good}) == 1 and per_file[good[0]] == results[good[0]].rows_loaded > 0


def test_events_read_only_lines_whose_form_may_match_yet_find_every_event() -> None:
    # _events scans the catalog's literals on distinct (program, canonical form) pairs, then
    # classifies only the lines of pairs that may match: it must find exactly what classifying
    # every line finds, for every pattern's example (with and without its program split off,
    # with other digits), beside lines that match nothing.
    import polars as pl

    from gpusre.models.logs.event_catalog import classify_messages, load_log_patterns
    from gpusre.models.logs.templates import canonical_forms
    from gpusre.models.sources.syslog.ingest import _events

    examples = load_log_patterns()["example"].to_list()
    programs: list[str | None] = []
    messages: list[str] = []
    for i, example in enumerate(examples):
        renumbered = example.replace("0", str(i % 10)).replace("1", "123456789")
        for text in (example, renumbered):
            programs.append(None)
            messages.append(text)
            head, sep, rest = text.partition(": ")
            if sep and " " not in head:
                programs.append(head)
                messages.append(rest)
    programs += ["kernel", "sshd", None, "kernel"]
    messages += ["eth0: link up 100000 Mbps", "Accepted publickey for root port 50022", "", "NVRM: nothing here 12"]
    lines = pl.DataFrame({"program": programs, "message": messages}, schema={"program": pl.String, "message": pl.String})
    forms, form_of_row = canonical_forms(lines["message"])
    tagged = lines.select(pl.when(pl.col("program").is_not_null())
                          .then(pl.concat_str([pl.col("program"), pl.lit(": "), pl.col("message")]))
                          .otherwise(pl.col("message"))).to_series()
    expected = classify_messages(tagged).drop("gpu_index")
    got = _events(lines, forms, form_of_row)
    assert got.equals(expected)
    assert expected["kind"].drop_nulls().len() >= len(examples)  # the examples do match
