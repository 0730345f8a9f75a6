"""The node-log event catalog: typed loaders for ``catalog/*.csv`` and a vectorized line classifier.

Four data files, shipped as package data in :mod:`gpusre.models.catalog`, hold every fact; this
module only loads, validates and applies them (no per-code ``if`` anywhere):

* ``xid.csv`` — every NVIDIA Xid code of the current NVIDIA Xid catalog (1–172) with mnemonic,
  component, cause class, severity, NVIDIA's immediate resolution bucket (``action``), production
  health-check lists (Azure fatal, AWS tier) and a ``repeat_threshold`` for codes that are
  informational unless repeated (63, 92).
* ``sxid.csv`` — NVSwitch SXid codes (Fabric Manager guide: non-fatal / fatal / always fatal).
* ``log_patterns.csv`` — one row per recognised log line shape, in priority order (first match
  wins). Rows whose ``catalog`` is ``xid``/``sxid`` extract a ``code`` whose classes come from the
  matching catalog; their own classes are those of a code the catalog does not know, and must say
  so: cause class ``unknown`` (:data:`UNCATALOGUED_CAUSE`), action ``CHECK_CATALOG``, severity at
  most ``medium``. New drivers add Xids every release: such a line is kept with its code, visible
  as uncatalogued (``marts.uncatalogued_codes``), and is no failure evidence until the catalog
  gives its code classes. A row without a ``catalog`` may still extract a code and keeps its own
  classes: the Xid 154 rows read the recovery action the line spells out (``GPU Reset Required`` →
  ``RESET_GPU``) and come before the generic Xid row.
* ``regex_fragments.csv`` — named regex fragments a ``log_patterns.csv`` regex writes as ``{NAME}``,
  expanded when it loads: a line shape that many rules share is defined once (``{SLURMD_HEALTH_CHECK}``,
  slurmd's relay of a failed health check, and ``{NHC_FAILED}``, NHC's own failure line, in front of every
  ``nhc_*`` rule).

:func:`classify_messages` runs on whole columns: one Aho–Corasick pass (``str.contains_any``) over
all messages keeps only lines holding some pattern's literal, then each pattern's regex runs on
those candidates only. On real logs events are a few percent of lines, so the regex cost is paid
on a small slice.

>>> out = classify_messages(pl.Series([
...     "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
...     "systemd[1]: Started Session 4 of user root.",
... ]))
>>> out.select("kind", "code", "gpu_pci", "component", "cause_class").row(0)
('xid', 79, '0000:3b:00.0', 'pcie_bus', 'hardware')
>>> out.row(1, named=True)["kind"] is None
True
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import polars as pl

from gpusre.models.logs.masking import canonical_digits

__all__ = [
    "ACTIONS",
    "ACTION_STRENGTH",
    "AWS_TIERS",
    "CATALOG_LOOKUPS",
    "CAUSE_CLASSES",
    "CLASSIFIED_SCHEMA",
    "COMPONENTS",
    "PCI_ROLES",
    "REGEX_FRAGMENTS_FILE",
    "SEVERITIES",
    "SEVERITY_RANK",
    "UNCATALOGUED_ACTION",
    "UNCATALOGUED_CAUSE",
    "UNCATALOGUED_MAX_SEVERITY",
    "CatalogError",
    "FATALITY_WORDS",
    "action_strength",
    "RECORD_UNKNOWN_CAP",
    "classify_messages",
    "may_match_canonical",
    "load_log_patterns",
    "load_regex_fragments",
    "fails_in_flight_kinds",
    "load_sxid_catalog",
    "load_xid_catalog",
    "xid_event_action",
    "normalize_pci",
]

#: Where a fault sits. The first ten are the Xid components; ``gpu`` (some part of the GPU) is that
#: of an Xid whose code the catalog does not know; the rest cover non-Xid node events.
COMPONENTS: frozenset[str] = frozenset(
    {
        "gpu_compute", "gpu_memory", "nvlink", "pcie_bus", "gsp_firmware", "power", "thermal",
        "user_application", "driver", "other", "gpu",
        "nvswitch", "network", "host_memory", "host_cpu", "host_power", "storage", "local_disk", "os", "slurm",
    }
)
#: Routing default for "whose fault": ``system_software`` (OS, file systems, Slurm daemons) is
#: added to the Xid classes because a Lustre outage or a kernel panic is infrastructure but
#: neither GPU hardware nor the GPU driver. ``unknown`` is the class of an Xid / SXid whose code the
#: catalog does not know (:data:`UNCATALOGUED_CAUSE`); a catalog row never has it.
CAUSE_CLASSES: frozenset[str] = frozenset(
    {"hardware", "driver_firmware", "user_application", "sympathetic", "informational", "system_software",
     "unknown"}
)
#: Cause class, action and highest severity of an Xid / SXid line whose code ``xid.csv`` /
#: ``sxid.csv`` does not list: the ``log_patterns.csv`` rows with a ``catalog`` must carry them. Not
#: ``driver_firmware``/``CONTACT_SUPPORT``: invented classes hid the new code and blamed the job's
#: user; ``unknown`` keeps it out of failure evidence and tells the SRE to look the code up.
UNCATALOGUED_CAUSE = "unknown"
UNCATALOGUED_ACTION = "CHECK_CATALOG"
UNCATALOGUED_MAX_SEVERITY = "medium"
#: Severities, most severe first; :data:`SEVERITY_RANK` orders them (0 = critical).
SEVERITIES: tuple[str, ...] = ("critical", "high", "medium", "low", "info")
SEVERITY_RANK: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}
#: NVIDIA's immediate resolution buckets, then gpusre's for non-Xid events (RESET_FABRIC and
#: CHECK_THERMALS come from the NVSwitch SXid guidance; CHECK_LINK, CHECK_STORAGE, DRAIN_NODE,
#: MONITOR = count and escalate on repeats, CHECK_CATALOG = an Xid / SXid code the catalog does not
#: know: read NVIDIA's documentation of the code and add it to the catalog, and CHECK_BMC = a hardware
#: outage that no log line shows, only Slurm's node states: the node's BMC event log (SEL) holds what the
#: host could not log, and the drain reason names the part).
ACTIONS: frozenset[str] = frozenset(
    {
        "RESTART_APP", "RESET_GPU", "RESTART_BM", "RESTART_VM", "RESTART_FM", "IGNORE",
        "CONTACT_SUPPORT", "CHECK_MECHANICALS", "CHECK_UVM", "UPDATE_SWFW", "WORKFLOW_XID_45",
        "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR", "XID_154",
        "RESET_FABRIC", "CHECK_THERMALS", "CHECK_LINK", "CHECK_STORAGE", "DRAIN_NODE", "MONITOR",
        "CHECK_CATALOG", "CHECK_BMC",
    }
)
#: :data:`ACTIONS`, weakest first: what recovering takes out of service, then how far the SRE's work goes
#: (NVIDIA's recovery ladder — no action, the application, the GPU, the fabric, the node — then a hands-on
#: check or an update, then NVIDIA's investigation workflows, then a part's replacement). An incident whose
#: Xid 154 line names a stronger recovery than its evidence's catalog action takes the 154's
#: (:mod:`gpusre.models.failures.hw_incidents`, rule 4r):
#: ``0x3 (Drain P2P)`` = RESTART_APP < ``0x1 (GPU Reset Required)`` / ``0x4 (Drain and Reset)`` = RESET_GPU <
#: ``0x2 (Node Reboot Required)`` = RESTART_BM (NVML ``nvmlDeviceGpuRecoveryAction_t``). A workflow
#: (``WORKFLOW_NVLINK5_ERR``) ranks above a reboot: NVIDIA's NVLink5 workflow begins with the 154's recovery
#: and goes on to the investigation, so the incident keeps it; its 154 line shows in the incident's members.
ACTION_STRENGTH: tuple[str, ...] = (
    "IGNORE", "XID_154", "MONITOR", "CHECK_CATALOG",
    "RESTART_APP", "CHECK_UVM",
    "RESET_GPU",
    "RESTART_FM", "RESET_FABRIC",
    "RESTART_VM", "RESTART_BM",
    "DRAIN_NODE", "CHECK_BMC", "CHECK_LINK", "CHECK_STORAGE", "CHECK_THERMALS", "UPDATE_SWFW",
    "WORKFLOW_XID_45", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_XID_48",
    "CHECK_MECHANICALS", "CONTACT_SUPPORT",
)
# Every action is ranked exactly once: an action added to ACTIONS without a rank would compare as unknown (-1).
assert set(ACTION_STRENGTH) == set(ACTIONS) and len(ACTION_STRENGTH) == len(ACTIONS), \
    set(ACTIONS) ^ set(ACTION_STRENGTH)


def action_strength(expr: pl.Expr) -> pl.Expr:
    """Position of the catalog action ``expr`` in :data:`ACTION_STRENGTH` (higher = stronger); null or unknown -1."""
    return expr.replace_strict({a: i for i, a in enumerate(ACTION_STRENGTH)}, default=-1, return_dtype=pl.Int32)


#: AWS health-check severity tiers (empty = not listed by AWS).
AWS_TIERS: frozenset[str] = frozenset({"ISOLATE", "REBOOT", "RESET", "MONITOR", ""})
#: What the PCI address a pattern extracts belongs to; only ``gpu`` fills ``gpu_pci``.
PCI_ROLES: frozenset[str] = frozenset({"gpu", "nvswitch", "nic", "pcie_port", "device", ""})
#: Which catalog a pattern's ``code`` group is looked up in.
CATALOG_LOOKUPS: frozenset[str] = frozenset({"xid", "sxid", ""})

#: Output of :func:`classify_messages`, one row per input message, all null when nothing matched.
CLASSIFIED_SCHEMA: dict[str, pl.DataType] = {
    "kind": pl.String(),
    "code": pl.Int32(),
    "gpu_pci": pl.String(),
    "device_pci": pl.String(),
    "port": pl.String(),
    "gpu_index": pl.Int32(),
    "component": pl.String(),
    "cause_class": pl.String(),
    "severity": pl.String(),
    "action": pl.String(),
    "pattern_id": pl.String(),
}

_BOOL = {"true": True, "false": False}
_KIND = re.compile(r"^[a-z][a-z0-9_]*$")
#: Named regex groups the classifier reads; other named groups are documentation. ``fatal`` and
#: ``record`` are not output columns: they adjust the severity (see :data:`FATALITY_WORDS`).
_GROUPS = ("code", "pci", "port", "gpu", "fatal", "record")
#: What a line's own fatality word (a pattern's ``(?P<fatal>...)`` group, lower-cased) does to the
#: catalog severity: ``("floor", s)`` makes it at least ``s``, ``("cap", s)`` at most ``s``. The
#: NVSwitch driver prints ``Fatal`` / ``Non-fatal`` on each SXid (NVIDIA's Fabric Manager guide: a
#: non-fatal SXid is informational; Fabric Manager neither stops jobs nor blocks launches), Fabric
#: Manager ``detected NVSwitch fatal|non-fatal error``, APEI/GHES ``event severity: fatal|recoverable|
#: corrected|info``, and NVLink5 Xids 144-150 ``Nonfatal`` / ``Fatal`` per sub-code (NVIDIA's Xid catalog: a
#: Nonfatal sub-code is IGNORE; the Xid pattern captures only the non-fatal words, so a ``Fatal`` one keeps its
#: catalog severity). Words not listed leave the catalog severity; an informational line is never raised.
FATALITY_WORDS: dict[str, tuple[str, str]] = {
    "fatal": ("floor", "high"),
    "non-fatal": ("cap", "medium"),
    "nonfatal": ("cap", "medium"),
    "corrected": ("cap", "low"),
    "info": ("cap", "info"),
    "informational": ("cap", "info"),
}
#: A line that belongs to a multi-line record (a ``(?P<record>...)`` group: the ``{N}`` of a GHES
#: ``{N}[Hardware Error]:`` record; an empty group for BERT's unnumbered ``[Hardware Error]:`` lines, one
#: record key ``""``) takes the fatality word of its record's line that carries one (the nearest earlier
#: line of the same record); without one it is capped at this severity: a part named by a record whose
#: severity is not known is evidence, not a failure.
RECORD_UNKNOWN_CAP = "medium"


class CatalogError(ValueError):
    """A catalog file that breaks its contract; the message names the file, row and column."""


@dataclass(frozen=True)
class _Column:
    """How one CSV column is checked and typed."""

    name: str
    kind: str = "str"  # str | int | opt_int | bool | enum | regex
    allowed: frozenset[str] | None = None
    required: bool = True  # a value must be present (not empty)


#: A catalogued code has a known cause: ``unknown`` is only for codes the catalog lacks.
_CATALOGUED_CAUSES = CAUSE_CLASSES - {UNCATALOGUED_CAUSE}
_XID_COLUMNS = (
    _Column("code", "int"),
    _Column("mnemonic"),
    _Column("description"),
    _Column("component", "enum", COMPONENTS),
    _Column("cause_class", "enum", _CATALOGUED_CAUSES),
    _Column("severity", "enum", frozenset(SEVERITIES)),
    _Column("action", "enum", ACTIONS),
    _Column("investigatory_action", required=False),
    _Column("user_app_likely", "bool"),
    _Column("azure_fatal", "bool"),
    _Column("aws_tier", "enum", AWS_TIERS, required=False),
    _Column("repeat_threshold", "opt_int", required=False),
    _Column("source"),
)
_SXID_COLUMNS = (
    _Column("code", "int"),
    _Column("name"),
    _Column("fatal", "bool"),
    _Column("fatal_class", "enum", frozenset({"non_fatal", "fatal", "always_fatal"})),
    _Column("component", "enum", frozenset({"nvswitch"})),
    _Column("cause_class", "enum", _CATALOGUED_CAUSES),
    _Column("severity", "enum", frozenset(SEVERITIES)),
    _Column("action", "enum", ACTIONS),
    _Column("source"),
)
_PATTERN_COLUMNS = (
    _Column("pattern_id"),
    _Column("kind"),
    _Column("literal"),
    _Column("regex", "regex"),
    _Column("catalog", "enum", CATALOG_LOOKUPS, required=False),
    _Column("pci_role", "enum", PCI_ROLES, required=False),
    _Column("component", "enum", COMPONENTS),
    _Column("cause_class", "enum", CAUSE_CLASSES),
    _Column("severity", "enum", frozenset(SEVERITIES)),
    _Column("action", "enum", ACTIONS),
    _Column("example"),
    _Column("source"),
    # true: the line reports that operations in flight already failed (a Lustre eviction, a soft-mount NFS
    # timeout): no later recovery of its part undoes that (:func:`fails_in_flight_kinds`). Empty: false.
    _Column("fails_in_flight", "bool", required=False),
)
_DTYPES = {"str": pl.String, "enum": pl.String, "regex": pl.String, "int": pl.Int32, "opt_int": pl.Int32, "bool": pl.Boolean}


def _read_text(file_name: str, source: Path | None) -> tuple[str, str]:
    """Return (label for messages, text) of a catalog file: the packaged one unless ``source``."""
    if source is not None:
        return str(source), Path(source).read_text(encoding="utf-8")
    resource = resources.files("gpusre.models.catalog").joinpath(file_name)
    return f"catalog/{file_name}", resource.read_text(encoding="utf-8")


def _parse_value(label: str, line_no: int, col: _Column, raw: str) -> object:
    """Check and convert one cell; raise :class:`CatalogError` naming file, line and column."""
    where = f"{label}: line {line_no}: column {col.name!r}"
    if raw == "":
        if col.required:
            raise CatalogError(f"{where}: value is required")
        return None if col.kind in ("opt_int", "int", "bool") else ""
    if col.kind in ("int", "opt_int"):
        if not re.fullmatch(r"\d+", raw):
            raise CatalogError(f"{where}: {raw!r} is not a non-negative integer")
        return int(raw)
    if col.kind == "bool":
        if raw not in _BOOL:
            raise CatalogError(f"{where}: {raw!r} is not true/false")
        return _BOOL[raw]
    if col.kind == "enum" and raw not in col.allowed:  # type: ignore[operator]
        raise CatalogError(f"{where}: {raw!r} is not one of {sorted(v for v in col.allowed if v)}")  # type: ignore[union-attr]
    if col.kind == "regex":
        try:
            re.compile(raw)
        except re.error as exc:
            raise CatalogError(f"{where}: invalid regex: {exc}") from None
        try:
            # The classifier runs the regex in Polars (Rust `regex` crate), which has no
            # look-around or backreferences: reject what Python accepts but Polars cannot run.
            pl.Series([""], dtype=pl.String).str.contains(raw)
        except pl.exceptions.PolarsError as exc:
            raise CatalogError(f"{where}: regex not supported by Polars: {exc}") from None
    return raw


#: ``catalog/regex_fragments.csv``: named regex fragments that catalog regexes write as ``{NAME}``.
REGEX_FRAGMENTS_FILE = "regex_fragments.csv"
_FRAGMENT_COLUMNS = (_Column("name"), _Column("regex", "regex"), _Column("note"))
_FRAGMENT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
#: ``{NAME}`` in a regex cell (not ``\{``): upper-case letters can never be a repetition (``{2,3}``), so the
#: placeholder cannot be mistaken for regex syntax, and an unexpanded one fails to compile.
_PLACEHOLDER = re.compile(r"(?<!\\)\{([A-Z][A-Z0-9_]*)\}")


@lru_cache(maxsize=1)
def load_regex_fragments() -> dict[str, str]:
    """Name → regex text of ``catalog/regex_fragments.csv`` (checked: exact header, each regex compiles in
    Python and Polars, names UPPER_SNAKE and unique).

    Why fragments: one line shape repeated inside many rules (slurmd's relay of a failed health check in front
    of every ``nhc_*`` rule of ``log_patterns.csv``) is one definition, written ``{SLURMD_HEALTH_CHECK}`` in
    the rules and expanded when the catalog is loaded; a change to it reaches every rule at once.

    Raises:
        CatalogError: the message names the file, the line and the column.
    """
    label, frame = _load_csv(REGEX_FRAGMENTS_FILE, _FRAGMENT_COLUMNS, None)
    _check_unique(label, frame, "name")
    for line_no, (name, regex) in enumerate(frame.select("name", "regex").iter_rows(), start=2):
        if not _FRAGMENT_NAME.match(name):
            raise CatalogError(f"{label}: line {line_no}: column 'name': {name!r} is not UPPER_SNAKE_CASE")
        if _PLACEHOLDER.search(regex):
            raise CatalogError(f"{label}: line {line_no}: column 'regex': a fragment cannot use another fragment")
    return dict(frame.select("name", "regex").iter_rows())


def _expand_fragments(where: str, raw: str, fragments: dict[str, str]) -> str:
    """``raw`` with each ``{NAME}`` replaced by its fragment's text; an unknown name is a :class:`CatalogError`."""
    def text_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in fragments:
            raise CatalogError(f"{where}: unknown fragment {{{name}}} (catalog/{REGEX_FRAGMENTS_FILE} defines "
                               f"{sorted(fragments)})")
        return fragments[name]
    return _PLACEHOLDER.sub(text_of, raw)


