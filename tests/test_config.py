"""cluster.yaml validation: defaults, hostlists, and errors that name the key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusre.pipelines.config import ClusterConfigError, load_cluster_config, parse_cluster_config


def test_defaults_when_file_absent(tmp_path: Path) -> None:
    config = load_cluster_config(tmp_path)
    assert config.timezone == "UTC"
    assert config.capacity_gpus == 100 * 8


def test_hostlist_nodes_and_capacity() -> None:
    config = parse_cluster_config(
        "cluster: h100a\ntimezone: America/Chicago\nnodes: 'gpu[001-096],big[1-4]'\ngpus_per_node: 8\n"
        "maintenance:\n  - {start: '2026-09-15T06:00:00Z', end: '2026-09-15T12:00:00Z', reason: drivers}\n"
    )
    assert config.node_count == 100
    assert config.node_names[:2] == ["gpu001", "gpu002"] and config.node_names[-1] == "big4"
    assert config.capacity_gpus == 800
    assert config.maintenance[0].end.hour == 12


def test_node_count_only() -> None:
    assert parse_cluster_config("nodes: 250\ngpus_per_node: 4").capacity_gpus == 1000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("timezone: Mars/Olympus", "timezone: unknown IANA time zone"),
        ("nodes: 'gpu[001-004'", "nodes"),
        ("maintenance:\n  - {start: '2026-09-15T06:00:00Z', end: '2026-09-15T05:00:00Z'}", "maintenance[0]: end must be after start"),
        ("maintenance:\n  - {start: 'yesterday', end: '2026-09-15T05:00:00Z'}", "maintenance[0].start"),
        ("gpus_per_node: 0", "gpus_per_node"),
        ("sacct: {delimiter: ''}", "sacct.delimiter"),
        ("clusterr: typo", "clusterr"),
        ("[1, 2]", "expected a mapping"),
        ("a: [unclosed", "not valid YAML"),
    ],
)
def test_errors_name_the_key_path(text: str, expected: str) -> None:
    with pytest.raises(ClusterConfigError) as info:
        parse_cluster_config(text, "landing/cluster.yaml")
    message = str(info.value)
    assert message.startswith("landing/cluster.yaml: ")
    assert expected in message
    assert "\n" not in message


def test_ettr_queue_wait_choice_reaches_the_reliability_settings() -> None:
    from gpusre.pipelines.reliability_settings import reliability_settings

    assert reliability_settings(parse_cluster_config("")).ettr_includes_queue_wait is False  # documented default
    config = parse_cluster_config("slo: {ettr_includes_queue_wait: true}\n")
    assert reliability_settings(config).ettr_includes_queue_wait is True


@pytest.mark.parametrize(
    "text",
    ["cluster: h100a\nnodes: 'gpu[001-096]'\nleaf_switches: {leaf1: 'gpu[001-032]', leaf2: [gpu033, gpu034]}\n"
     "maintenance:\n  - {start: 2026-09-15T06:00:00Z, end: '2026-09-15T12:00:00Z', reason: drivers}\n"
     "racks: &r {r1: 'gpu[001-004]'}\nnvlink_domains: *r\non: yes\nn: 0x1f\nf: 1e3\ne: ~\n", ""],
)
def test_load_yaml_reads_what_safe_load_reads(text: str) -> None:
    """libyaml's loader, when there, gives the same values (dates, anchors, YAML 1.1 booleans and numbers)."""
    import yaml

    from gpusre.pipelines.config import load_yaml

    assert load_yaml(text) == yaml.safe_load(text)


def test_yaml_error_messages_do_not_depend_on_libyaml() -> None:
    """A bad document's message is the pure-Python loader's, which names what it found; libyaml's
    would not (``found undefined alias``, no name)."""
    with pytest.raises(ClusterConfigError, match="found undefined alias 'y'"):
        parse_cluster_config("racks: &x {r1: gpu1}\nnvlink_domains: *y\n", "cluster.yaml")
    with pytest.raises(ClusterConfigError, match=r"expected ',' or '\]', but got ':'"):
        parse_cluster_config("a: [1, 2\nb: 3\n", "cluster.yaml")
