"""Probe AU, F6: every argument error is one line (README: errors are one line), a refused command leaves no
file behind, the one duration formatter rounds a half up, and the SLO repair bullet never drops a class."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpusre.pipelines.cli import main
from gpusre.reports.kit.formatting import fmt_span, span_hours
from gpusre.reports.slo.sections.repairs import _month_clause, repair_hours


def _gpusre(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpusre.pipelines.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.mark.parametrize(("args", "error"), [
    (["report", "nightly", "--warehouse", "w.duckdb", "--out", "r", "--date", "yesterday"],
     "gpusre: error: report nightly: argument --date: not a date (YYYY-MM-DD): 'yesterday' "
     "(see: gpusre report nightly --help)"),
    (["report", "nightly", "--warehouse", "w.duckdb", "--out", "r", "--date", "2026-13-01"],
     "gpusre: error: report nightly: argument --date: not a date (YYYY-MM-DD): '2026-13-01' "
     "(see: gpusre report nightly --help)"),
    (["simulate", "--out", "x", "--nodes", "zero"],
     "gpusre: error: simulate: argument --nodes: not a whole number: 'zero' (see: gpusre simulate --help)"),
    (["compact", "--warehouse", "w.duckdb", "--keep-days", "-1"],
     "gpusre: error: compact: argument --keep-days: must be >= 0: -1 (see: gpusre compact --help)"),
    (["report", "incident", "--warehouse", "w.duckdb"],
     "gpusre: error: report incident: the following arguments are required: ID, --out "
     "(see: gpusre report incident --help)"),
    (["frobnicate"], None),
])
def test_every_argument_error_is_one_line(tmp_path: Path, args: list[str], error: str | None) -> None:
    proc = _gpusre(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("gpusre: error: ")
    assert "usage:" not in proc.stderr
    if error is not None:
        assert proc.stderr == error + "\n"
    assert list(tmp_path.iterdir()) == []


def test_compact_on_a_missing_warehouse_leaves_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compact", "--warehouse", str(tmp_path / "wh" / "nope.duckdb")]) == 1
    assert capsys.readouterr().err == (f"gpusre: error: {tmp_path / 'wh' / 'nope.duckdb'}: warehouse file does not "
                                       "exist (run gpusre run first)\n")
    assert list(tmp_path.iterdir()) == []  # no nope.duckdb.lock, no logs/


@pytest.mark.parametrize("landing", ["missing", "empty", "file", "bad-yaml"])
def test_a_refused_run_leaves_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], landing: str) -> None:
    src = tmp_path / "in"
    if landing == "empty":
        src.mkdir()
    elif landing == "file":
        src.write_text("not a folder")
    elif landing == "bad-yaml":
        (src / "sacct").mkdir(parents=True)
        (src / "sacct" / "a.psv").write_text("JobID|State\n1|COMPLETED\n")
        (src / "cluster.yaml").write_text("timezone: Nowhere/Land\n")
    out = tmp_path / "out"
    assert main(["run", "--landing", str(src), "--warehouse", str(out / "wh.duckdb")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gpusre: error: ")
    expected = {"missing": "landing directory does not exist", "empty": "no input files (expected any of sacct/, ",
                "file": "is a file, not a landing directory", "bad-yaml": "timezone: unknown IANA time zone"}[landing]
    assert expected in err
    assert not out.exists()  # no warehouse folder, logs/, reports/ or lock


def test_docs_check_alone_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "--check"]) == 2
    assert capsys.readouterr().err == "gpusre: error: docs: --check needs --readme [PATH] (gpusre docs --readme --check)\n"


def test_a_half_rounds_up_in_the_one_duration_formatter() -> None:
    # probe AU: gpu003 drained 10:05:00, 4.5 min after the Xid of 10:00:30 (detect 0.075 h): '5 min', not '4 min'
    assert span_hours(0.075) == "5 min"
    assert fmt_span(270) == "5 min"
    assert fmt_span(150) == "3 min"        # 2.5 min: half up, not to even ('2 min')
    assert fmt_span(89.5) == "90 s"
    assert fmt_span(29.6 * 60) == "30 min"
    assert span_hours(3.45) == "3.5 h"
    assert span_hours(2.25) == "2.3 h"     # format's half to even: '2.2 h'
    assert span_hours(0.036111) == "2 min"


def test_the_repair_bullet_names_every_class() -> None:
    """Probe AU: four classes repaired in 2026-11 (GPU 3.99 h, host 2.0 h, network 2.17 h, storage 1.17 h, one
    repair each): the first three by name, storage as '1 more class (storage)', never dropped."""
    def row(klass: str, hours: float) -> dict[str, object]:
        return {"component_class": klass, "repaired": 1, "ongoing": 0, "mttr_hours_p50": hours, "mttr_hours_mean": hours}

    by_class = {"all": {"component_class": "all", "repaired": 4, "ongoing": 0, "mttr_hours_p50": 2.083333,
                        "mttr_hours_mean": 2.331944},
                **{k: row(k, h) for k, h in (("gpu", 3.991667), ("host", 2.002778), ("network", 2.166667),
                                             ("storage", 1.166667))}}
    text = _month_clause("2026-11", by_class)
    assert text.startswith(f"2026-11: median time to repair {repair_hours(2.083333)} over 4 repairs "
                           f"(mean {repair_hours(2.331944)}); GPU {repair_hours(3.991667)}")
    assert text.endswith(" and 1 more class (storage)")
    assert text.count("(mean ") == 4  # the month and the three named classes
