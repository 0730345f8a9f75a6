"""``cluster.yaml``: what the pipeline knows about the cluster, validated with key paths in errors.

Every key is optional; the defaults describe a 100-node x 8-GPU cluster with UTC timestamps.
See README "cluster.yaml" for the documented contract.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpusre.models.hostlist import HostlistError, expand_hostlist

__all__ = ["ClusterConfig", "ClusterConfigError", "MaintenanceWindow", "SacctFormat", "load_cluster_config"]

CLUSTER_FILE = "cluster.yaml"


class ClusterConfigError(ValueError):
    """cluster.yaml is unreadable or invalid; the message names the file and the key path."""


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


class ClusterConfig(BaseModel):
    """The validated contents of ``cluster.yaml``."""

    model_config = ConfigDict(extra="forbid")
    cluster: str = "cluster"
    timezone: str = "UTC"
    nodes: int | str | list[str] = 100
    gpus_per_node: int = Field(default=8, ge=1, le=64)
    gpu_type: str | None = None
    racks: dict[str, str] = Field(default_factory=dict)
    leaf_switches: dict[str, str] = Field(default_factory=dict)
    maintenance: list[MaintenanceWindow] = Field(default_factory=list)
    sacct: SacctFormat = Field(default_factory=SacctFormat)

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

    @field_validator("racks", "leaf_switches")
    @classmethod
    def _groups(cls, value: dict[str, str]) -> dict[str, str]:
        for expr in value.values():
            _check_hostlist(expr)
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
    def capacity_gpus(self) -> int:
        """Total GPUs in the cluster (the capacity behind utilization)."""
        return self.node_count * self.gpus_per_node


def _key_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def parse_cluster_config(text: str, source: str = CLUSTER_FILE) -> ClusterConfig:
    """Parse and validate cluster.yaml text; errors read ``cluster.yaml: maintenance[0].end: ...``."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ClusterConfigError(f"{source}: not valid YAML: {str(exc).splitlines()[0]}") from exc
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
