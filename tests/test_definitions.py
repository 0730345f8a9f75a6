"""The one Definitions object loads, and holds every asset, job, the schedule and the sensor."""

from __future__ import annotations

import dagster as dg

from gpusre.pipelines import definitions


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(definitions.defs)
    repo = definitions.defs.get_repository_def()
    keys = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    for expected in ("raw/sacct_records", "core/jobs", "core/job_steps", "marts/job_usage_daily",
                     "marts/utilization_daily", "marts/gpu_time_by_state", "marts/size_buckets",
                     "marts/runtime_quantiles", "marts/queue_wait_quantiles", "marts/top_consumers",
                     "marts/size_share_trend", "marts/findings", "reports/nightly"):
        assert expected in keys
    assert {s.name for s in repo.schedule_defs} == {"nightly_schedule", "lake_compaction_schedule"}
    assert {s.name for s in repo.sensor_defs} == {"landing_sensor"}
    assert {"ingest_job", "daily_marts_job", "rollup_job", "nightly_job",
            "lake_compaction_job"} <= {j.name for j in repo.get_all_jobs()}


def test_the_nightly_job_leaves_maintenance_to_its_own_job() -> None:
    """Lake compaction rewrites old days (seconds per 10 M lines): not in the nightly run, whose
    snapshot it would otherwise precede; its own job refreshes the snapshot after it."""
    repo = definitions.defs.get_repository_def()
    compaction = dg.AssetKey(["maintenance", "lake_compaction"])
    snapshot = dg.AssetKey(["reports", "warehouse_snapshot"])
    assert compaction not in repo.get_job("nightly_job").asset_layer.executable_asset_keys
    assert snapshot in repo.get_job("nightly_job").asset_layer.executable_asset_keys
    assert repo.get_job("lake_compaction_job").asset_layer.executable_asset_keys == {compaction, snapshot}
    assert compaction in repo.asset_graph.get(snapshot).parent_keys


def test_daily_marts_are_partitioned_by_day() -> None:
    repo = definitions.defs.get_repository_def()
    node = repo.asset_graph.get(dg.AssetKey(["marts", "job_usage_daily"]))
    assert isinstance(node.partitions_def, dg.DailyPartitionsDefinition)
    assert repo.asset_graph.get(dg.AssetKey(["core", "jobs"])).partitions_def is None


def _doc_run_config(marker: str) -> dict:
    """The YAML block after ``<!-- run-config: marker -->`` in docs/scale-out.md."""
    import re
    from pathlib import Path

    import yaml

    text = (Path(__file__).resolve().parents[1] / "docs" / "scale-out.md").read_text()
    match = re.search(rf"<!-- run-config: {marker} -->\s*```yaml\n(.*?)```", text, re.S)
    assert match, f"docs/scale-out.md has no run-config block {marker!r}"
    return yaml.safe_load(match[1])


def test_scale_out_run_configs_are_valid_for_their_definitions() -> None:
    """The run config docs/scale-out.md shows for nightly_job is accepted by the Definitions it names
    (the shipped one pins the in-process executor, which rejects `max_concurrent`)."""
    shipped = definitions.defs.resolve_job_def("nightly_job")
    dg.validate_run_config(shipped, _doc_run_config("in_process"))
    multiprocess = _doc_run_config("multiprocess")
    try:
        dg.validate_run_config(shipped, multiprocess)
    except dg.DagsterInvalidConfigError:
        pass
    else:
        raise AssertionError("the in-process Definitions accepted max_concurrent")
    scaled = definitions.build_definitions(executor=dg.multiprocess_executor)
    dg.Definitions.validate_loadable(scaled)
    dg.validate_run_config(scaled.resolve_job_def("nightly_job"), multiprocess)


def test_definitions_bind_the_sensor_and_schedule() -> None:
    repo = definitions.build_definitions("/nonexistent/w.duckdb", "/nonexistent/landing").get_repository_def()
    assert repo.get_schedule_def("nightly_schedule").execution_timezone == "UTC"  # no cluster.yaml there
    assert repo.get_sensor_def("landing_sensor").job_name == "nightly_job"


def test_each_asset_key_is_spelled_out_once() -> None:
    """An asset key written as a literal is defined in one module (the one building the asset) and imported
    everywhere else: two spellings of one key drift apart silently (a renamed asset keeps a stale dependency)."""
    import re
    from collections import Counter
    from pathlib import Path

    root = Path(definitions.__file__).resolve().parents[1]
    literal = re.compile(r"dg\.AssetKey\(\[\s*(\"[^\"]+\"(?:\s*,\s*\"[^\"]+\")*)\s*\]\)")
    spelled = Counter(m.group(1).replace(" ", "") for folder in ("assets", "pipelines")
                      for path in (root / folder).glob("*.py") for m in literal.finditer(path.read_text()))
    assert spelled, "no asset key literal found: the pattern no longer matches the code"
    assert {key: n for key, n in spelled.items() if n > 1} == {}
