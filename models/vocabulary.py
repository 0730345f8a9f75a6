"""The Slurm and reliability terms every layer uses, defined once: job-state sets, size buckets, component classes.

Python code imports the names below; SQL gets the same definitions as DuckDB macros that
:func:`sql_macros` generates and :func:`gpusre.models.warehouse.apply_ddl` creates before any DDL file
runs (``core.is_terminal_state``, ``core.is_failed_state``, ``core.is_node_failure_state``,
``core.size_bucket``, ``core.size_bucket_order``), so no SQL file spells a state list or a bucket
boundary of its own. A set that cluster.yaml can override (``alerts.clustering.killed_states``) has its
*default* here; code that applies it reads the setting, never this default.

State sets (a job's or a job instance's final Slurm state; ``REQUEUED`` is the state of an earlier
instance of a requeued job):

=========================  ==============================================================================
``TERMINAL_STATES``        the job will not change again (it may be requeued under the same id)
``FAILED_STATES``          ended unsuccessfully: not completed, not cancelled, not preempted (AcmeTrace's
                           "failed", and every "failed jobs" share in the reports)
``INTERRUPTED_STATES``     ``FAILED_STATES`` plus REQUEUED: the ends that need a cause (failure attribution),
                           when the job started (a DEADLINE, like a cancel, also ends a job still pending:
                           that interrupted nothing)
``LIMIT_STATES``           ends at the job's own limit (memory, time limit, ``--deadline``): the user's
                           unless hardware says otherwise
``NODE_FAILURE_STATES``    Slurm itself blames a node: infrastructure even without a log line
``INFRA_INTERRUPT_STATES`` the infrastructure's or the scheduler's doing: node failure or preemption (goodput)
``KILLED_STATES``          default of ``alerts.clustering.killed_states``: jobs an incident counts as killed
``RESTART_STATES``         ends under which a node problem restarts a job (requeue, failed boot): a node
                           health check "preceded a job failure" on a killed or restarted job
``RESUBMIT_AFTER_STATES``  default of ``reliability.runs.resubmit_after_states``: a resubmission after
                           such an end continues the training run (only COMPLETED ends a run)
=========================  ==============================================================================

Incidents that are no failure: an ``incidents.csv`` row whose ``component`` is one of
:data:`NOT_A_FAILURE_WORDS` marks the tool-made incidents it overlaps as not a failure (a false
positive: the network team's cable test took a link down). They keep their ``marts.hw_incidents`` row
(the audit trail) with component, component class and cause class :data:`NOT_A_FAILURE`; every failure
count (MTBF, failure rates, the taxonomy, suspect nodes, MTTR, the reports' incident counts) keeps only
the incidents :func:`is_failure_incident` (SQL: ``core.is_failure_incident(cause_class)``) accepts.

Job failure attribution (``marts.job_failure_attribution.attribution``) takes one of :data:`ATTRIBUTIONS`:
``infrastructure`` (a fault of the fleet: the job-success SLI's failures, job MTTF, suspect nodes, the
incidents' kills), ``planned`` (:data:`PLANNED`: planned maintenance on one of its nodes ended it, no fault
— lost work shown as its own class, never a failure), ``user``, ``unknown`` and ``none`` (not a failure).

Duration formatting is presentation (``reports/formatting.py``), not domain vocabulary.
"""

from __future__ import annotations

import polars as pl

from gpusre.models.component_classes import (CLASS_LABELS, COMPONENT_CLASSES, class_label, class_of,
                                             load_component_classes, with_component_class)

__all__ = [
    "TERMINAL_STATES", "FAILED_STATES", "INTERRUPTED_STATES", "LIMIT_STATES", "NODE_FAILURE_STATES",
    "INFRA_INTERRUPT_STATES", "KILLED_STATES", "RESTART_STATES", "RESUBMIT_AFTER_STATES", "job_outcome", "RUN_KEY_SEP",
    "run_key", "run_key_job", "HEALTH_CHECK_KIND",
    "CPU_BUCKET", "SIZE_BUCKETS", "SIZE_BUCKET_LABELS", "size_bucket", "size_bucket_order", "size_bucket_expr",
    "size_bucket_order_expr", "bucket_order_of",
    "COMPONENT_CLASSES", "CLASS_LABELS", "class_label", "class_of", "load_component_classes", "with_component_class",
    "INFRASTRUCTURE", "PLANNED", "USER", "UNKNOWN", "NOT_ATTRIBUTED", "ATTRIBUTIONS", "LOSS_ATTRIBUTIONS",
    "PLANNED_COMPONENT", "PLANNED_CAUSE_CLASS",
    "NOT_A_FAILURE", "NOT_A_FAILURE_WORDS", "is_not_a_failure_word", "is_failure_incident", "failure_incidents",
    "sql_macros",
]

