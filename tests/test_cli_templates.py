"""`gpusre templates`: one CSV row per input line, grouped as well as published Drain."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl

from gpusre.models.logs.templates import grouping_accuracy, mine_lines

FIXTURES = Path(__file__).parent / "fixtures"


def _templates(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpusre.pipelines.cli", "templates", *args],
                          capture_output=True, text=True, timeout=300)


def test_syslog_file_gets_one_row_per_line(tmp_path: Path) -> None:
    log = FIXTURES / "syslog" / "Linux_2k.log"
    out = tmp_path / "t.csv"
    proc = _templates(str(log), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = pl.read_csv(out)
    n_lines = len(log.read_bytes().splitlines())
    assert rows.columns == ["line_no", "template_id", "template"]
    assert rows["line_no"].to_list() == list(range(1, n_lines + 1))
    truth = pl.read_csv(FIXTURES / "syslog" / "Linux_2k.log_structured.csv")
    # The message after the syslog header is what is templated; compare with loghub's grouping.
    assert grouping_accuracy(truth["EventId"], rows["template_id"]) >= 0.69


def test_raw_format_and_missing_file(tmp_path: Path) -> None:
    raw = tmp_path / "lines.txt"
    raw.write_text("disk sda1 failed at 12:00\ndisk sdb2 failed at 13:05\nlink up\n")
    out = tmp_path / "t.csv"
    assert _templates(str(raw), "--format", "raw", "--out", str(out)).returncode == 0
    rows = pl.read_csv(out)
    assert rows["template_id"][0] == rows["template_id"][1] != rows["template_id"][2]
    missing = _templates(str(tmp_path / "nope.log"), "--out", str(out))
    assert missing.returncode == 1 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_raw_format_sets_the_header_aside(tmp_path: Path) -> None:
    # A raw Loghub log (gzip, as rotated logs are), headers and all: raw templates the message
    # after the header it learns from the file, and groups as well as mining Loghub's own message
    # column does; lines (the whole line is the message) groups worse.
    log = FIXTURES / "loghub" / "Mac_2k.log.gz"
    truth = pl.read_csv(FIXTURES / "loghub" / "Mac_2k.log_structured_corrected.csv", infer_schema=False)
    ga = {}
    for fmt in ("raw", "lines"):
        out = tmp_path / f"{fmt}.csv"
        proc = _templates(str(log), "--format", fmt, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        rows = pl.read_csv(out)
        assert rows["line_no"].to_list() == list(range(1, truth.height + 1))
        ga[fmt] = grouping_accuracy(truth["EventId"], rows["template_id"])
    message_only = grouping_accuracy(truth["EventId"], mine_lines(truth["Content"])["template_id"])
    assert ga["raw"] >= message_only > ga["lines"], ga
