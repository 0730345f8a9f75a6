"""Configuration of one simulated GPU cluster (size, horizon, seed, load)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from zoneinfo import ZoneInfo

__all__ = ["SimulationConfig", "DEFAULT_JOBS_PER_NODE_DAY"]

#: Default submission rate. Meta RSC-1 saw ~3.6 jobs per 8-GPU node per day (7.2k/day on ~2k nodes,
#: many of them tiny); Acme Kalos ~0.4. 1.5 sits between and gives ~1 M jobs for 2,000 nodes x 365 days.
DEFAULT_JOBS_PER_NODE_DAY = 1.5


@dataclass(frozen=True)
class SimulationConfig:
    """Everything that determines a simulated cluster; the same config gives byte-identical output.

    ``jobs_per_day`` defaults to ``DEFAULT_JOBS_PER_NODE_DAY * nodes``. Runtimes are scaled so that the
    offered GPU load is ``target_load`` of capacity whatever the job count (queues then emerge from
    contention instead of being drawn). ``node_failures_per_1000_node_days`` is the hardware fault
    rate (Meta RSC-1: 6.5, RSC-2: 2.34).

    Node logs (``write_logs``): ``log_lines_per_node_day`` background lines per node and UTC day,
    ``log_iso_node_share`` of nodes log rsyslog high-precision ISO-8601 (the rest RFC 3164). Leaf-switch
    failures and storage outages hit many nodes at once; they kill jobs only with ``fabric_faults_kill_jobs``
    (off by default so the job stream of a seed does not change), else they are log-only incidents.

    Node-state history (``node_state_events``, see node_events_writer): nightly ``sacctmgr show event``
    dumps under ``slurm_events/`` and ``truth/node_states.csv``: every applied fault drains (or downs) its
    node until repaired, maintenance windows, plus ``admin_drains_per_1000_node_days`` operator drains and
    ``false_positive_health_checks_per_1000_node_days`` brief NHC drains with no fault behind them. Drawn
    from their own random stream: the job stream and sacct dumps do not change. ``health_check_logs``
    writes the NHC lines of those false-positive drains into the node logs (the only syslog difference).

    Alerts (``write_alerts``, see alert_writer): Alertmanager webhook payloads under ``alerts/`` (one JSON
    line per notification) for the faults, fabric incidents and background noise, and ``truth/alerts.csv``;
    drawn from their own random stream after everything else, so no other file changes.

    Scenario knobs (``scenarios.py``; the defaults reproduce the original output byte for byte):

    * NHC: ``nhc_interval_s`` (slurm.conf HealthCheckInterval); ``nhc_repeat_until_repair`` (a failing
      check fails on every run until the repair, as NHC does; off: the first 12 runs only);
      ``nhc_message_style``: ``lbnl`` (``ERROR:  nhc:  Health check failed:  check_x:  text``), ``bare``
      (``Health check failed: text``, no check name) or ``check_prefix`` (``check_x: text``, with a site's own
      check names such as ``check_file_test`` and ``check_fs_mount``).
    * Names and topology: ``node_name_style`` ``numbered`` (``<prefix><digits>``, ``node_digits`` wide, 0:
      automatic) or ``rack`` (``<prefix>-<rack letter><position>``, e.g. ``dgx-a01``); ``nodes_per_rack``,
      ``nodes_per_leaf``.
    * Alerts: ``alert_instance_style`` ``port`` (``instance="gpu001:9100"``, dcgm ``Hostname``), ``fqdn``
      (``instance="gpu001.cluster.local"``, ``Hostname`` an FQDN) or ``node_label`` (``instance`` an IP
      address and port, the host in a ``node`` label; BMC ``instance="gpu001-bmc"``); ``alert_noise_scale``
      multiplies the noise rates; ``alert_flap_off_s`` the resolved gap of flapping rules;
      ``fault_alert_flap_share`` of link and GPU-temperature faults whose alert flaps while the fault lasts.
    * Faults: ``leaf_second_wave_share`` of leaf-switch failures with a second wave (links down again
      40-60 min after the first); ``fabric_manager_logs`` adds nv-fabricmanager lines to NVLink faults;
      ``thermal_power_fault_share`` of node faults that are thermal or power faults (faults.THERMAL_POWER_KINDS);
      ``silent_power_fault_share`` of power faults (faults.SILENT_POWER_KINDS) whose node logs nothing: the host
      dies with its power before rsyslog forwards a line, and the BMC's record stays in its SEL. Slurm's
      ``DOWN*`` and the operator's drain are then the only evidence.
    """

    nodes: int = 100
    gpus_per_node: int = 8
    days: int = 90
    start: date = date(2026, 8, 1)
    seed: int = 7
    cluster: str = "demo"
    timezone: str = "UTC"
    node_prefix: str = "gpu"
    gpu_type: str = "h100"
    jobs_per_day: float | None = None
    target_load: float = 0.8
    node_failures_per_1000_node_days: float = 6.5
    cpus_per_gpu: int = 16
    mem_gb_per_gpu: int = 250
    write_logs: bool = True
    log_lines_per_node_day: float = 150.0
    log_iso_node_share: float = 0.25
    syslog_layout: str = "per_node"  # 'per_node' (syslog/<day>/<node>.log) or 'central' (syslog/<day>/central.log)
    leaf_switch_failures_per_1000_switch_days: float = 10.0
    storage_outages_per_1000_days: float = 20.0
    fabric_faults_kill_jobs: bool = False
    node_state_events: bool = True
    health_check_logs: bool = True
    admin_drains_per_1000_node_days: float = 8.0
    false_positive_health_checks_per_1000_node_days: float = 5.0
    write_alerts: bool = True
    nhc_interval_s: int = 300
    nhc_repeat_until_repair: bool = False
    nhc_message_style: str = "lbnl"
    node_name_style: str = "numbered"
    node_digits: int = 0
    nodes_per_rack: int = 16
    nodes_per_leaf: int = 32
    alert_instance_style: str = "port"
    alert_noise_scale: float = 1.0
    alert_flap_off_s: tuple[int, int] = (900, 2700)
    fault_alert_flap_share: float = 0.0
    leaf_second_wave_share: float = 0.0
    fabric_manager_logs: bool = False
    thermal_power_fault_share: float = 0.0
    silent_power_fault_share: float = 0.0

    def __post_init__(self) -> None:
        if self.nodes < 2:
            raise ValueError("nodes must be >= 2 (multi-node jobs need at least two)")
        if self.gpus_per_node < 1:
            raise ValueError("gpus_per_node must be >= 1")
        if self.days < 1:
            raise ValueError("days must be >= 1")
        if self.jobs_per_day is not None and self.jobs_per_day <= 0:
            raise ValueError("jobs_per_day must be positive")
        if not 0.05 <= self.target_load <= 2.0:
            raise ValueError("target_load must be in [0.05, 2.0]")
        if self.log_lines_per_node_day < 0:
            raise ValueError("log_lines_per_node_day must be >= 0")
        if self.syslog_layout not in ("per_node", "central"):
            raise ValueError("syslog_layout must be 'per_node' or 'central'")
        if not 0.0 <= self.log_iso_node_share <= 1.0:
            raise ValueError("log_iso_node_share must be in [0, 1]")
        if self.leaf_switch_failures_per_1000_switch_days < 0 or self.storage_outages_per_1000_days < 0:
            raise ValueError("fabric fault rates must be >= 0")
        if self.admin_drains_per_1000_node_days < 0 or self.false_positive_health_checks_per_1000_node_days < 0:
            raise ValueError("node-state event rates must be >= 0")
        if self.nhc_interval_s < 30:
            raise ValueError("nhc_interval_s must be >= 30")
        if self.nhc_message_style not in ("lbnl", "bare", "check_prefix"):
            raise ValueError("nhc_message_style must be 'lbnl', 'bare' or 'check_prefix'")
        if self.node_name_style not in ("numbered", "rack"):
            raise ValueError("node_name_style must be 'numbered' or 'rack'")
        if self.nodes_per_rack < 1 or self.nodes_per_leaf < 1:
            raise ValueError("nodes_per_rack and nodes_per_leaf must be >= 1")
        if self.alert_instance_style not in ("port", "fqdn", "node_label"):
            raise ValueError("alert_instance_style must be 'port', 'fqdn' or 'node_label'")
        if self.alert_noise_scale < 0 or not 0 < self.alert_flap_off_s[0] <= self.alert_flap_off_s[1]:
            raise ValueError("alert_noise_scale must be >= 0 and alert_flap_off_s a (low, high) pair of seconds")
        for share in (self.fault_alert_flap_share, self.leaf_second_wave_share, self.thermal_power_fault_share):
            if not 0.0 <= share < 1.0:
                raise ValueError("fault_alert_flap_share, leaf_second_wave_share and thermal_power_fault_share "
                                 "must be in [0, 1)")
        if not 0.0 <= self.silent_power_fault_share <= 1.0:
            raise ValueError("silent_power_fault_share must be in [0, 1]")
        ZoneInfo(self.timezone)  # fail early on an unknown zone

    @property
    def effective_jobs_per_day(self) -> float:
        """Mean submissions per day (before array expansion and run resubmissions)."""
        if self.jobs_per_day is not None:
            return float(self.jobs_per_day)
        return DEFAULT_JOBS_PER_NODE_DAY * self.nodes

    @property
    def total_gpus(self) -> int:
        """GPUs in the cluster."""
        return self.nodes * self.gpus_per_node

    @property
    def capacity_gpu_hours(self) -> float:
        """GPU-hours over the simulated days (no deduction for maintenance or faults)."""
        return float(self.total_gpus * self.days * 24)

    @property
    def node_width(self) -> int:
        """Zero-padded digits in node names (``gpu001`` for 100 nodes, ``gpu0001`` for 2,000; ``node_digits``
        when set)."""
        return self.node_digits or max(3, len(str(self.nodes)))