# --- job states ---------------------------------------------------------------------------------------

TERMINAL_STATES: tuple[str, ...] = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                                    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT")
FAILED_STATES: tuple[str, ...] = ("FAILED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")
# Slurm ends a job with DEADLINE at its --deadline whether it is running (killed like a TIMEOUT) or
# still pending; only the first is an interruption, so users of this set check that the job started.
INTERRUPTED_STATES: tuple[str, ...] = (*FAILED_STATES, "REQUEUED")
LIMIT_STATES: tuple[str, ...] = ("OUT_OF_MEMORY", "TIMEOUT", "DEADLINE")
NODE_FAILURE_STATES: tuple[str, ...] = ("NODE_FAIL", "BOOT_FAIL")
INFRA_INTERRUPT_STATES: tuple[str, ...] = (*NODE_FAILURE_STATES, "PREEMPTED")
KILLED_STATES: tuple[str, ...] = ("FAILED", "NODE_FAIL")
RESTART_STATES: tuple[str, ...] = ("REQUEUED", "BOOT_FAIL")
RESUBMIT_AFTER_STATES: tuple[str, ...] = ("FAILED", "NODE_FAIL", "TIMEOUT", "PREEMPTED", "REQUEUED",
                                          "OUT_OF_MEMORY", "BOOT_FAIL", "CANCELLED")


#: Where final runs (``core.jobs``) and the earlier runs Slurm requeued (``core.instances_outside_jobs``)
#: are counted together by job id, an earlier run is keyed ``<job_id>#<instance_no>``: each run is
#: matched on its own, and :func:`run_key_job` recovers the job (a job killed twice counts once).
#: Slurm job ids (``123``, ``123_4``, ``123+0``) never hold it.
RUN_KEY_SEP = "#"

#: Event kind of a failing health-check run (an NHC "ERROR: nhc: Health check failed" line): the
#: evidence kind the incident builder groups into firing episodes and repair times read back.
HEALTH_CHECK_KIND = "health_check"


def run_key(job_id: str = "job_id", instance_no: str = "instance_no") -> pl.Expr:
    """The key of a requeued job's earlier run, ``<job_id>#<instance_no>`` (:data:`RUN_KEY_SEP`), named ``job_id``."""
    return (pl.col(job_id).cast(pl.String) + RUN_KEY_SEP + pl.col(instance_no).cast(pl.String)).alias("job_id")


def run_key_job(key: pl.Expr) -> pl.Expr:
    """The job id of a run key (:data:`RUN_KEY_SEP`): ``'123#1'`` → ``'123'``, ``'123'`` → ``'123'``."""
    return key.str.split(RUN_KEY_SEP).list.first()


def job_outcome(state: str | None) -> str | None:
    """'completed', 'cancelled', 'failed' (:data:`FAILED_STATES`) or None (preempted, requeued, running).

    >>> [job_outcome(s) for s in ("COMPLETED", "CANCELLED", "TIMEOUT", "PREEMPTED")]
    ['completed', 'cancelled', 'failed', None]
    """
    if state == "COMPLETED":
        return "completed"
    if state == "CANCELLED":
        return "cancelled"
    return "failed" if state in FAILED_STATES else None


# --- job size buckets (GPUs per job) --------------------------------------------------------------------

#: CPU-only jobs (no GPU, or unknown): bucket order 0.
CPU_BUCKET = "0"
#: (label, lowest, highest GPUs; None = no upper bound), in order; bucket order = position + 1.
SIZE_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1", 1, 1), ("2-8", 2, 8), ("9-64", 9, 64), ("65-256", 65, 256), ("257-1024", 257, 1024), (">1024", 1025, None))
#: Every label in order, CPU bucket first.
SIZE_BUCKET_LABELS: tuple[str, ...] = (CPU_BUCKET, *(b[0] for b in SIZE_BUCKETS))