def _load_csv(file_name: str, columns: tuple[_Column, ...], source: Path | None,
              fragments: dict[str, str] | None = None) -> tuple[str, pl.DataFrame]:
    """Parse a catalog CSV strictly (exact header, typed cells) into a typed DataFrame. With ``fragments``
    (:func:`load_regex_fragments`), the ``{NAME}`` placeholders of regex cells are expanded before the cell
    is checked, so the frame holds the full regexes."""
    label, text = _read_text(file_name, source)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    expected = [c.name for c in columns]
    if header != expected:
        raise CatalogError(f"{label}: line 1: header {header} does not match expected columns {expected}")
    data: dict[str, list[object]] = {c.name: [] for c in columns}
    for line_no, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) != len(columns):
            raise CatalogError(f"{label}: line {line_no}: {len(row)} fields, expected {len(columns)}")
        for col, raw in zip(columns, row, strict=True):
            if fragments is not None and col.kind == "regex":
                raw = _expand_fragments(f"{label}: line {line_no}: column {col.name!r}", raw, fragments)
            data[col.name].append(_parse_value(label, line_no, col, raw))
    frame = pl.DataFrame(data, schema={c.name: _DTYPES[c.kind] for c in columns})
    return label, frame


def _check_unique(label: str, frame: pl.DataFrame, column: str) -> None:
    """Raise when a key column repeats a value (line numbers count the header as line 1)."""
    dup = frame.with_row_index("_i").filter(pl.col(column).is_duplicated())
    if dup.height:
        lines = [i + 2 for i in dup["_i"].to_list()]
        raise CatalogError(f"{label}: lines {lines}: duplicate {column} {dup[column][0]!r}")


