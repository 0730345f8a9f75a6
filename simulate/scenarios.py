"""Named simulated clusters for scoring the incident analytics on more than one kind of cluster (issue 12).

``SCENARIOS`` maps a name to a factory ``seed -> SimulationConfig``. Every scenario is small (32-48 nodes
x 8 GPUs, 30-45 days; one ``gpusre run`` well under a minute on 2 cores) and differs from the others in
what the incident analytics must generalize over: NHC cadence and message conventions, flapping alert
rules and second waves, multi-kind faults, alert label conventions, node naming and topology, thermal and
power faults, quiet and noisy clusters. Fault rates are raised well above a real cluster's 2-7 per
1,000 node-days so that a month of 40 nodes has tens of faults to score.

The scorer (``incident_scoring``) and ``benchmarks/eval_incident_scenarios.py`` run them all;
``tests/test_incident_scenarios.py`` asserts the Done-when thresholds on them.
"""

from __future__ import annotations

from collections.abc import Callable

from gpusre.simulate.config import SimulationConfig

__all__ = ["SCENARIOS", "scenario_config"]


def _default(seed: int) -> SimulationConfig:
    """Today's simulator at a higher fault rate: LBNL NHC every 300 s (its lines stop after an hour),
    gpuNNN names, 32 nodes per leaf, ``instance="gpu001:9100"``. The reference the others vary from."""
    return SimulationConfig(nodes=40, days=30, seed=seed, cluster="default", syslog_layout="central",
                            node_failures_per_1000_node_days=40.0)


def _lbnl_until_repair(seed: int) -> SimulationConfig:
    """LBNL NHC every 300 s failing on every run until the repair (as real NHC does), thermal and power
    faults among the node faults, NVLink faults with Fabric Manager lines."""
    return SimulationConfig(nodes=40, days=30, seed=seed, cluster="lbnl", syslog_layout="central",
                            node_failures_per_1000_node_days=40.0, nhc_repeat_until_repair=True,
                            thermal_power_fault_share=0.2, fabric_manager_logs=True)


def _bare_nhc_fast(seed: int) -> SimulationConfig:
    """NHC every 120 s printing no check name (``Health check failed: GPU3 temperature 96C exceeds limit
    90C``), ``node-0001`` names, 16 nodes per leaf, alerts with FQDN instances and Hostnames."""
    return SimulationConfig(nodes=48, days=35, seed=seed, cluster="bare", syslog_layout="central", node_prefix="node-",
                            node_digits=4, nodes_per_leaf=16, nodes_per_rack=8,
                            node_failures_per_1000_node_days=30.0, nhc_interval_s=120, nhc_repeat_until_repair=True,
                            nhc_message_style="bare", alert_instance_style="fqdn", thermal_power_fault_share=0.25,
                            leaf_switch_failures_per_1000_switch_days=20.0)


def _site_checks_slow(seed: int) -> SimulationConfig:
    """A site's own NHC checks every 600 s (``check_hw_ib: No IB port mlx5_0:1 is ACTIVE``,
    ``check_file_test: /lustre/... not readable``, ``check_fs_mount: /lustre not mounted``), ``dgx-a01``
    names in racks of 8, 16 nodes per leaf, alerts labelled by IP ``instance`` and ``node``, BMC host
    names without ports; leaf switches failing in two waves; a cluster in Europe/Berlin (local-day dumps)."""
    return SimulationConfig(nodes=36, days=45, seed=seed, cluster="site", syslog_layout="central",
                            timezone="Europe/Berlin",
                            node_prefix="dgx", node_name_style="rack", nodes_per_rack=8, nodes_per_leaf=16,
                            node_failures_per_1000_node_days=30.0, nhc_interval_s=600, nhc_repeat_until_repair=True,
                            nhc_message_style="check_prefix", alert_instance_style="node_label",
                            leaf_switch_failures_per_1000_switch_days=80.0, leaf_second_wave_share=0.7,
                            fabric_manager_logs=True, thermal_power_fault_share=0.15)


