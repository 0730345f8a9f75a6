-- marts.fleet_coverage: one row: the fleet that capacity, utilization, goodput and MTBF exposure
-- assume (cluster.yaml `nodes` and `gpus_per_node`, or their defaults when cluster.yaml does not set
-- them) against the nodes and GPUs per node that Slurm accounting shows. A trace from a 2,000-node
-- cluster read with the default 100 nodes overstates utilization and goodput 20-fold: the reports
-- warn when the accounting shows more than the fleet.
-- Parameters: $fleet_source VARCHAR ('cluster.yaml' or 'default'), $configured_nodes INTEGER,
-- $fleet VARCHAR[] (the node names; empty when only a count is configured), $gpus_per_node INTEGER,
-- $leaf_switches INTEGER (leaf switches cluster.yaml names: without them a switch failure cannot be
-- told from one link fault per node, and counts once per node it cut off), $timezone VARCHAR (cluster.yaml
-- `timezone`: the zone local times were read in; the reports name it beside their UTC times).
CREATE OR REPLACE TABLE marts.fleet_coverage AS
WITH job_nodes AS (
    SELECT DISTINCT unnest(nodes) AS node FROM core.jobs WHERE len(nodes) > 0
), gpu_jobs AS (
    -- the node count Slurm printed, else the node list's length; NULL when neither is known
    SELECT n_gpus, COALESCE(NULLIF(n_nodes, 0), NULLIF(len(nodes), 0)) AS job_nodes
    FROM core.jobs WHERE n_gpus > 0
), per_node_gpus AS (
    -- a whole-node job shows the node's GPUs; jobs on part of a node show fewer
    SELECT max(ceil(n_gpus / job_nodes)::INTEGER) AS max_gpus_per_node
    FROM gpu_jobs WHERE job_nodes IS NOT NULL
), outside AS (
    SELECT node FROM job_nodes
    WHERE len($fleet::VARCHAR[]) > 0 AND NOT list_contains($fleet::VARCHAR[], node)
), counts AS (
    SELECT (SELECT count(*) FROM job_nodes)                         AS nodes_with_jobs,
           CASE WHEN len($fleet::VARCHAR[]) > 0 THEN (SELECT count(*) FROM outside)
                ELSE greatest(0, (SELECT count(*) FROM job_nodes) - $configured_nodes::INTEGER) END
                                                                    AS nodes_outside_fleet,
           COALESCE((SELECT list(node ORDER BY node)[1:20] FROM outside), [])::VARCHAR[]
                                                                    AS outside_examples,
           (SELECT max_gpus_per_node FROM per_node_gpus)            AS max_gpus_per_node_seen
)
SELECT $fleet_source::VARCHAR       AS fleet_source,
       $configured_nodes::INTEGER   AS configured_nodes,
       $gpus_per_node::INTEGER      AS gpus_per_node,
       $leaf_switches::INTEGER      AS leaf_switches,
       $timezone::VARCHAR           AS timezone,
       nodes_with_jobs,
       nodes_outside_fleet,
       outside_examples,
       max_gpus_per_node_seen,
       nodes_outside_fleet > 0 OR COALESCE(max_gpus_per_node_seen > $gpus_per_node::INTEGER, false) AS fleet_understated
FROM counts;