def load_xid_catalog(source: Path | None = None) -> pl.DataFrame:
    """Load ``xid.csv`` (or ``source``): one row per NVIDIA Xid code, validated and typed.

    Columns: ``code`` Int32, ``mnemonic``, ``description``, ``component``, ``cause_class``,
    ``severity``, ``action`` (NVIDIA immediate bucket), ``investigatory_action``,
    ``user_app_likely`` / ``azure_fatal`` Boolean, ``aws_tier``, ``repeat_threshold`` Int32 (null
    unless the code is informational unless repeated: escalate above this count in 24 h), ``source``.

    Raises:
        CatalogError: bad header, bad value, or duplicate code; the message names file and line.
    """
    label, frame = _load_csv("xid.csv", _XID_COLUMNS, source)
    _check_unique(label, frame, "code")
    return frame


def load_sxid_catalog(source: Path | None = None) -> pl.DataFrame:
    """Load ``sxid.csv`` (or ``source``): NVSwitch SXid codes with fatality, classes and action.

    Raises:
        CatalogError: bad header, bad value, or duplicate code; the message names file and line.
    """
    label, frame = _load_csv("sxid.csv", _SXID_COLUMNS, source)
    _check_unique(label, frame, "code")
    return frame


def load_log_patterns(source: Path | None = None) -> pl.DataFrame:
    """Load ``log_patterns.csv`` (or ``source``): line patterns in priority order (first match wins).

    Beyond cell checks, each row must be self-consistent: ``kind`` is snake_case, the ``literal``
    prefilter occurs in the ``example`` and the ``regex`` matches it (so the prefilter can never
    hide a pattern's own line), and a row with a ``catalog`` has a ``(?P<code>...)`` group, the
    classes of an uncatalogued code (:data:`UNCATALOGUED_CAUSE`, :data:`UNCATALOGUED_ACTION`, severity
    at most :data:`UNCATALOGUED_MAX_SEVERITY`), and kind ``sxid`` exactly when its catalog is ``sxid``
    (``marts.uncatalogued_codes`` names the catalog by the kind). ``fails_in_flight`` (Boolean, empty =
    false) is a property of the event kind (events carry the kind, not the pattern): every row of a kind
    must agree on it. A ``{NAME}`` in a ``regex`` is a fragment of ``catalog/regex_fragments.csv``
    (:func:`load_regex_fragments`), expanded before these checks: the returned regexes are whole.

    Raises:
        CatalogError: the message names file, line and column.
    """
    return _packaged_log_patterns() if source is None else _checked_log_patterns(source)