def size_bucket(n_gpus: int | None) -> str:
    """The bucket label of a GPU count.

    >>> [size_bucket(n) for n in (None, 0, 1, 8, 9, 1024, 1025)]
    ['0', '0', '1', '2-8', '9-64', '257-1024', '>1024']
    """
    return SIZE_BUCKET_LABELS[size_bucket_order(n_gpus)]


def size_bucket_order(n_gpus: int | None) -> int:
    """Sort position of a GPU count's bucket: 0 for CPU-only, 1 for '1', ... 6 for '>1024'."""
    if n_gpus is None or n_gpus <= 0:
        return 0
    for order, (_, _, hi) in enumerate(SIZE_BUCKETS, start=1):
        if hi is None or n_gpus <= hi:
            return order
    raise AssertionError("the last size bucket has no upper bound")


def bucket_order_of(label: str) -> int:
    """The sort position of a bucket label ('2-8' -> 2); ValueError for an unknown label."""
    return SIZE_BUCKET_LABELS.index(label)


def size_bucket_order_expr(col: str = "n_gpus") -> pl.Expr:
    """:func:`size_bucket_order` as a Polars expression (Int32)."""
    n = pl.col(col)
    expr = pl.when(n.is_null() | (n <= 0)).then(pl.lit(0, dtype=pl.Int32))
    for order, (_, _, hi) in enumerate(SIZE_BUCKETS, start=1):
        expr = expr.when(pl.lit(True) if hi is None else n <= hi).then(pl.lit(order, dtype=pl.Int32))
    return expr.otherwise(pl.lit(0, dtype=pl.Int32))


def size_bucket_expr(col: str = "n_gpus") -> pl.Expr:
    """:func:`size_bucket` as a Polars expression (String)."""
    return size_bucket_order_expr(col).replace_strict(dict(enumerate(SIZE_BUCKET_LABELS)), return_dtype=pl.String)


# --- job failure attribution ---------------------------------------------------------------------------

#: A fault of the fleet ended the job (node logs, node states, Slurm's NODE_FAIL): a failure of the
#: infrastructure, counted by the job-success SLI, job MTTF, suspect nodes and the incidents' kills.
INFRASTRUCTURE = "infrastructure"
#: Planned maintenance on one of its nodes ended the job (a Slurm NODE_FAIL of the maintenance reboot, a
#: root cancel as the drain began) and no fault of its own did: lost work, but no failure of anything.
PLANNED = "planned"
#: The user's code or its own limits ended the job.
USER = "user"
#: Nothing says who ended it.
UNKNOWN = "unknown"
#: Not a failure (completed, preempted, cancelled by its user, still running).
NOT_ATTRIBUTED = "none"
#: The attribution values in the order reports list them (``none`` rows are not in the failure marts).
ATTRIBUTIONS: tuple[str, ...] = (INFRASTRUCTURE, PLANNED, USER, UNKNOWN)
#: Attributions whose interrupted work is charged as lost GPU-hours (the user's failures count as delivered).
LOSS_ATTRIBUTIONS: tuple[str, ...] = (INFRASTRUCTURE, PLANNED)
#: Component and cause class of a :data:`PLANNED` attribution.
PLANNED_COMPONENT = "maintenance"
PLANNED_CAUSE_CLASS = "planned_maintenance"


# --- incidents that are no failure -------------------------------------------------------------------

#: Component, component class and cause class of a tool-made incident the operator marked as not a
#: failure. Not an event cause class (``event_catalog.CAUSE_CLASSES``): no log line is one by itself,
#: only an operator's word makes an incident one, so no catalog row may carry it.
NOT_A_FAILURE = "not_a_failure"
#: ``incidents.csv`` components (any case; spaces or hyphens for underscores: ``False positive``) that
#: mark the overlapping tool-made incidents as not a failure. ``none`` is what an operator writes in a
#: "component" column when nothing failed.
NOT_A_FAILURE_WORDS: tuple[str, ...] = ("none", "false_positive", NOT_A_FAILURE)


