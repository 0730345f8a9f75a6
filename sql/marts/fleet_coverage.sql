-- marts.fleet_coverage: one row: the fleet that capacity, utilization, goodput and MTBF exposure
-- assume (cluster.yaml `nodes` and `gpus_per_node`, or their defaults when cluster.yaml does not set
-- them; a mixed fleet's `node_gpus`) against the nodes and GPUs per node that Slurm accounting shows. A
-- trace from a 2,000-node cluster read with the default 100 nodes overstates utilization and goodput
-- 20-fold: the reports warn when the accounting shows more than the fleet. GPUs are judged per node: a
-- job whose GPUs exceed what cluster.yaml gives its nodes flags each of its nodes whose per-node share
-- (GPUs / nodes, rounded up) exceeds that node's count, so an 8-GPU job on a node configured with 4 is
-- caught even when gpus_per_node (the default) is 8.
-- Parameters: $fleet_source VARCHAR ('cluster.yaml' or 'default'), $configured_nodes INTEGER,
-- $fleet VARCHAR[] (the node names; empty when only a count is configured), $gpus_per_node INTEGER
-- (the default count), $gpu_nodes VARCHAR[] / $gpu_counts INTEGER[] (parallel: each listed node's GPUs,
-- cluster.yaml gpus_by_node; empty with a count only), $capacity_gpus INTEGER (the fleet's GPUs),
-- $leaf_switches INTEGER (leaf switches cluster.yaml names: without them a switch failure cannot be
-- told from one link fault per node, and counts once per node it cut off), $timezone VARCHAR (cluster.yaml
-- `timezone`: the zone local times were read in; the reports name it beside their UTC times).
CREATE OR REPLACE TABLE marts.fleet_coverage AS
WITH node_gpus AS (
    SELECT unnest($gpu_nodes::VARCHAR[]) AS node, unnest($gpu_counts::INTEGER[]) AS gpus
), job_nodes AS (
    SELECT DISTINCT unnest(nodes) AS node FROM core.jobs WHERE len(nodes) > 0
), gpu_jobs AS (
    -- the node count Slurm printed, else the node list's length; NULL when neither is known
    SELECT job_id, n_gpus, nodes, COALESCE(NULLIF(n_nodes, 0), NULLIF(len(nodes), 0)) AS job_nodes
    FROM core.jobs WHERE n_gpus > 0
), per_node_gpus AS (
    -- a whole-node job shows the node's GPUs; jobs on part of a node show fewer
    SELECT max(ceil(n_gpus / job_nodes)::INTEGER) AS max_gpus_per_node
    FROM gpu_jobs WHERE job_nodes IS NOT NULL
), job_node_share AS (
    -- each node of a GPU job with its configured GPUs and the job's GPUs per node
    SELECT s.job_id, s.n_gpus, s.job_nodes, s.node, ceil(s.n_gpus / s.job_nodes)::INTEGER AS share,
           coalesce(g.gpus, $gpus_per_node::INTEGER) AS configured
    FROM (SELECT job_id, n_gpus, job_nodes, unnest(nodes) AS node
          FROM gpu_jobs WHERE job_nodes IS NOT NULL AND len(nodes) > 0
            -- only a job with more GPUs than its node count x the fewest GPUs any node has can exceed its
            -- nodes' mean (job_over): a year's million other jobs are not unnested (0.42 -> 0.17 s a year)
            AND n_gpus > coalesce(job_nodes * least($gpus_per_node::INTEGER,
                                                    coalesce((SELECT min(gpus) FROM node_gpus), $gpus_per_node::INTEGER)),
                                  -1)) AS s
    LEFT JOIN node_gpus AS g USING (node)
), job_over AS (
    -- jobs with more GPUs than cluster.yaml gives their nodes (their mean count x the job's node count:
    -- a whole-node job over an 8- and a 4-GPU node has 12 GPUs, which is no excess)
    SELECT job_id FROM job_node_share GROUP BY job_id
    HAVING any_value(n_gpus) > avg(configured) * any_value(job_nodes)
), understated AS (
    -- of those jobs, the nodes whose share exceeds their own count: the ones to fix in cluster.yaml
    SELECT DISTINCT node FROM job_node_share
    WHERE job_id IN (SELECT job_id FROM job_over) AND share > configured
), unplaced_over AS (
    -- jobs without a node list: only the fleet's largest node count can bound them
    SELECT count(*) AS n FROM gpu_jobs
    WHERE job_nodes IS NOT NULL AND len(coalesce(nodes, [])) = 0
      AND ceil(n_gpus / job_nodes)::INTEGER > greatest($gpus_per_node::INTEGER,
                                                      coalesce((SELECT max(gpus) FROM node_gpus), 0))
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
           (SELECT max_gpus_per_node FROM per_node_gpus)            AS max_gpus_per_node_seen,
           (SELECT count(*) FROM understated)                       AS gpus_understated_nodes,
           COALESCE((SELECT list(node ORDER BY node)[1:20] FROM understated), [])::VARCHAR[]
                                                                    AS gpus_understated_examples,
           (SELECT n FROM unplaced_over)                            AS unplaced_jobs_over
)
SELECT $fleet_source::VARCHAR       AS fleet_source,
       $configured_nodes::INTEGER   AS configured_nodes,
       $gpus_per_node::INTEGER      AS gpus_per_node,
       $capacity_gpus::INTEGER      AS capacity_gpus,
       (SELECT count(*) FROM node_gpus WHERE gpus <> $gpus_per_node::INTEGER)::INTEGER AS nodes_other_gpus,
       $leaf_switches::INTEGER      AS leaf_switches,
       $timezone::VARCHAR           AS timezone,
       nodes_with_jobs,
       nodes_outside_fleet,
       outside_examples,
       max_gpus_per_node_seen,
       gpus_understated_nodes,
       gpus_understated_examples,
       nodes_outside_fleet > 0 OR gpus_understated_nodes > 0 OR unplaced_jobs_over > 0 AS fleet_understated
FROM counts;