@lru_cache(maxsize=1)
def _packaged_log_patterns() -> pl.DataFrame:
    # Why cached: the packaged file cannot change while a process runs, and its checks (every regex
    # compiled by Python and by Polars) cost ~0.06 s a load, which a night's run paid in several assets.
    return _checked_log_patterns(None)


def _checked_log_patterns(source: Path | None) -> pl.DataFrame:
    """:func:`load_log_patterns` without the cache."""
    label, frame = _load_csv("log_patterns.csv", _PATTERN_COLUMNS, source, load_regex_fragments())
    frame = frame.with_columns(pl.col("fails_in_flight").fill_null(False))
    _check_unique(label, frame, "pattern_id")
    mixed = frame.group_by("kind", maintain_order=True).agg(pl.col("fails_in_flight").n_unique()).filter(
        pl.col("fails_in_flight") > 1)
    if mixed.height:
        raise CatalogError(f"{label}: column 'fails_in_flight': the rows of kind {mixed['kind'][0]!r} disagree "
                           f"(it is read by kind: give the lines that differ a kind of their own)")
    for line_no, row in enumerate(frame.iter_rows(named=True), start=2):
        where = f"{label}: line {line_no} ({row['pattern_id']})"
        if not _KIND.match(row["kind"]):
            raise CatalogError(f"{where}: column 'kind': {row['kind']!r} is not snake_case")
        if row["literal"] not in row["example"]:
            raise CatalogError(f"{where}: column 'literal': {row['literal']!r} does not occur in the example")
        compiled = re.compile(row["regex"])
        if not compiled.search(row["example"]):
            raise CatalogError(f"{where}: column 'regex' does not match the example")
        if row["catalog"] and "code" not in compiled.groupindex:
            raise CatalogError(f"{where}: column 'regex' needs a (?P<code>...) group for catalog {row['catalog']!r}")
        if row["catalog"]:
            _check_uncatalogued_classes(where, row)
        if row["pci_role"] and "pci" not in compiled.groupindex:
            raise CatalogError(f"{where}: column 'regex' needs a (?P<pci>...) group for pci_role {row['pci_role']!r}")
    return frame