def is_not_a_failure_word(component: pl.Expr) -> pl.Expr:
    """Whether an operator's ``component`` text is one of :data:`NOT_A_FAILURE_WORDS` (null: false).

    >>> pl.select(is_not_a_failure_word(pl.lit(" False-Positive "))).item()
    True
    """
    words = component.str.strip_chars().str.to_lowercase().str.replace_all(r"[\s\-]+", "_")
    return words.is_in(list(NOT_A_FAILURE_WORDS)).fill_null(False)


def is_failure_incident(cause_class: pl.Expr | None = None) -> pl.Expr:
    """Whether an incident counts as a failure: every incident but those an operator marked
    :data:`NOT_A_FAILURE` (a null cause class, e.g. an old mart's operator-only row, counts).

    >>> pl.DataFrame({"cause_class": ["hardware", None, "not_a_failure"]}).select(is_failure_incident()).to_series().to_list()
    [True, True, False]
    """
    cause = pl.col("cause_class") if cause_class is None else cause_class
    return cause.ne_missing(pl.lit(NOT_A_FAILURE))


def failure_incident_sql(cause_class: str = "cause_class") -> str:
    """The SQL test of :func:`is_failure_incident` on column ``cause_class`` (what the macro
    ``core.is_failure_incident`` holds), for readers that may meet a warehouse without the macros.

    >>> failure_incident_sql("i.cause_class")
    "i.cause_class IS DISTINCT FROM 'not_a_failure'"
    """
    return f"{cause_class} IS DISTINCT FROM '{NOT_A_FAILURE}'"


def failure_incidents(incidents: pl.DataFrame) -> pl.DataFrame:
    """The rows of an incidents frame that count as failures (:func:`is_failure_incident`); a frame
    without ``cause_class`` (hand-built, or read narrowly) is returned whole."""
    return incidents.filter(is_failure_incident()) if "cause_class" in incidents.columns else incidents


# --- SQL -------------------------------------------------------------------------------------------------

def _in_list(states: tuple[str, ...]) -> str:
    return ", ".join(f"'{s}'" for s in states)


def sql_macros() -> str:
    """DuckDB ``CREATE OR REPLACE MACRO`` statements for the state sets, size buckets and the failure-incident
    test (idempotent)."""
    order_cases = "\n".join(f"         WHEN n_gpus <= {hi} THEN {i}" for i, (_, _, hi) in
                            enumerate(SIZE_BUCKETS, start=1) if hi is not None)
    label_cases = "\n".join(f"         WHEN n_gpus <= {hi} THEN '{label}'" for label, _, hi in SIZE_BUCKETS
                            if hi is not None)
    return f"""
CREATE SCHEMA IF NOT EXISTS core;
CREATE OR REPLACE MACRO core.is_terminal_state(s) AS s IN ({_in_list(TERMINAL_STATES)});
CREATE OR REPLACE MACRO core.is_failed_state(s) AS s IN ({_in_list(FAILED_STATES)});
CREATE OR REPLACE MACRO core.is_interrupted_state(s) AS s IN ({_in_list(INTERRUPTED_STATES)});
CREATE OR REPLACE MACRO core.is_node_failure_state(s) AS s IN ({_in_list(NODE_FAILURE_STATES)});
CREATE OR REPLACE MACRO core.job_outcome(s) AS
    CASE WHEN s = 'COMPLETED' THEN 'completed' WHEN s = 'CANCELLED' THEN 'cancelled'
         WHEN core.is_failed_state(s) THEN 'failed' END;
CREATE OR REPLACE MACRO core.is_failure_incident(cause_class) AS {failure_incident_sql()};
CREATE OR REPLACE MACRO core.size_bucket_order(n_gpus) AS
    CASE WHEN n_gpus IS NULL OR n_gpus <= 0 THEN 0
{order_cases}
         ELSE {len(SIZE_BUCKETS)} END;
CREATE OR REPLACE MACRO core.size_bucket(n_gpus) AS
    CASE WHEN n_gpus IS NULL OR n_gpus <= 0 THEN '{CPU_BUCKET}'
{label_cases}
         ELSE '{SIZE_BUCKETS[-1][0]}' END;
"""
