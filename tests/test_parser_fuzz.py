"""Every parser the landing reaches, fuzzed (hypothesis): whatever the input, the outcome is records
and rejects that account for every record read (or, for a file unusable as a whole, the parser's
own one-line format error, which the ingest turns into a line-0 reject; for cluster.yaml, a
one-line ``ClusterConfigError``). Never another exception.

Inputs are built from the formats' own vocabulary (field names, states, timestamps, JSON
structures of real payloads with parts replaced by values of the wrong type), not only random
bytes, so the fuzz reaches the typing code. max_examples stays modest: the suite runs on 2 cores.
"""

from __future__ import annotations

import copy
import gzip
import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpusre.models.sources.alerts.parse import parse_alert_file
from gpusre.models.ingest.landing_files import LandingFileFault, read_landing_file
from gpusre.models.sources.incidents.parse import read_operator_incidents
from gpusre.models.sources.sacct.parse import SacctFormatError, parse_sacct_json, parse_sacct_text
from gpusre.models.sources.slurm_events.parse import SlurmEventsFormatError, parse_sinfo_reasons_text, parse_slurm_events_text
from gpusre.models.sources.syslog.parse import parse_syslog_bytes
from gpusre.pipelines.config import ClusterConfigError, parse_cluster_config

FIXTURES = Path(__file__).parent / "fixtures"
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Field values that are valid somewhere, near-valid, or wrong: the typing code's edge cases.
_VALUES = st.one_of(
    st.sampled_from(["", "Unknown", "None", "UNLIMITED", "COMPLETED", "CANCELLED by 1000", "FAILED", "RUNNING",
                     "0:0", "1:15", "2026-09-01T10:00:00", "2026-02-30T25:61:61", "1-02:03:04", "00:00:00",
                     "99999999999999999999", "-1", "gpu[001-004]", "gpu[004-001]", "gpu[", "billing=8,gres/gpu=8",
                     "gres/gpu:h100=99999999999", "123_[1-5]", "123_[5-1%2]", "123+0", "123.batch", "123.4294967294",
                     "\u00e9\u00e8", "\ufffd", "1e308", "NaN", " 12 ", "|", "\t"]),
    st.text(max_size=20),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)
_SACCT_FIELDS = ["JobID", "JobIDRaw", "JobName", "User", "UID", "Group", "Account", "Partition", "QOS", "State",
                 "ExitCode", "Submit", "Eligible", "Start", "End", "Elapsed", "ElapsedRaw", "Timelimit",
                 "TimelimitRaw", "NNodes", "NCPUS", "AllocTRES", "AllocGRES", "NodeList", "Comment", "Restarts",
                 "Cluster"]


@st.composite
def sacct_dumps(draw: st.DrawFn) -> str:
    extra = draw(st.lists(st.sampled_from(_SACCT_FIELDS), max_size=8, unique=True))
    fields = draw(st.permutations(list(dict.fromkeys(["JobID", "State", *extra]))))
    rows = draw(st.lists(st.lists(_VALUES, min_size=len(fields) - 1, max_size=len(fields) + 1), max_size=8))
    trailing = "|" if draw(st.booleans()) else ""
    return "\n".join(["|".join(fields) + trailing, *("|".join(r) + trailing for r in rows)]) + "\n"


@FUZZ
@given(text=sacct_dumps(), tz=st.sampled_from(["UTC", "America/Chicago", "Asia/Kolkata"]))
def test_sacct_text_never_crashes(text: str, tz: str) -> None:
    try:
        parsed = parse_sacct_text(text, "f.psv", timezone=tz)
    except SacctFormatError:
        return
    assert parsed.rows_read == parsed.records.height + parsed.rejects.height


@FUZZ
@given(data=st.binary(max_size=400))
def test_sacct_text_bytes_never_crash(data: bytes) -> None:
    try:
        parsed = parse_sacct_text(data.decode("utf-8", errors="replace"), "f.psv")
    except SacctFormatError:
        return
    assert parsed.rows_read == parsed.records.height + parsed.rejects.height


#: Any JSON value, the wrong types included.
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indexes) into a JSON document."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    doc = copy.copy(doc)
    doc[path[0]] = _replace(doc[path[0]], path[1:], value)
    return doc


