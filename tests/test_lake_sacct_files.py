"""sacct dumps are kept as one lake file per dump version (LakeTable.day_of_landing_file): a nightly
dump also lists running and pending jobs of earlier days, and one file per row day made most files
a few dozen rows whose writing cost more than the parse."""

from __future__ import annotations

from pathlib import Path

from gpusre.models.ingest.lake import lake_files, lake_of
from gpusre.models.sources.registry import lake_table
from gpusre.models.sources.sacct.ingest import ingest_sacct_files
from gpusre.models.warehouse import connect

HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|Timelimit"
# Rows of one nightly dump whose own times fall on four different days: pending since 08-29,
# running since 08-30, ended 08-31 and 09-01.
DUMP = "\n".join([
    HEADER,
    "200|200|wait|ann|ml|batch|PENDING|0:0|2026-08-29T10:00:00|2026-08-29T10:00:00|Unknown|Unknown|00:00:00|01:00:00",
    "201|201|long|ann|ml|batch|RUNNING|0:0|2026-08-30T10:00:00|2026-08-30T10:00:00|2026-08-30T11:00:00|Unknown|"
    "2-00:00:00|5-00:00:00",
    "202|202|done|bob|ml|batch|COMPLETED|0:0|2026-08-31T10:00:00|2026-08-31T10:00:00|2026-08-31T10:00:00|"
    "2026-08-31T12:00:00|02:00:00|04:00:00",
    "203|203|done|bob|ml|batch|FAILED|1:0|2026-09-01T01:00:00|2026-09-01T01:00:00|2026-09-01T01:00:00|"
    "2026-09-01T02:00:00|01:00:00|04:00:00",
]) + "\n"


def test_a_sacct_dump_is_one_lake_file_in_the_day_folder_of_its_latest_record(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-09-01.psv").write_text(DUMP)
    (landing / "sacct" / "sacct_2026-08-31.psv").write_text("\n".join(DUMP.splitlines()[:4]) + "\n")
    con = connect(tmp_path / "w.duckdb")
    try:
        ingest_sacct_files(con, landing)
        table = lake_table("sacct").name
        files = sorted(p.relative_to(lake_of(con) / table).parent.as_posix()
                       for p in lake_files(lake_of(con), table) if not p.name.startswith("_"))
        per_file = con.sql("SELECT source_file, count(*), max(COALESCE(end_ts, start_ts, submit_ts))::DATE "
                           "FROM raw.sacct_records GROUP BY ALL ORDER BY ALL").fetchall()
    finally:
        con.close()
    assert files == sorted(f"day={day.isoformat()}" for _, _, day in per_file)
    assert [(name, n) for name, n, _ in per_file] == [("sacct/sacct_2026-08-31.psv", 3),
                                                     ("sacct/sacct_2026-09-01.psv", 4)]
