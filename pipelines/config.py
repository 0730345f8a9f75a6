"""``cluster.yaml``: what the pipeline knows about the cluster, validated with key paths in errors.

Every key is optional; the defaults describe a 100-node x 8-GPU cluster with UTC timestamps.
See README "cluster.yaml" for the documented contract.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator,
                      model_validator)

from gpusre.models.sources.alerts.ingest import AlertSettings
from gpusre.models.ingest.hostlist import HostlistError, expand_hostlist
from gpusre.models.marts_runner import POOL_ALL, POOL_OTHER
from gpusre.models.reliability.ettr_model import ETTR_INCLUDES_QUEUE_WAIT
from gpusre.models.sources.slurm_events.parse import check_event_fields
from gpusre.models.vocabulary import RESUBMIT_AFTER_STATES

__all__ = ["ClusterConfig", "ClusterConfigError", "MaintenanceWindow", "SacctFormat", "SlurmEventsFormat",
           "CheckpointPolicy",
           "RunGrouping", "ReliabilityConfig", "AttributionConfig", "SloObjective", "SloConfig", "DEFAULT_SLO_OBJECTIVES",
           "load_cluster_config"]

CLUSTER_FILE = "cluster.yaml"
#: Pool names cluster.yaml ``pools`` may not use: the fleet without pools, the nodes in none of them.
POOL_RESERVED = (POOL_ALL, POOL_OTHER)


class ClusterConfigError(ValueError):
    """cluster.yaml is unreadable or invalid; the message names the file and the key path."""


def _listed_fleet(info: ValidationInfo, names_what: str) -> set[str] | None:
    """The node names of an already validated `nodes` hostlist, for a setting that maps nodes (node_gpus,
    pools) and must stay inside the fleet; None when `nodes` itself is invalid (its own error is
    reported); an error when `nodes` is only a count."""
    nodes = info.data.get("nodes")
    if nodes is None:
        return None
    if isinstance(nodes, int):
        raise ValueError("needs `nodes` as a hostlist (node names), not a node count: set `nodes` to "
                         f"the fleet's hostlist so the nodes {names_what} are part of it")
    return {n for expr in ([nodes] if isinstance(nodes, str) else nodes) for n in expand_hostlist(expr)}


def _check_hostlist(value: str) -> str:
    try:
        expand_hostlist(value)
    except HostlistError as exc:
        raise ValueError(str(exc)) from exc
    return value


class MaintenanceWindow(BaseModel):
    """A planned maintenance window: nodes are out of service on purpose between start and end."""

    model_config = ConfigDict(extra="forbid")
    start: datetime
    end: datetime
    nodes: str | None = None  # hostlist; None = the whole cluster
    reason: str = ""

    @field_validator("start", "end")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        # Naive times are taken as UTC: an ambiguous local time here would silently shift exposure.
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)

    @field_validator("nodes")
    @classmethod
    def _hostlist(cls, value: str | None) -> str | None:
        return None if value is None else _check_hostlist(value)

    @model_validator(mode="after")
    def _ordered(self) -> MaintenanceWindow:
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


class SacctFormat(BaseModel):
    """How to read headerless or non-standard sacct dumps (Open XDMoD shredder style)."""

    model_config = ConfigDict(extra="forbid")
    fields: list[str] | None = None
    delimiter: str = "|"

    @field_validator("delimiter")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value or "\n" in value:
            raise ValueError("delimiter must be a non-empty single-line string")
        return value


class SlurmEventsFormat(BaseModel):
    """How to read headerless node-state dumps (``sacctmgr -n -P show event``): their fields, in order."""

    model_config = ConfigDict(extra="forbid")
    fields: list[str] | None = None

    @field_validator("fields")
    @classmethod
    def _placeable(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            check_event_fields(value)  # ValueError: no TimeStart, or no NodeName/ClusterNodes/Event
        return value


class CheckpointPolicy(BaseModel):
    """How training jobs checkpoint: the assumptions behind ETTR and goodput (Meta HPCA'25 defaults)."""

    model_config = ConfigDict(extra="forbid")
    interval_s: int = Field(default=3600, gt=0)           # Δt_cp: time between checkpoints
    restart_overhead_s: int = Field(default=300, ge=0)    # u0: re-initialisation after an interruption
    write_s: int = Field(default=0, ge=0)                 # w_cp: blocking checkpoint write time


class CheckpointOverride(BaseModel):
    """Per-account override of the site checkpoint policy (unset keys keep the site default)."""

    model_config = ConfigDict(extra="forbid")
    interval_s: int | None = Field(default=None, gt=0)
    restart_overhead_s: int | None = Field(default=None, ge=0)
    write_s: int | None = Field(default=None, ge=0)


class RunGrouping(BaseModel):
    """How Slurm jobs are grouped into training runs for ETTR."""

    model_config = ConfigDict(extra="forbid")
    #: A resubmission (same user, account and job name) joins the run when it becomes eligible (its
    #: submit, or its release from a dependency hold) within this many seconds after the previous job
    #: ended by failure, timeout, preemption or node failure.
    resubmit_gap_s: int = Field(default=6 * 3600, ge=0)
    #: Regular expression whose first group is an explicit run key in the job comment (None: off).
    comment_run_key: str | None = r"(?:^|[\s,;])run=([^\s,;]+)"
    #: Regular expression whose first group is a run key in the job name (None: off).
    name_run_key: str | None = None
    #: End states of the previous job after which a resubmission continues the run (a user who cancels
    #: and resubmits with a new config continues the same run; only COMPLETED ends it).
    resubmit_after_states: list[str] = Field(default_factory=lambda: list(RESUBMIT_AFTER_STATES))
    #: Jobs smaller than this many GPUs are never grouped into runs (debug and eval jobs are not
    #: training runs); they still count in goodput as runs of one job.
    min_gpus: int = Field(default=8, ge=1)

    @field_validator("comment_run_key", "name_run_key")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        if compiled.groups < 1:
            raise ValueError("the regular expression needs one capture group (the run key)")
        return value


class ReliabilityConfig(BaseModel):
    """Assumptions of the reliability SLIs (MTBF, ETTR, goodput)."""

    model_config = ConfigDict(extra="forbid")
    checkpoint: CheckpointPolicy = Field(default_factory=CheckpointPolicy)
    checkpoint_overrides: dict[str, CheckpointOverride] = Field(default_factory=dict)  # by account
    runs: RunGrouping = Field(default_factory=RunGrouping)
    #: Fewer failures than this give "insufficient data" instead of an MTBF point estimate.
    min_failures: int = Field(default=3, ge=1)
    #: Meta's r_f variant: count only failures of jobs with more than this many GPUs (0 = all jobs).
    rf_min_job_gpus: int = Field(default=128, ge=0)


class AttributionConfig(BaseModel):
    """Settings of job failure attribution (gpusre.models.failures.attribution)."""

    model_config = ConfigDict(extra="forbid")
    #: Minutes a job on more than one node must keep running after its node logged a link recovery for
    #: the recovery to clear the fault: the site's NCCL collective / watchdog timeout, which a job whose
    #: queue pairs broke hangs for (attribution.COLLECTIVE_TIMEOUT; single-node jobs keep a 5-min grace).
    collective_timeout_min: int = Field(default=30, ge=0, le=24 * 60)


SLI_NAMES = ("node_availability", "job_infra_success", "ettr_large_runs", "goodput")


class SloObjective(BaseModel):
    """One objective: the SLI must be at least ``objective`` over the rolling window."""

    model_config = ConfigDict(extra="forbid")
    sli: str
    objective: float = Field(gt=0, lt=1)
    description: str = ""

    @field_validator("sli")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in SLI_NAMES:
            raise ValueError(f"unknown SLI {value!r}; expected one of {', '.join(SLI_NAMES)}")
        return value


DEFAULT_SLO_OBJECTIVES = (
    SloObjective(sli="node_availability", objective=0.98,
                 description="Node-hours in service / scheduled node-hours (planned maintenance excluded)"),
    SloObjective(sli="job_infra_success", objective=0.995,
                 description="Jobs not killed by the infrastructure / jobs ended"),
    SloObjective(sli="ettr_large_runs", objective=0.90,
                 description="ETTR of training runs with >= slo.ettr_min_run_gpus GPUs, with or without queue wait "
                             "per slo.ettr_includes_queue_wait (marts.slo_daily.definition says which and why)"),
    SloObjective(sli="goodput", objective=0.70,
                 description="Productive GPU-hours / capacity GPU-hours"),
)


class SloConfig(BaseModel):
    """Service-level objectives and their error-budget window."""

    model_config = ConfigDict(extra="forbid")
    window_days: int = Field(default=30, ge=1, le=366)
    objectives: list[SloObjective] = Field(default_factory=lambda: list(DEFAULT_SLO_OBJECTIVES))
    ettr_min_run_gpus: int = Field(default=256, ge=1)
    #: Whether the ETTR SLO counts queue wait (Meta's ETTR) or leaves it out (default: out, because queue
    #: wait is set by load and priority, not by the infrastructure or checkpointing; see
    #: gpusre.models.reliability.ettr_model.ETTR_INCLUDES_QUEUE_WAIT). Both values are in the marts either way;
    #: the checkpoint what-if follows the same choice.
    ettr_includes_queue_wait: bool = ETTR_INCLUDES_QUEUE_WAIT


class ClusterConfig(BaseModel):
    """The validated contents of ``cluster.yaml``."""

    model_config = ConfigDict(extra="forbid")
    cluster: str = "cluster"
    timezone: str = "UTC"
    nodes: int | str | list[str] = 100
    gpus_per_node: int = Field(default=8, ge=1, le=64)
    #: hostlist -> GPU count for the nodes whose count differs from ``gpus_per_node`` (a mixed fleet);
    #: needs ``nodes`` as node names. Read through :attr:`gpus_by_node` / :attr:`capacity_gpus` only.
    node_gpus: dict[str, Annotated[int, Field(ge=1, le=64)]] = Field(default_factory=dict)
    #: Other names of nodes (Slurm's NodeAddr / NodeHostname): alias -> node, an address or host name,
    #: or a hostlist mapping 1:1 onto a node hostlist (``"10.0.3.[1-12]": "gpu[01-12]"``). Validated and
    #: expanded to one alias per entry (lower-cased alias -> node as ``nodes`` spells it); the host ->
    #: node rule of every source applies it (``alerts.nodes.aliases``, filled from here).
    node_aliases: dict[str, str] = Field(default_factory=dict)
    gpu_type: str | None = None
    racks: dict[str, str] = Field(default_factory=dict)
    #: Hardware pools (a GPU generation, a rack type): pool name -> hostlist, for utilization per pool
    #: (marts.utilization_by_pool_daily). Needs ``nodes`` as node names; a node is in at most one pool,
    #: the nodes in none form pool ``other``; without pools the whole fleet is pool ``all``. Not the Slurm
    #: partition: partitions overlap, a pool is the hardware. Read through :attr:`pool_by_node` /
    #: :attr:`pool_gpus` only.
    pools: dict[str, str] = Field(default_factory=dict)
    leaf_switches: dict[str, str] = Field(default_factory=dict)
    #: NVLink domains: name -> hostlist of the hosts sharing NVSwitches (a GB200 NVL72 rack with its NVSwitch
    #: trays; the two racks of an NVL36x2). NVLink failures on >= 3 hosts of one domain within 60 s are one
    #: incident (scope ``rack``); without it NVLink faults are per node, as on HGX / DGX nodes, whose
    #: NVSwitches sit on the node's own baseboard. May list hosts outside ``nodes`` (NVSwitch trays), as racks may.
    nvlink_domains: dict[str, str] = Field(default_factory=dict)
    maintenance: list[MaintenanceWindow] = Field(default_factory=list)
    sacct: SacctFormat = Field(default_factory=SacctFormat)
    slurm_events: SlurmEventsFormat = Field(default_factory=SlurmEventsFormat)
    reliability: ReliabilityConfig = Field(default_factory=ReliabilityConfig)
    attribution: AttributionConfig = Field(default_factory=AttributionConfig)
    slo: SloConfig = Field(default_factory=SloConfig)
    alerts: AlertSettings = Field(default_factory=AlertSettings)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown IANA time zone {value!r}") from exc
        return value

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: int | str | list[str]) -> int | str | list[str]:
        if isinstance(value, int):
            if value < 1:
                raise ValueError("node count must be >= 1")
            return value
        for expr in [value] if isinstance(value, str) else value:
            _check_hostlist(expr)
        return value

    @field_validator("node_gpus")
    @classmethod
    def _node_gpus(cls, value: dict[str, int], info: ValidationInfo) -> dict[str, int]:
        # Runs after `nodes` (field order), so the fleet it must stay inside is known here and the error
        # carries the key path node_gpus.
        fleet = _listed_fleet(info, "node_gpus names") if value else None
        if fleet is None:
            return value
        seen: dict[str, tuple[int, str]] = {}
        for expr, count in value.items():
            try:
                names = expand_hostlist(expr)
            except HostlistError as exc:
                raise ValueError(f"{expr!r}: {exc}") from exc
            for name in names:
                if name in seen and seen[name][0] != count:
                    raise ValueError(f"node {name} is listed twice with different GPU counts: {seen[name][0]} "
                                     f"({seen[name][1]}) and {count} ({expr})")
                seen[name] = (count, expr)
            outside = [n for n in names if n not in fleet]
            if outside:
                raise ValueError(f"{expr!r} names {len(outside)} node(s) not in `nodes`, e.g. {outside[0]}")
        return value

    @field_validator("pools")
    @classmethod
    def _pools(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        # Runs after `nodes` (field order), like node_gpus: a pool may name only nodes of the fleet, and a
        # node in two pools would count its GPUs twice.
        fleet = _listed_fleet(info, "the pools name") if value else None
        if fleet is None:
            return value
        seen: dict[str, str] = {}
        for pool, expr in value.items():
            if not pool.strip():
                raise ValueError("a pool needs a name")
            if pool in POOL_RESERVED:
                raise ValueError(f"{pool!r} is reserved (the fleet without pools is pool 'all', the nodes in no "
                                 "pool form pool 'other'): name the pool after its hardware")
            try:
                names = expand_hostlist(expr)
            except HostlistError as exc:
                raise ValueError(f"{pool}: {expr!r}: {exc}") from exc
            for name in names:
                if name in seen and seen[name] != pool:
                    raise ValueError(f"node {name} is in two pools: {seen[name]} and {pool}")
                seen[name] = pool
            outside = [n for n in names if n not in fleet]
            if outside:
                raise ValueError(f"{pool}: {expr!r} names {len(outside)} node(s) not in `nodes`, e.g. {outside[0]}")
        return value

    @field_validator("node_aliases")
    @classmethod
    def _node_aliases(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        # Runs after `nodes` (field order): a target outside the node list is a typo that would
        # silently invent a node, and an alias that is itself a listed node would hide that node.
        if not value:
            return value
        nodes = info.data.get("nodes")
        fleet = ({} if nodes is None or isinstance(nodes, int) else
                 {n.lower(): n for expr in ([nodes] if isinstance(nodes, str) else nodes)
                  for n in expand_hostlist(expr)})
        out: dict[str, str] = {}
        for alias, target in value.items():
            try:
                aliases, targets = expand_hostlist(alias.strip()), expand_hostlist(target.strip())
            except HostlistError as exc:
                raise ValueError(f"{alias!r}: {exc}") from exc
            if len(targets) != 1 and len(targets) != len(aliases):
                raise ValueError(f"{alias!r} names {len(aliases)} host(s) but {target!r} {len(targets)} nodes: "
                                 "map one alias to one node, or a hostlist to a node hostlist of the same length")
            for a, t in zip(aliases, targets * len(aliases) if len(targets) == 1 else targets):
                if fleet and t.lower() not in fleet:
                    raise ValueError(f"{alias!r} -> {target!r}: {t} is not a node of `nodes`")
                if a.lower() in fleet:
                    raise ValueError(f"{alias!r}: {a} is itself a node of `nodes`, not another name of one")
                node = fleet.get(t.lower(), t)
                if out.get(a.lower(), node) != node:
                    raise ValueError(f"{a} is an alias of two nodes: {out[a.lower()]} and {node}")
                out[a.lower()] = node
        return out

    @model_validator(mode="after")
    def _aliases_to_host_rule(self) -> ClusterConfig:
        # One host -> node rule for every source: the alias map rides along with alerts.nodes, which
        # the alert and node-log ingests both read.
        if self.node_aliases:
            nodes = self.alerts.nodes
            merged = {**nodes.aliases, **self.node_aliases}
            self.alerts = self.alerts.model_copy(update={"nodes": nodes.model_copy(
                update={"aliases": {k.lower(): v.lower() for k, v in merged.items()}})})
        return self

    @field_validator("racks", "leaf_switches")
    @classmethod
    def _groups(cls, value: dict[str, str]) -> dict[str, str]:
        for expr in value.values():
            _check_hostlist(expr)
        return value

    @field_validator("nvlink_domains")
    @classmethod
    def _nvlink_domains(cls, value: dict[str, str]) -> dict[str, str]:
        # A host shares NVSwitches with one set of hosts only: a host in two domains is a typo, and which
        # domain its NVLink faults join would otherwise depend on the order of the keys.
        seen: dict[str, str] = {}
        for domain, expr in value.items():
            if not str(domain).strip():
                raise ValueError("an NVLink domain needs a name")
            try:
                names = expand_hostlist(expr)
            except HostlistError as exc:
                raise ValueError(f"{domain}: {expr!r}: {exc}") from exc
            for name in names:
                if seen.setdefault(name, domain) != domain:
                    raise ValueError(f"host {name} is in two NVLink domains: {seen[name]} and {domain}")
        return value

    @property
    def node_names(self) -> list[str]:
        """Expanded node names, or [] when only a node count is configured."""
        if isinstance(self.nodes, int):
            return []
        exprs = [self.nodes] if isinstance(self.nodes, str) else self.nodes
        return [name for expr in exprs for name in expand_hostlist(expr)]

    @property
    def node_count(self) -> int:
        return self.nodes if isinstance(self.nodes, int) else len(self.node_names)

    @property
    def gpus_by_node(self) -> dict[str, int]:
        """GPUs of every listed node: ``node_gpus`` where it names the node, else ``gpus_per_node``.

        The one place a node's GPU count is decided; {} when only a node count is configured (then every
        node has ``gpus_per_node``, and so does any node this mapping does not name)."""
        overrides = {n: count for expr, count in self.node_gpus.items() for n in expand_hostlist(expr)}
        return {n: overrides.get(n, self.gpus_per_node) for n in self.node_names}

    @property
    def capacity_gpus(self) -> int:
        """Total GPUs in the cluster (the capacity behind utilization): the sum of every node's GPUs."""
        by_node = self.gpus_by_node
        return sum(by_node.values()) if by_node else self.node_count * self.gpus_per_node

    @property
    def pool_by_node(self) -> dict[str, str]:
        """The pool of every listed node: its ``pools`` entry, else ``other`` (``all`` without pools).

        The one place a node's pool is decided; {} when only a node count is configured (the whole fleet
        is then pool ``all``, as is any node this mapping does not name when no pools are given)."""
        if not self.pools:
            return {n: POOL_ALL for n in self.node_names}
        named = {n: pool for pool, expr in self.pools.items() for n in expand_hostlist(expr)}
        return {n: named.get(n, POOL_OTHER) for n in self.node_names}

    @property
    def pool_gpus(self) -> dict[str, int]:
        """GPUs per pool, in cluster.yaml order, ``other`` last when some nodes are in no pool; without
        pools one pool ``all`` of :attr:`capacity_gpus`. Sums to :attr:`capacity_gpus`."""
        if not self.pools:
            return {POOL_ALL: self.capacity_gpus}
        gpus = self.gpus_by_node
        out = {pool: 0 for pool in self.pools}
        for node, pool in self.pool_by_node.items():
            out[pool] = out.get(pool, 0) + gpus[node]
        return out

    @property
    def fleet_source(self) -> str:
        """'cluster.yaml' when it sets ``nodes``, else 'default' (the default node count is a guess)."""
        return "cluster.yaml" if "nodes" in self.model_fields_set else "default"


def _key_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: where (``line 4, column 3``, 1-based) and what PyYAML found
    (``expected <block end>, but found '<block mapping start>'``), with the context it was in
    (``while parsing a block mapping``); its own message spreads these over several lines."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if not problem:
        return " ".join(str(exc).split()) or type(exc).__name__
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    context = getattr(exc, "context", None)
    return f"{where}{problem}" + (f" ({context})" if context else "")


#: libyaml's safe loader when PyYAML was built with it: the pure-Python one took ~35 ms per read of a
#: 2,000-node cluster.yaml, and a night reads it about 16 times (each asset's resource).
_FAST_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> object:
    """``yaml.safe_load(text)``, through libyaml when available. A document libyaml refuses is read
    again by the pure-Python loader, whose error messages name what it found (``found undefined alias
    'y'``, not ``found undefined alias``), so a bad file's message does not depend on the build."""
    try:
        return yaml.load(text, Loader=_FAST_SAFE_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        return yaml.safe_load(text)


def parse_cluster_config(text: str, source: str = CLUSTER_FILE) -> ClusterConfig:
    """Parse and validate cluster.yaml text; errors read ``cluster.yaml: maintenance[0].end: ...``."""
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise ClusterConfigError(f"{source}: not valid YAML: {_yaml_problem(exc)}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ClusterConfigError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    try:
        return ClusterConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        msg = first["msg"].removeprefix("Value error, ")
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ClusterConfigError(f"{source}: {_key_path(first['loc'])}: {msg}{more}") from exc


def load_cluster_config(landing: Path) -> ClusterConfig:
    """Read ``landing/cluster.yaml`` (defaults when absent)."""
    path = landing / CLUSTER_FILE
    if not path.exists():
        return ClusterConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ClusterConfigError(f"{path}: cannot read: {exc}") from exc
    return parse_cluster_config(text, str(path))