def fails_in_flight_kinds() -> list[str]:
    """Event kinds whose line says the operations in flight already failed (``log_patterns.csv``
    ``fails_in_flight``): a Lustre client evicted by its server (``This client was evicted``: its locks
    dropped, its in-progress RPCs failed), a soft NFS mount's ``not responding, timed out`` (EIO to the
    caller). Why: a recovery of the same part that follows (``Connection restored``, ``nfs: server … OK``)
    ends the outage but undoes nothing — unlike a lost connection, whose blocked I/O is replayed on
    reconnect — so job failure attribution does not let it clear such a line."""
    return sorted(set(load_log_patterns().filter(pl.col("fails_in_flight"))["kind"].to_list()))


def _check_uncatalogued_classes(where: str, row: dict[str, object]) -> None:
    """Raise unless a pattern row with a ``catalog`` carries the classes of an uncatalogued code."""
    if row["cause_class"] != UNCATALOGUED_CAUSE:
        raise CatalogError(f"{where}: column 'cause_class': a row with catalog {row['catalog']!r} classifies codes "
                           f"the catalog does not know, so must be {UNCATALOGUED_CAUSE!r}, not {row['cause_class']!r}")
    if row["action"] != UNCATALOGUED_ACTION:
        raise CatalogError(f"{where}: column 'action': a row with catalog {row['catalog']!r} must be "
                           f"{UNCATALOGUED_ACTION!r}, not {row['action']!r}")
    if SEVERITY_RANK[row["severity"]] < SEVERITY_RANK[UNCATALOGUED_MAX_SEVERITY]:  # type: ignore[index]
        raise CatalogError(f"{where}: column 'severity': an uncatalogued code is at most "
                           f"{UNCATALOGUED_MAX_SEVERITY!r}, not {row['severity']!r}")
    if (row["kind"] == "sxid") != (row["catalog"] == "sxid"):
        raise CatalogError(f"{where}: column 'kind': kind 'sxid' goes with catalog 'sxid' and only with it "
                           f"(got kind {row['kind']!r}, catalog {row['catalog']!r})")