@st.composite
def mutated(draw: st.DrawFn, doc: Any) -> Any:
    """A real document with 1-4 of its values (at any depth) replaced by any JSON value."""
    paths = _paths(doc)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths))
        try:
            doc = _replace(doc, path, draw(_JSON))
        except (KeyError, IndexError, TypeError):  # an earlier replacement removed the path
            continue
    return doc


_SACCT_JSON = [json.loads(p.read_text()) for p in sorted((FIXTURES / "sacct" / "slurmrestd_json_slurmweb").glob("*.json"))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.sampled_from(_SACCT_JSON).flatmap(mutated))
def test_sacct_json_structure_fuzz_never_crashes(doc: Any) -> None:
    try:
        parsed = parse_sacct_json(json.dumps(doc), "f.json")
    except SacctFormatError:
        return
    assert parsed.rows_read == parsed.records.height + parsed.rejects.height


_TS = st.one_of(
    st.builds(lambda y, mo, d, h, mi, s, off: f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{off}",
              st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25), st.integers(0, 61),
              st.integers(0, 61), st.sampled_from(["", "Z", "+00:00", "-05:00", "+99:00", "+14:00", "-23:59", ".123456Z"])),
    st.builds(lambda mon, d, h: f"{mon} {d:2d} {h:02d}:00:00", st.sampled_from(["Jan", "Feb", "Dec", "Foo"]),
              st.integers(0, 40), st.integers(0, 30)),
    st.builds(lambda up: f"[{up:12.6f}]", st.floats(0, 1e9, allow_nan=False)),
    st.sampled_from(["<13>1 2026-09-01T10:00:00Z gpu001 kernel - - -", "[Tue Sep  1 10:00:00 2026]",
                     '{"__REALTIME_TIMESTAMP": "1", "MESSAGE": [1, 2]}', '{"MESSAGE": "x"}', "<6>", "  "]),
)
_SYSLOG_LINE = st.builds(lambda ts, host, msg: f"{ts} {host} {msg}", _TS,
                         st.sampled_from(["gpu001", "gpu001.example.com", "-", ""]),
                         st.one_of(st.text(max_size=30), st.sampled_from(
                             ["kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                              "slurmd[12]: error: node_fail", "sshd[1]: ok"])))


@FUZZ
@given(lines=st.lists(st.one_of(_SYSLOG_LINE, st.text(max_size=40)), max_size=12),
       tz=st.sampled_from(["UTC", "Europe/Berlin"]))
def test_syslog_never_crashes(lines: list[str], tz: str) -> None:
    parsed = parse_syslog_bytes("\n".join(lines).encode("utf-8", errors="surrogatepass"), "syslog/x.log",
                                timezone=tz, host_from_name="gpu009")
    assert parsed.rows_read == parsed.lines.height + parsed.rejects.height


@FUZZ
@given(data=st.binary(max_size=500))
def test_syslog_bytes_never_crash(data: bytes) -> None:
    parsed = parse_syslog_bytes(data, "syslog/x.log")
    assert parsed.rows_read == parsed.lines.height + parsed.rejects.height


_EVENT_FIELDS = ["Cluster", "NodeName", "TimeStart", "Start", "TimeEnd", "End", "Duration", "State", "StateRaw",
                 "Reason", "User", "Event", "ClusterNodes"]


@FUZZ
@given(data=st.data(), tz=st.sampled_from(["UTC", "America/Chicago"]))
def test_sacctmgr_events_never_crash(data: st.DataObject, tz: str) -> None:
    fields = data.draw(st.lists(st.sampled_from(_EVENT_FIELDS), min_size=1, max_size=8, unique=True))
    values = st.one_of(_VALUES, _TS, st.sampled_from(["DOWN", "DRAIN", "DRAIN+NOT_RESPONDING", "513", "65536",
                                                       "root(0)", "bob", "node", "cluster", "1-00:00:00"]))
    rows = data.draw(st.lists(st.lists(values, min_size=len(fields), max_size=len(fields) + 1), max_size=6))
    text = "\n".join(["|".join(fields), *("|".join(r) for r in rows)]) + "\n"
    try:
        parsed = parse_slurm_events_text(text, "slurm_events/e.txt", timezone=tz)
    except SlurmEventsFormatError:
        return
    assert parsed.rows_read == parsed.records.height + parsed.rejects.height


@FUZZ
@given(rows=st.lists(st.lists(st.one_of(_VALUES, _TS), min_size=3, max_size=6), max_size=6))
def test_sinfo_snapshot_never_crashes(rows: list[list[str]]) -> None:
    text = "\n".join("|".join(r) for r in rows) + "\n"
    try:
        parsed = parse_sinfo_reasons_text(text, "slurm_events/sinfo-x.txt", observed_ts=datetime(2026, 9, 1, tzinfo=UTC))
    except SlurmEventsFormatError:
        return
    assert parsed.rows_read == parsed.records.height + parsed.rejects.height


_ALERT_DOCS = [json.loads(p.read_text()) for p in sorted((FIXTURES / "alerts").glob("*.json"))]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.sampled_from(_ALERT_DOCS).flatmap(mutated), lines=st.booleans())
def test_alert_payload_structure_fuzz_never_crashes(doc: Any, lines: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("a.jsonl" if lines else "a.json")
        path.write_text(json.dumps(doc) if not lines else json.dumps(doc) + "\nnot json\n" + json.dumps(doc) + "\n")
        parsed = parse_alert_file(path, "alerts/a")
    # Every reject says where and why; every notification is one of this file's.
    assert parsed.rejects.filter((pl.col("line_no") < 1) | pl.col("error").is_null()).height == 0
    assert set(parsed.notifications["source_file"].to_list()) <= {"alerts/a"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300))
def test_alert_bytes_never_crash(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "a.jsonl"
        path.write_bytes(data)
        try:
            parse_alert_file(path, "alerts/a")
        except LandingFileFault:  # unreadable as a whole (e.g. gzip magic, then garbage): refused
            pass


_CONFIG_KEYS = ["cluster", "timezone", "nodes", "gpus_per_node", "gpu_type", "racks", "leaf_switches", "maintenance",
                "sacct", "reliability", "slo", "alerts"]


@FUZZ
@given(config=st.dictionaries(st.sampled_from(_CONFIG_KEYS), _JSON, max_size=4) | _JSON)
def test_cluster_yaml_is_valid_or_one_config_error(config: Any) -> None:
    try:
        parse_cluster_config(yaml.safe_dump(config), "cluster.yaml")
    except ClusterConfigError as exc:
        assert "\n" not in str(exc).strip() or str(exc).startswith("cluster.yaml")


@FUZZ
@given(text=st.text(max_size=200))
def test_cluster_yaml_text_never_crashes(text: str) -> None:
    try:
        parse_cluster_config(text, "cluster.yaml")
    except ClusterConfigError:
        pass


@FUZZ
@given(rows=st.lists(st.lists(st.one_of(_VALUES, _TS), min_size=0, max_size=8), max_size=6),
       header=st.sampled_from(["id,start,end,component,root_cause,nodes,notes", "id,start,end,component,root_cause,nodes",
                               "id,start", ""]))
def test_incidents_csv_never_crashes(rows: list[list[str]], header: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "incidents.csv"
        path.write_text("\n".join([header, *(",".join(r) for r in rows)]) + "\n")
        incidents, rejects = read_operator_incidents(path)
    assert incidents.height + rejects.height >= 0 and set(rejects.columns) >= {"line_no", "error"}


@FUZZ
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=300), cut=st.integers(0, 400),
       codec=st.sampled_from(["gzip", "plain"]))
def test_landing_file_reader_keeps_complete_lines_before_a_fault(text: str, cut: int, codec: str) -> None:
    raw = text.encode()
    blob = gzip.compress(raw) if codec == "gzip" else raw
    assume(codec == "plain" or cut == 0 or cut >= 2)  # one byte is not yet recognizable as gzip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.gz"
        path.write_bytes(blob[:cut])
        read = read_landing_file(path)
    assert raw.startswith(read.data)
    if read.fault is None:  # read whole: all of it (an empty file is no gzip stream at all)
        assert read.data == (raw[:cut] if codec == "plain" or cut == 0 else raw)
    else:
        assert read.data.endswith(b"\n") or read.data == b""
