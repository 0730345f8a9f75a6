"""The report layer computes nothing: no report module aggregates (no GROUP BY), every section is
in its report's section list, and every report mart SQL file says what one row means."""

from __future__ import annotations

import re
from pathlib import Path

from gpusre.models.report_marts import REPORT_MARTS
from gpusre.reports.incident import INCIDENT_SECTIONS
from gpusre.reports.nightly import NIGHTLY_SECTIONS
from gpusre.reports.slo import SLO_SECTIONS

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"


def test_report_code_has_no_group_by() -> None:
    files = sorted(REPORTS.rglob("*.py"))
    assert len(files) > 30  # the kit, three reports and their section modules
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in files
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
                 if re.search(r"\bgroup\s+by\b", line, flags=re.I)]
    assert offenders == [], "report code aggregates; make it a mart in sql/marts/: " + ", ".join(offenders)


def test_each_section_module_is_in_its_report_list() -> None:
    for folder, specs in (("nightly", NIGHTLY_SECTIONS), ("slo", SLO_SECTIONS), ("incident", INCIDENT_SECTIONS)):
        keys = [s.key for s in specs]
        assert len(keys) == len(set(keys)), f"{folder}: duplicate section anchors"
        modules = {p.stem for p in (REPORTS / folder / "sections").glob("*.py") if p.stem != "__init__"}
        listed = {s.build.__module__.rsplit(".", 1)[-1] for s in specs}
        assert modules == listed, f"{folder}: section modules not in the list: {modules - listed}"


def test_report_marts_say_what_a_row_means() -> None:
    for name in REPORT_MARTS:
        text = (ROOT / "sql" / "marts" / f"{name}.sql").read_text(encoding="utf-8")
        header = text.split("CREATE", 1)[0]
        assert header.startswith(f"-- marts.{name}") and re.search(r"one row per", header), name