def normalize_pci(expr: pl.Expr) -> pl.Expr:
    """Normalize PCI addresses to lower-case ``dddd:bb:dd.f``.

    NVRM prints ``0000:3b:00`` (no function), nvidia-smi/Fabric Manager ``00000000:86:00.0``
    (8-digit domain), lspci ``3b:00.0`` (no domain); all name the same device, so joins on the
    address need one spelling.

    >>> pl.select(normalize_pci(pl.lit("00000000:86:00.0"))).item()
    '0000:86:00.0'
    >>> pl.select(normalize_pci(pl.lit("0000:9B:00"))).item()
    '0000:9b:00.0'
    """
    s = expr.str.to_lowercase()
    s = pl.when(s.str.contains(".", literal=True)).then(s).otherwise(s + ".0")
    s = pl.when(s.str.count_matches(":", literal=True) == 1).then("0000:" + s).otherwise(s)
    return s.str.replace(r"^[0-9a-f]*([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])$", "${1}")


@dataclass(frozen=True)
class _Plan:
    """Patterns compiled once into what the classifier needs."""

    literals: list[str]
    literal_patterns: pl.DataFrame  # literal -> _pattern (a literal may serve several patterns)
    rows: list[dict[str, object]]
    attributes: pl.DataFrame  # one row per pattern, keyed by _pattern
    xid: pl.DataFrame
    sxid: pl.DataFrame


