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

from gpusre.models.simulate.config import SimulationConfig

__all__ = ["SCENARIOS", "scenario_config"]


def _default(seed: int) -> SimulationConfig:
    """Today's simulator at a higher fault rate: LBNL NHC every 300 s, gpuNNN names, 32 nodes per leaf."""
    return SimulationConfig(nodes=40, days=30, seed=seed, cluster="default", syslog_layout="central",
                            node_failures_per_1000_node_days=40.0)


SCENARIOS: dict[str, Callable[[int], SimulationConfig]] = {
    "default": _default,
}


def scenario_config(name: str, seed: int = 11) -> SimulationConfig:
    """The config of scenario ``name`` (a key of :data:`SCENARIOS`) with ``seed``."""
    try:
        factory = SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
    return factory(seed)
