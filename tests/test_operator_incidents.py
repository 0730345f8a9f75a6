"""The operator's hand-kept ``incidents.csv``, as a spreadsheet saves it.

Hand-computed cases: a header in any case with spaces for underscores, padded cells, a BOM and CRLF
line ends load like the canonical file; the component is put into the catalog's vocabulary (else an
operator's ``GPU`` incident counts under ``other`` in MTBF per class), and free text no rule knows is
kept as written.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.component_classes import class_of
from gpusre.models.sources.incidents import parse as incidents_parse
from gpusre.models.sources.incidents.parse import catalog_component, read_operator_incidents

CANONICAL = "id,start,end,component,root_cause,nodes,notes\nOPS-1,2026-11-30T10:20:00Z,2026-11-30T10:40:00Z,gpu,xid 79,gpu[003-004],swapped\n"


@pytest.mark.parametrize("text", [
    CANONICAL,
    "\ufeffID,Start,End,Component,Root cause,Nodes,Notes\r\n"
    "OPS-1 , 2026-11-30 10:20 , 2026-11-30 10:40:00 , GPU , xid 79 , gpu[003-004] , swapped \r\n",
    "id , start , end , component , root-cause , nodes , notes\n"
    "OPS-1,2026-11-30T10:20:00,2026-11-30T10:40:00+00:00,Gpu,xid 79,\"gpu003, gpu004\",swapped\n",
])
def test_spreadsheet_forms_load_like_the_canonical_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "incidents.csv"
    path.write_bytes(text.encode("utf-8"))
    incidents, rejects = read_operator_incidents(path)
    assert rejects.height == 0
    row = incidents.row(0, named=True)
    assert (row["id"], row["component"], row["root_cause"], row["notes"]) == ("OPS-1", "gpu", "xid 79", "swapped")
    assert (row["start"].isoformat(), row["end"].isoformat()) == ("2026-11-30T10:20:00+00:00", "2026-11-30T10:40:00+00:00")
    assert row["nodes"] in ("gpu[003-004]", "gpu003, gpu004")


@pytest.mark.parametrize(("written", "component", "component_class"), [
    ("gpu", "gpu", "gpu"),
    ("NVSwitch", "nvswitch", "nvlink"),        # a catalog component in another case
    ("NVLink", "nvlink", "nvlink"),
    ("InfiniBand", "network", "network"),      # words the drain-reason rules know
    ("IB", "network", "network"),
    ("Lustre", "storage", "storage"),
    ("PSU", "host_power", "power"),
    ("DIMM", "host_memory", "host"),
    ("cooling", "thermal", "thermal"),
    ("HBM", "gpu_memory", "gpu"),
    ("ip_configuration", "ip_configuration", "other"),   # free text: kept, class other
    ("firmware", "firmware", "other"),         # a rule matches, but only to 'other': the operator's word is kept
    ("", "", "other"),
])
def test_component_in_the_catalog_vocabulary(written: str, component: str, component_class: str) -> None:
    out = catalog_component(pl.Series("component", [written]))
    assert out.to_list() == [component]
    assert pl.select(class_of(pl.lit(out[0]))).item() == component_class


def test_catalog_component_keeps_nulls_and_its_doctest_holds() -> None:
    assert catalog_component(pl.Series("component", [None], dtype=pl.String)).to_list() == [None]
    assert doctest.testmod(incidents_parse).failed == 0


def test_a_header_spelled_twice_is_one_reject(tmp_path: Path) -> None:
    path = tmp_path / "incidents.csv"
    path.write_text("id,start,end,component,root_cause,nodes,Notes,notes\nA,2026-11-30,2026-11-30,gpu,x,n1,a,b\n")
    incidents, rejects = read_operator_incidents(path)
    assert incidents.height == 0 and rejects["line_no"].to_list() == [0]
    assert rejects["error"][0].startswith("not a readable CSV")