def xid_event_action() -> pl.Expr:
    """The action an Xid event carries (column ``action``, over :func:`load_xid_catalog`'s columns):
    NVIDIA's immediate bucket, except that a hardware fault whose bucket is IGNORE acts by its
    investigatory bucket when that is an action (Xid 157 RESOURCE_RETIREMENT_FAILURE: IGNORE, then
    CONTACT_SUPPORT). Why: NVIDIA's IGNORE says no reset is needed now, but an incident of a failing
    GPU whose report reads "No action needed" hides that the vendor must look at it."""
    investigate = pl.col("investigatory_action")
    return (pl.when((pl.col("action") == "IGNORE") & (pl.col("cause_class") == "hardware")
                    & investigate.is_in(sorted(ACTIONS)) & (investigate != "IGNORE"))
            .then(investigate).otherwise(pl.col("action")).alias("action"))


@lru_cache(maxsize=1)
def _plan() -> _Plan:
    """Load and cache the packaged catalogs (validated once per process)."""
    patterns = load_log_patterns()
    rows = []
    for row in patterns.iter_rows(named=True):
        groups = re.compile(row["regex"]).groupindex
        rows.append({**row, "groups": {g: groups[g] for g in _GROUPS if g in groups}})
    attributes = patterns.select(
        pl.int_range(pl.len(), dtype=pl.Int32).alias("_pattern"),
        "pattern_id", "kind", "catalog", "pci_role",
        pl.col("component").alias("_p_component"),
        pl.col("cause_class").alias("_p_cause_class"),
        pl.col("severity").alias("_p_severity"),
        pl.col("action").alias("_p_action"),
    )
    classes = ["component", "cause_class", "severity", "action"]
    xid = load_xid_catalog().with_columns(xid_event_action()).select(
        "code", *[pl.col(c).alias(f"_x_{c}") for c in classes])
    sxid = load_sxid_catalog().select("code", *[pl.col(c).alias(f"_s_{c}") for c in classes])
    literals = list(dict.fromkeys(patterns["literal"].to_list()))
    literal_patterns = patterns.select("literal", pl.int_range(pl.len(), dtype=pl.Int32).alias("_pattern"))
    return _Plan(literals, literal_patterns, rows, attributes, xid, sxid)


def _group(row: dict[str, object], name: str, dtype: pl.DataType) -> pl.Expr:
    """A pattern's named regex group as a typed expression, or a typed null if it has none."""
    groups: dict[str, int] = row["groups"]  # type: ignore[assignment]
    if name not in groups:
        return pl.lit(None, dtype)
    # Not strict: a code too large for its type (a corrupt line) is no code, not a failed batch.
    return pl.col("message").str.extract(row["regex"], groups[name]).cast(dtype, strict=False)  # type: ignore[arg-type]


def may_match_canonical(texts: pl.Series) -> pl.Series:
    """For texts in :func:`~gpusre.models.logs.masking.canonical_digits` form: whether each may
    match a pattern, i.e. holds the canonical form of one of the patterns' literals.

    True for the canonical form of every text that holds a literal (so filtering on it loses no
    match): canonicalizing is per character (digit -> 0) except that digit runs are cut to 4, and
    a literal's digit run lies within the text's run, which is at least as long. Why: the ingest
    canonicalizes every line anyway and deduplicates the forms, so the literal scan runs on a few
    thousand forms instead of millions of lines; :func:`classify_messages` then reads only the
    lines whose form may match.
    """
    return texts.cast(pl.String).str.contains_any(_canonical_literals()).fill_null(False).alias("may_match")


@lru_cache(maxsize=1)
def _canonical_literals() -> list[str]:
    """The patterns' literals in canonical_digits form (once per process, not per batch)."""
    return canonical_digits(pl.Series(_plan().literals, dtype=pl.String)).unique().to_list()


def _adjusted_severity(severity: pl.Expr, cause_class: pl.Expr) -> pl.Expr:
    """The catalog ``severity`` adjusted by the line's fatality word (:data:`FATALITY_WORDS`), or
    capped at :data:`RECORD_UNKNOWN_CAP` for a record line whose record carries none."""
    rank = severity.replace_strict(SEVERITY_RANK, default=None, return_dtype=pl.Int32)
    word = pl.col("_fatal")
    out = rank
    for text, (how, level) in FATALITY_WORDS.items():
        bound = pl.lit(SEVERITY_RANK[level], pl.Int32)
        if how == "floor":  # at least `level`: a smaller rank; an informational line is not raised
            adjusted = pl.when(cause_class == "informational").then(rank).otherwise(pl.min_horizontal(rank, bound))
        else:
            adjusted = pl.max_horizontal(rank, bound)
        out = pl.when(word == text).then(adjusted).otherwise(out)
    unknown = pl.col("_record").is_not_null() & word.is_null()
    out = pl.when(unknown).then(pl.max_horizontal(rank, pl.lit(SEVERITY_RANK[RECORD_UNKNOWN_CAP], pl.Int32))).otherwise(out)
    names = pl.Series(SEVERITIES, dtype=pl.String)
    return (pl.when(rank.is_null()).then(severity)
            .otherwise(out.replace_strict(list(range(len(SEVERITIES))), names, default=None, return_dtype=pl.String))
            .alias("severity"))