def _flapping_alerts(seed: int) -> SimulationConfig:
    """Alert rules that flap: most link-down and GPU-temperature fault alerts fire, resolve and fire again
    20-60 min later for as long as the fault lasts; the noisy /var/log rule flaps with the same gaps, three
    times as often."""
    return SimulationConfig(nodes=32, days=30, seed=seed, cluster="flappy", syslog_layout="central",
                            node_failures_per_1000_node_days=50.0, nhc_repeat_until_repair=True,
                            fault_alert_flap_share=0.8, alert_flap_off_s=(1200, 3600), alert_noise_scale=3.0,
                            thermal_power_fault_share=0.25)


def _quiet(seed: int) -> SimulationConfig:
    """A quiet cluster in America/Chicago: few faults, little alert noise, rare false-positive health checks."""
    return SimulationConfig(nodes=48, days=45, seed=seed, cluster="quiet", syslog_layout="central",
                            timezone="America/Chicago",
                            node_failures_per_1000_node_days=15.0, nhc_repeat_until_repair=True,
                            alert_noise_scale=0.3, false_positive_health_checks_per_1000_node_days=1.0,
                            admin_drains_per_1000_node_days=3.0, thermal_power_fault_share=0.2,
                            leaf_switch_failures_per_1000_switch_days=30.0,
                            leaf_second_wave_share=0.5)


def _noisy(seed: int) -> SimulationConfig:
    """A noisy cluster: many faults, four times the alert noise, frequent false-positive NHC drains and
    admin drains, fabric faults that kill jobs, a site's own NHC checks every 120 s."""
    return SimulationConfig(nodes=32, days=30, seed=seed, cluster="noisy", syslog_layout="central",
                            node_failures_per_1000_node_days=60.0, nhc_interval_s=120, nhc_repeat_until_repair=True,
                            nhc_message_style="check_prefix", alert_noise_scale=4.0,
                            false_positive_health_checks_per_1000_node_days=40.0,
                            admin_drains_per_1000_node_days=20.0, fabric_faults_kill_jobs=True,
                            thermal_power_fault_share=0.15)


def _fabric_heavy(seed: int) -> SimulationConfig:
    """Fabric and storage incidents dominate: leaf switches (16 nodes each, most failing in two waves) and
    Lustre outages (OST down on the server, errors on the clients) that kill jobs."""
    return SimulationConfig(nodes=40, days=30, seed=seed, cluster="fabric", syslog_layout="central",
                            nodes_per_leaf=16, node_failures_per_1000_node_days=20.0, nhc_repeat_until_repair=True,
                            leaf_switch_failures_per_1000_switch_days=120.0, storage_outages_per_1000_days=150.0,
                            leaf_second_wave_share=0.6, fabric_faults_kill_jobs=True, fabric_manager_logs=True)


def _silent_power(seed: int) -> SimulationConfig:
    """Power faults that log nothing: most lost feeds and failed PSUs kill the host before rsyslog forwards a
    line, so Slurm's ``DOWN*`` ``Not responding`` and the operator's drain (``lost power - PDU tripped``) are the
    only node evidence (the PDU and BMC alerts still fire); a third of node faults are thermal or power."""
    return SimulationConfig(nodes=40, days=30, seed=seed, cluster="silent", syslog_layout="central",
                            node_failures_per_1000_node_days=50.0, nhc_repeat_until_repair=True,
                            thermal_power_fault_share=0.35, silent_power_fault_share=0.8)


SCENARIOS: dict[str, Callable[[int], SimulationConfig]] = {
    "default": _default,
    "lbnl_until_repair": _lbnl_until_repair,
    "bare_nhc_120s": _bare_nhc_fast,
    "site_checks_600s": _site_checks_slow,
    "flapping_alerts": _flapping_alerts,
    "quiet": _quiet,
    "noisy": _noisy,
    "fabric_heavy": _fabric_heavy,
    "silent_power": _silent_power,
}


def scenario_config(name: str, seed: int = 11) -> SimulationConfig:
    """The config of scenario ``name`` (a key of :data:`SCENARIOS`) with ``seed``."""
    try:
        factory = SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
    return factory(seed)
