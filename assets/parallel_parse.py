"""A raw asset whose landing files are parsed in parallel steps: plan → parse × shards → publish.

The plan and the publish write the warehouse, so they run in the ``duckdb_warehouse`` pool; the
parse steps open no warehouse (they write invisible lake files and staged files, see
:mod:`gpusre.models.ingest.staging`), so Dagster's multiprocess executor (or a Kubernetes/Celery
executor) runs them side by side, one per shard (``ParseResource.shards``, ``gpusre run --workers``).
"""


from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dagster as dg
import duckdb

from gpusre.assets.metadata import file_ingest_metadata, latest_rejects
from gpusre.assets.progress import progress_reporter
from gpusre.models.ingest.ledger import FileIngest, loaded_rows
from gpusre.models.ingest.staging import IngestPlan, StagedFile
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, ParseResource, WarehouseResource

__all__ = ["ParsedSource", "parsed_source_asset"]

#: Dagster's step priority (higher runs first among ready steps; the default is 0).
_FIRST = {"dagster/priority": "10"}


@dataclass(frozen=True)
class ParsedSource:
    """The three functions of one source's ingest (see :mod:`gpusre.models.ingest.staging`)."""

    name: str  # source_kind; prefixes the op names
    plan: Callable[[duckdb.DuckDBPyConnection, LandingResource, int], IngestPlan]
    parse: Callable[[IngestPlan, int, Callable[[str], None] | None], list[StagedFile]]
    publish: Callable[[duckdb.DuckDBPyConnection, IngestPlan, list[StagedFile]], list[FileIngest]]


def parsed_source_asset(source: ParsedSource, *, key: dg.AssetKey, description: str, kinds: set[str],
                        after: dg.AssetKey | None = None) -> dg.AssetsDefinition:
    """The graph-backed asset ``key``: ``<name>_plan`` (pool) → ``<name>_parse`` per shard (no pool)
    → ``<name>_publish`` (pool), whose output carries the ingest's metadata. ``after``: an asset the
    plan must wait for (it reads it, e.g. raw.sacct_records for the year of RFC 3164 lines)."""

    # Plans and parses go first among the steps that are ready: a plan holds the warehouse for a
    # moment, and its parse steps then run beside the warehouse steps (core upserts, other sources).
    @dg.op(name=f"{source.name}_plan", pool=WAREHOUSE_POOL, ins={"after": dg.In(dg.Nothing)} if after else {},
           tags=_FIRST,
           out={"plan": dg.Out(), "shard": dg.DynamicOut(int)},
           description=f"Read the ledger; split the new or changed {source.name} files into parse shards.")
    def plan_op(context: dg.OpExecutionContext, warehouse: WarehouseResource, landing: LandingResource,
                parse_settings: ParseResource) -> Any:
        with warehouse.connect() as con:
            plan = source.plan(con, landing, parse_settings.shards)
        context.log.info(f"{source.name}: {len(plan.files)} file(s) in {len(plan.shards)} shard(s)")
        yield dg.Output(plan, "plan")
        for shard in range(len(plan.shards)):
            yield dg.DynamicOutput(shard, output_name="shard", mapping_key=f"shard_{shard}")

    @dg.op(name=f"{source.name}_parse", tags=_FIRST,
           description=f"Parse one shard of {source.name} files into the lake (invisible until published).")
    def parse_op(context: dg.OpExecutionContext, plan: IngestPlan, shard: int) -> list[StagedFile]:
        return source.parse(plan, shard, progress_reporter(context))

    @dg.op(name=f"{source.name}_publish", pool=WAREHOUSE_POOL,
           description=f"Publish the parsed {source.name} files in one warehouse transaction.")
    def publish_op(context: dg.OpExecutionContext, warehouse: WarehouseResource, plan: IngestPlan,
                   staged: list[list[StagedFile]]) -> dg.Output[None]:
        files = [file for shard in staged for file in shard]
        with warehouse.connect() as con:
            results = source.publish(con, plan, files)
            total = loaded_rows(con, source.name)
            rejects = latest_rejects(con, source.name)
        return dg.Output(None, metadata=file_ingest_metadata(context, results, total, rejects))

    def parse_all(plan: Any, shards: Any) -> Any:
        return publish_op(plan, shards.map(lambda shard: parse_op(plan, shard)).collect())

    if after is None:
        def compose() -> Any:
            return parse_all(*plan_op())
        ins = {}
    else:
        def compose(after: Any) -> Any:  # type: ignore[misc]
            return parse_all(*plan_op(after))
        ins = {"after": dg.AssetIn(key=after, dagster_type=dg.Nothing)}
    compose.__name__ = key.to_python_identifier()
    return dg.graph_asset(compose, key=key, ins=ins, group_name="ingest", kinds=kinds, description=description)