def classify_messages(messages: pl.Series) -> pl.DataFrame:
    """Classify log messages against ``log_patterns.csv``; one output row per input message.

    Returns a DataFrame with :data:`CLASSIFIED_SCHEMA`: ``kind``, ``code`` (Xid/SXid code),
    ``gpu_pci`` (normalized, only when the address is a GPU's), ``device_pci`` (any extracted PCI
    address: GPU, NVSwitch, NIC, PCIe port), ``port`` (IB/NVLink port, PCIe slot), ``gpu_index``
    (``GPU6`` in NVRM lines), ``component``, ``cause_class``, ``severity``, ``action``,
    ``pattern_id``. Rows that match no pattern are all null. For Xid/SXid rows the classes come
    from the catalog by code; a code the catalog does not know takes the pattern row's classes,
    which say so (cause class ``unknown``, action ``CHECK_CATALOG``). A line's own
    fatality word (``Non-fatal`` SXid, ``Nonfatal`` NVLink5 Xid, GHES ``event severity: corrected``)
    adjusts the severity (:data:`FATALITY_WORDS`).

    Each row is classified on its own text, except the lines of a multi-line record (a pattern
    with a ``(?P<record>...)`` group: GHES ``{N}[Hardware Error]:`` lines, BERT's unnumbered
    ``[Hardware Error]:`` lines), which take their severity from the record's fatality line, the
    nearest earlier input row of the same record.

    Vectorized: one multi-literal prefilter pass over all messages, then regexes on candidates only.
    """
    plan = _plan()
    frame = pl.DataFrame({"message": messages.cast(pl.String)}).with_row_index("_row")
    message = pl.col("message")
    candidates = frame.filter(message.str.contains_any(plan.literals))
    # Which patterns may match each candidate: the literals found in it (one Aho-Corasick pass),
    # joined to the patterns that use them. Overlapping so a literal inside another still counts.
    pairs = (
        candidates.with_columns(message.str.extract_many(plan.literals, overlapping=True).list.unique().alias("literal"))
        .explode("literal")
        .join(plan.literal_patterns, on="literal", how="inner")
    )
    parts: list[pl.DataFrame] = []
    # A loop over patterns (not lines): each regex runs only on the rows that hold its literal.
    for (index,), part in pairs.partition_by("_pattern", as_dict=True).items():
        row = plan.rows[index]
        hit = part.filter(message.str.contains(row["regex"]))
        if hit.height == 0:
            continue
        parts.append(
            hit.select(
                "_row",
                "_pattern",
                _group(row, "code", pl.Int32()).alias("code"),
                normalize_pci(_group(row, "pci", pl.String())).alias("device_pci"),
                _group(row, "port", pl.String()).alias("port"),
                _group(row, "gpu", pl.Int32()).alias("gpu_index"),
                _group(row, "fatal", pl.String()).str.to_lowercase().alias("_fatal"),
                _group(row, "record", pl.String()).alias("_record"),
            )
        )

    empty = pl.DataFrame(
        schema={"_row": pl.UInt32, "_pattern": pl.Int32, "code": pl.Int32, "device_pci": pl.String, "port": pl.String,
                "gpu_index": pl.Int32, "_fatal": pl.String, "_record": pl.String}
    )
    matched = (
        pl.concat([empty, *parts])
        # First match wins: a line several patterns match keeps the highest-priority one.
        .sort("_row", "_pattern")
        .unique("_row", keep="first", maintain_order=True)
        # A record's lines take the fatality word of the record's line that carries one (rows are in
        # input order: the kernel prints a GHES record's lines one after another).
        .with_columns(pl.when(pl.col("_record").is_not_null())
                      .then(pl.col("_fatal").forward_fill().over("_record"))
                      .otherwise(pl.col("_fatal")).alias("_fatal"))
        .join(plan.attributes, on="_pattern", how="left")
        .join(plan.xid, on="code", how="left")
        .join(plan.sxid, on="code", how="left")
    )
    catalog = pl.col("catalog")

    def cls(name: str) -> pl.Expr:
        """Catalog class by code for Xid/SXid rows, else (or for an unknown code) the pattern's."""
        return (
            pl.when(catalog == "xid").then(pl.col(f"_x_{name}"))
            .when(catalog == "sxid").then(pl.col(f"_s_{name}"))
            .otherwise(None)
            .fill_null(pl.col(f"_p_{name}"))
            .alias(name)
        )

    matched = matched.select(
        "_row",
        "kind",
        "code",
        pl.when(pl.col("pci_role") == "gpu").then(pl.col("device_pci")).alias("gpu_pci"),
        "device_pci",
        "port",
        "gpu_index",
        cls("component"),
        cls("cause_class"),
        _adjusted_severity(cls("severity"), cls("cause_class")),
        cls("action"),
        "pattern_id",
    )
    # Scatter the few matched rows back onto every input row; unmatched rows stay null.
    out = frame.select("_row").join(matched, on="_row", how="left", maintain_order="left")
    return out.select(pl.col(name).cast(dtype) for name, dtype in CLASSIFIED_SCHEMA.items())
