"""Training runs and their ETTR (Effective Training Time Ratio, Kokolis et al., HPCA 2025).

A *run* is one logical training task spread over several Slurm jobs and instances:

1. requeues of one job id (``core.job_instances``) always belong to the job's run;
2. an explicit run key, when the site sets one: the first capture group of ``comment_run_key``
   applied to the job comment (default ``run=<key>``), else of ``name_run_key`` applied to the name —
   jobs of one account (:data:`RUN_SCOPE`) with the same key, whoever submitted them;
3. otherwise resubmissions: jobs of the same account, user and job name (:data:`CHAIN_KEY`), where each job became
   eligible (its submit when the eligible time is unknown) 0 to ``resubmit_gap_s`` after the previous
   one ended in one of ``resubmit_after_states`` (failure, timeout, preemption, cancellation — anything
   but COMPLETED). The gap is measured to the *eligible* time, not the submit: a job submitted early and
   held on a dependency (``--dependency=afterany:<prev>``, ``singleton``) becomes eligible when its
   predecessor ends and continues the run, while two same-name jobs running side by side (the second
   eligible before the first ended) stay two runs.

Jobs with fewer than ``min_gpus`` GPUs are never grouped (each is a run of its own).

Per run (all times in seconds; the checkpoint policy is an assumption from ``cluster.yaml``):

* ``wallclock_s`` = last end − first eligible, the time the run's first job became eligible (its submit
  when unknown; a run still going ends at ``as_of``): the *available* wall-clock of Kokolis et al.
  (scheduled, or eligible and waiting). Time a job was held before it was eligible (``--begin``, a
  dependency on a job of another run) is not available time, in either ETTR; gaps between a job's
  end and the eligible time of its resubmission count as unproductive (Meta counts only time while
  a job of the run is eligible, so ours is the stricter figure). ``first_submit_ts`` stays the first
  submit;
* ``queue_s`` = Σ over started instances of start − eligible (submit when eligible is unknown);
* an instance is *interrupted* when the infrastructure, preemption or planned maintenance ended it
  (``interruption``, :func:`~gpusre.models.reliability.goodput.interruption_cause`: NODE_FAIL/BOOT_FAIL
  or attributed to the infrastructure from node logs; PREEMPTED; attributed ``planned``) — the run's last
  instance too (its work since the last checkpoint was lost whether or not anyone resubmitted). ETTR is
  Kokolis et al.'s productive runtime over available wall-clock: a planned interruption re-does the work
  since the last checkpoint and re-initialises exactly as a failure does, so it is unproductive time too
  (Llama 3's effective training time counts its 47 planned interruptions beside the 419 unexpected ones).
  A user's own failure or cancellation is no interruption (Kokolis et al. leave user-space failures out
  of ETTR): its time counts as productive, as in goodput;
* ``restart_overhead_s`` = Σ over instances that restart an interrupted one of min(u0, elapsed);
* ``lost_work_s`` = Σ over interrupted instances of the expected work since the last checkpoint,
  :func:`~gpusre.models.reliability.ettr_model.expected_lost_work_expr` (checkpoint phase unknown: about half an
  interval), with the instance's work time its elapsed time less its own start-up (min(u0, elapsed) when
  it is not the run's first);
* ``productive_s`` = Σ elapsed − restart overhead − lost work; ``ettr`` = productive / wall-clock.

Goodput (:mod:`~gpusre.models.reliability.goodput`) charges the same losses per day: both read the
columns :func:`charge_interruptions` adds. So do the attribution marts' ``lost_gpu_hours``, per
interruption (:func:`interruption_losses`, :func:`attributed_interruption_losses`): an instance the
infrastructure or planned maintenance ended costs GPUs × its lost work, plus the restart overhead of the
instance that restarted its run
after it — once that restart has started (a resubmission still pending at the end of the data costs
no restart yet, in goodput as in attribution; the next run that sees it start charges it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from gpusre.models.reliability.ettr_model import expected_lost_work_expr
from gpusre.models.reliability.goodput import interruption_cause
from gpusre.models.vocabulary import LOSS_ATTRIBUTIONS, RESUBMIT_AFTER_STATES

__all__ = ["RUN_SCOPE", "CHAIN_KEY", "CheckpointAssumption", "RunRules", "ETTR_RUNS_SCHEMA", "INTERRUPTION_LOSS_SCHEMA", "assign_runs",
           "run_mates", "run_instances", "lost_work_expr", "charge_interruptions", "interruption_losses",
           "attributed_interruption_losses", "charged_run_jobs", "ettr_runs"]


#: The columns a run never crosses: jobs of two accounts are never one run, by explicit key or by name.
#: A run is one logical task (Kokolis et al.'s "job run"), and a Slurm account is the project whose
#: allocation pays for it, so a task lives in one account. The user is not part of the scope: a team
#: takes turns restarting a multi-week run, or a service user (a watchdog, a workflow engine) resubmits
#: it in the project's account, and with its run key it is still one run. A key that two accounts share
#: is a coincidence of naming (``llama-70b-pt-r1`` in two projects), not one task. Used by the explicit
#: keys, the resubmission chains (:data:`CHAIN_KEY`) and :func:`run_mates` alike.
RUN_SCOPE: tuple[str, ...] = ("account",)

#: What a resubmission chain (no explicit key) matches on, inside :data:`RUN_SCOPE`: the user too. A key
#: is a declaration that jobs are one task; a job name is not (``train``, ``pretrain`` are shared by
#: colleagues running side by side, and the chain follows the previous job *by name*, so a colleague's
#: same-name job in between would cut a user's chain or join it). A team that resubmits each other's
#: runs sets a run key (``--comment run=<key>``, or ``name_run_key``).
CHAIN_KEY: tuple[str, ...] = (*RUN_SCOPE, "user", "name")


def _available_from(jobs: pl.DataFrame) -> pl.Expr:
    """When each job became available to its run: its (first) eligible time, its submit when the eligible
    time is unknown (or ``jobs`` has no ``eligible_ts``)."""
    avail = pl.coalesce("eligible_ts", "submit_ts") if "eligible_ts" in jobs.columns else pl.col("submit_ts")
    # no job becomes eligible after it started (a clock skew or a bad record must not shorten the run)
    return pl.min_horizontal(avail, "start_ts") if "start_ts" in jobs.columns else avail


def _known_available_from(jobs: pl.DataFrame) -> pl.Expr:
    """:func:`_available_from`, but None for a job still pending with no eligible time: Slurm shows
    ``Eligible=Unknown`` while a job is held (a dependency on a job still running), so it becomes
    eligible some time later, and its submit says nothing about when."""
    avail = _available_from(jobs)
    if "eligible_ts" not in jobs.columns or "start_ts" not in jobs.columns:
        return avail
    held = pl.col("eligible_ts").is_null() & pl.col("start_ts").is_null() & pl.col("end_ts").is_null()
    return pl.when(held).then(None).otherwise(avail)



@dataclass(frozen=True)
class CheckpointAssumption:
    """Checkpoint interval Δt_cp, restart overhead u0 and blocking write time w_cp, in seconds."""

    interval_s: int = 3600
    restart_overhead_s: int = 300
    write_s: int = 0


@dataclass(frozen=True)
class RunRules:
    """How jobs are grouped into runs and which checkpoint policy each account follows."""

    resubmit_gap_s: int = 6 * 3600
    comment_run_key: str | None = r"(?:^|[\s,;])run=([^\s,;]+)"
    name_run_key: str | None = None
    min_gpus: int = 8
    resubmit_after_states: Sequence[str] = RESUBMIT_AFTER_STATES
    checkpoint: CheckpointAssumption = field(default_factory=CheckpointAssumption)
    overrides: Mapping[str, CheckpointAssumption] = field(default_factory=dict)

    def policy_frame(self, accounts: Sequence[str]) -> pl.DataFrame:
        """One row per account: interval_s, restart_overhead_cfg_s, write_s, policy_source."""
        rows = []
        for acct in sorted({a for a in accounts if a is not None}):
            p = self.overrides.get(acct)
            rows.append((acct, *((p.interval_s, p.restart_overhead_s, p.write_s, "account override") if p else
                                  (self.checkpoint.interval_s, self.checkpoint.restart_overhead_s,
                                   self.checkpoint.write_s, "site default"))))
        return pl.DataFrame(rows, schema={"account": pl.String, "interval_s": pl.Int64,
                                          "restart_overhead_cfg_s": pl.Int64, "write_s": pl.Int64,
                                          "policy_source": pl.String}, orient="row")


ETTR_RUNS_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(), "user": pl.String(), "account": pl.String(), "name": pl.String(),
    "run_key_source": pl.String(), "job_ids": pl.List(pl.String()), "n_jobs": pl.Int64(),
    "n_instances": pl.Int64(), "n_gpus": pl.Int64(), "n_nodes": pl.Int64(), "interruptions": pl.Int64(),
    "first_submit_ts": pl.Datetime("us", "UTC"), "last_end_ts": pl.Datetime("us", "UTC"),
    "ongoing": pl.Boolean(), "wallclock_s": pl.Int64(), "queue_s": pl.Int64(), "run_s": pl.Int64(),
    "restart_overhead_s": pl.Int64(), "lost_work_s": pl.Float64(), "productive_s": pl.Float64(),
    "ettr": pl.Float64(), "ettr_excl_queue": pl.Float64(), "checkpoint_interval_s": pl.Int64(), "restart_overhead_cfg_s": pl.Int64(),
    "policy_source": pl.String(),
}


def _explicit_key(rules: RunRules, big: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """The explicit run key of a job (``comment_run_key`` on the comment, else ``name_run_key`` on the
    name) where ``big`` holds, and its source (``comment``/``name``); null otherwise."""
    key = pl.lit(None, dtype=pl.String)
    source = pl.lit(None, dtype=pl.String)
    if rules.comment_run_key:
        ck = pl.col("comment").cast(pl.String).str.extract(rules.comment_run_key, 1)
        key, source = pl.when(big & ck.is_not_null()).then(ck).otherwise(key), \
            pl.when(big & ck.is_not_null()).then(pl.lit("comment")).otherwise(source)
    if rules.name_run_key:
        nk = pl.col("name").str.extract(rules.name_run_key, 1)
        use = big & key.is_null() & nk.is_not_null()
        key, source = pl.when(use).then(nk).otherwise(key), pl.when(use).then(pl.lit("name")).otherwise(source)
    return key, source


def run_mates(jobs: pl.DataFrame, rules: RunRules, job_ids: pl.Series | pl.DataFrame) -> pl.Series:
    """``job_id`` of every job of ``jobs`` that can share a run with one of ``job_ids``: the same explicit
    run key, or the same :data:`CHAIN_KEY` (account, user and job name: a resubmission chain).

    :func:`assign_runs` over just these jobs gives the runs of ``job_ids`` exactly as over all of
    ``jobs`` (a run is the jobs of one account with its key, or one chain of its account, user and name), so a
    question about a few runs (the costs of the infrastructure-killed ones) need not assemble the year's
    million. Jobs of other accounts with the same key come along too: they are never in the run, but
    they decide its ``run_id`` (see :func:`assign_runs`). ``jobs`` needs ``job_id``, ``user``,
    ``account``, ``name``, ``comment``.
    """
    ids = (job_ids.to_frame("job_id") if isinstance(job_ids, pl.Series) else job_ids.select("job_id")).unique()
    key, _ = _explicit_key(rules, pl.lit(True))
    group = list(CHAIN_KEY)
    j = jobs.select("job_id", *group, key.alias("_key"))
    targets = j.join(ids, on="job_id", how="semi")
    by_key = j.join(targets.select("_key").drop_nulls().unique(), on="_key", how="semi")
    by_group = j.join(targets.select(group).unique(), on=group, how="semi", nulls_equal=True)
    return pl.concat([ids.get_column("job_id"), by_key.get_column("job_id"), by_group.get_column("job_id")]
                     ).unique().sort()


def assign_runs(jobs: pl.DataFrame, rules: RunRules) -> pl.DataFrame:
    """Run of every job: ``job_id``, ``run_id``, ``run_key_source`` (``comment``/``name``/``resubmission``/``single``).

    ``jobs`` needs ``job_id``, ``user``, ``account``, ``name``, ``comment``, ``n_gpus``, ``state``,
    ``submit_ts`` (the job's first submit) and ``end_ts``; with ``eligible_ts`` (the job's first eligible
    time) and ``start_ts`` a resubmission's gap runs to its eligible time, else to its submit. Both an
    explicit key and a resubmission chain group jobs of one :data:`RUN_SCOPE` (account) only: a key
    whoever in the account submitted the jobs, a chain those of one user (:data:`CHAIN_KEY`).
    Resubmission runs are named after their first job id; explicit-key runs after the key, and when
    another account used the same key earlier, ``<key>@<account>`` (run ids stay unique, and a run keeps
    its id when another account takes up its key later).
    """
    j = jobs.select(
        "job_id", *CHAIN_KEY, "state", "submit_ts", "end_ts",  # CHAIN_KEY holds RUN_SCOPE
        "n_gpus",
        pl.col("comment").cast(pl.String),
        _available_from(jobs).alias("_avail"),
        _known_available_from(jobs).alias("_order"),
    )
    # A pending job has no allocation yet (no GPU count): it may continue a big run, and is dropped
    # from the ETTR mart later if its run never gets GPUs.
    big = (pl.col("n_gpus") >= rules.min_gpus) | pl.col("n_gpus").is_null()
    key, source = _explicit_key(rules, big)
    j = j.with_columns(key.alias("_key"), source.alias("_src"))

    # One run per key and scope (account); the scope that used a key first (earliest submit) names its
    # run with the bare key, any other ``<key>@<account>``.
    scope = pl.concat_str([pl.col(c).fill_null("") for c in RUN_SCOPE], separator="/")
    first_scope = scope.sort_by("submit_ts", "job_id").first().over("_key")
    explicit = j.filter(pl.col("_key").is_not_null()).select(
        "job_id",
        pl.when(scope == first_scope).then(pl.col("_key"))
        .otherwise(pl.concat_str(pl.col("_key"), pl.lit("@"), scope)).alias("run_id"),
        pl.col("_src").alias("run_key_source"))
    single = j.filter(~big & pl.col("_key").is_null()).select(
        "job_id", pl.col("job_id").alias("run_id"), pl.lit("single").alias("run_key_source"))

    group = list(CHAIN_KEY)
    # In the order the jobs became eligible; a job still held with no eligible time yet (a dependency on
    # a running job) comes last: it becomes eligible after every job that already is. The gap runs from
    # the previous job's end to this job's eligible time (submit when unknown): negative when the two
    # overlapped (side by side: two runs), null while the previous one has not ended.
    chain = (
        j.filter(big & pl.col("_key").is_null())
        .sort([*group, "_order", "submit_ts", "job_id"], nulls_last=True)
        .with_columns(
            pl.col("state").shift(1).over(group).alias("_prev_state"),
            pl.col("end_ts").shift(1).over(group).alias("_prev_end"),
        )
        .with_columns(
            (pl.col("_avail") - pl.col("_prev_end")).dt.total_seconds().alias("_gap_s"),
        )
        .with_columns(
            ~(pl.col("_prev_state").is_in(list(rules.resubmit_after_states)).fill_null(False)
              & pl.col("_gap_s").is_between(0, rules.resubmit_gap_s).fill_null(False)).alias("_new")
        )
        .with_columns(pl.col("_new").cast(pl.Int64).cum_sum().over(group).alias("_run_no"))
        .with_columns(pl.col("job_id").first().over([*group, "_run_no"]).alias("run_id"))
    )
    n_in_run = pl.len().over("run_id")
    resub = chain.select(
        "job_id", "run_id",
        pl.when(n_in_run > 1).then(pl.lit("resubmission")).otherwise(pl.lit("single")).alias("run_key_source"))
    return pl.concat([explicit, resub, single], how="vertical")


def run_instances(instances: pl.DataFrame, jobs: pl.DataFrame, runs: pl.DataFrame, rules: RunRules,
                  as_of: datetime) -> pl.DataFrame:
    """Every started instance with its run, position in the run, restart overhead and expected lost work.

    Adds ``run_id``, ``account``, ``run_pos`` (1 = the run's first start), ``is_restart``,
    ``followed`` (another instance of the run comes after it), ``elapsed_eff_s`` (running instances up
    to ``as_of``), ``overhead_s`` (the start-up of a restart: min(u0, elapsed)), ``interval_s``,
    ``restart_overhead_cfg_s``, ``policy_source`` and pointers (``prev_job_id``, ``prev_instance_no``)
    to the instance before it in the run. Goodput and ETTR both start from this frame, with the
    losses :func:`charge_interruptions` adds.
    """
    accounts = jobs.get_column("account").unique().to_list()
    policy = rules.policy_frame([a for a in accounts if a is not None])
    pending_after = (
        jobs.filter(pl.col("start_ts").is_null() & pl.col("end_ts").is_null())
        .join(runs, on="job_id").group_by("run_id").agg(_available_from(jobs).max().alias("_pending_submit"))
    )
    as_of_lit = pl.lit(as_of).cast(pl.Datetime("us", "UTC"))
    same_run = pl.col("_run") == pl.col("_run").shift(1)
    run_first = pl.col("_run").search_sorted(pl.col("_run"), side="left").cast(pl.Int64)
    run_end = pl.col("_run").search_sorted(pl.col("_run"), side="right").cast(pl.Int64)
    inst = (
        instances.join(runs, on="job_id", how="left")
        .join(jobs.select("job_id", "account"), on="job_id", how="left")
        .with_columns(pl.col("run_id").fill_null(pl.col("job_id")))
        .join(policy, on="account", how="left")
        .with_columns(
            pl.col("interval_s").fill_null(rules.checkpoint.interval_s),
            pl.col("restart_overhead_cfg_s").fill_null(rules.checkpoint.restart_overhead_s),
            pl.col("write_s").fill_null(rules.checkpoint.write_s),
            pl.col("policy_source").fill_null("site default"),
            pl.when(pl.col("end_ts").is_null())
            .then((as_of_lit - pl.col("start_ts")).dt.total_seconds().clip(lower_bound=0))
            .otherwise(pl.col("elapsed_s").fill_null(
                (pl.col("end_ts") - pl.col("start_ts")).dt.total_seconds()))
            .cast(pl.Int64).alias("elapsed_eff_s"),
        )
        .sort("run_id", "start_ts", "job_id", "instance_no")
        # Sorted by run: a run is a block of rows, numbered by an integer, and the previous row is the
        # previous instance of its run. The block's bounds come from a binary search of the sorted
        # numbers: windows over them hashed a year's million runs (0.65 s, against 0.1 s).
        .with_columns(pl.col("run_id").rle_id().alias("_run"))
        .with_columns(
            (pl.int_range(pl.len(), dtype=pl.Int64) - run_first + 1).alias("run_pos"),
            (run_end - run_first).alias("_run_len"),
            *(pl.when(same_run).then(pl.col(c).shift(1)).alias(f"prev_{c}") for c in ("job_id", "instance_no")),
        )
        .join(pending_after, on="run_id", how="left")
        .with_columns(
            (pl.col("run_pos") > 1).alias("is_restart"),
            ((pl.col("run_pos") < pl.col("_run_len"))
             | (pl.col("_pending_submit").is_not_null() & pl.col("end_ts").is_not_null()
                & (pl.col("_pending_submit") >= pl.col("end_ts")))).alias("followed"),
        )
        .with_columns(
            pl.when(pl.col("is_restart"))
            .then(pl.min_horizontal("restart_overhead_cfg_s", "elapsed_eff_s"))
            .otherwise(0).cast(pl.Int64).alias("overhead_s"),
        )
        .drop("_run", "_run_len", "_pending_submit")
    )
    return inst


def lost_work_expr(elapsed_s: pl.Expr | str, overhead_s: pl.Expr | str, interval_s: pl.Expr | str) -> pl.Expr:
    """Expected work (s) an interrupted instance lost: its work since the last checkpoint
    (:func:`~gpusre.models.reliability.ettr_model.expected_lost_work_expr`), its work time being its
    elapsed time less its own start-up ``overhead_s`` (min(u0, elapsed) when it restarts its run, else 0:
    re-initialising is no work that can be lost). The one formula of ETTR, goodput and the attribution
    marts' ``lost_gpu_hours``."""
    col = lambda e: pl.col(e) if isinstance(e, str) else e  # noqa: E731
    return expected_lost_work_expr((col(elapsed_s) - col(overhead_s)).cast(pl.Float64),
                                   col(interval_s).cast(pl.Float64))


def charge_interruptions(inst: pl.DataFrame) -> pl.DataFrame:
    """The losses of interruptions, per instance of :func:`run_instances` output that has an
    ``interruption`` column (:func:`~gpusre.models.reliability.goodput.interruption_cause`: what
    interrupted it — the infrastructure, preemption or planned maintenance —, null when nothing did).

    Adds ``interruption`` (the cause of an instance that ended interrupted, else null), ``interrupted``
    (it did), ``lost_work_s`` (its expected work since the last checkpoint, :func:`lost_work_expr`, else
    0), ``charged_overhead_s`` (``overhead_s`` of an instance restarting an interrupted one, else 0) and
    ``restart_after`` (the cause of the interruption it restarts, else null). Whoever interrupted the run,
    the work since its last checkpoint and the restart are lost alike: ETTR sums them per run, goodput
    per day and cause, and :func:`interruption_losses` per interruption (the attribution marts): one
    definition of what an interruption costs.
    """
    cause = pl.when(pl.col("end_ts").is_not_null()).then(pl.col("interruption")).otherwise(pl.lit(None, pl.String))
    inst = inst.with_columns(cause.alias("interruption"))
    interrupted = pl.col("interruption").is_not_null()
    prev = inst.filter(interrupted).select(
        pl.col("job_id").alias("prev_job_id"), pl.col("instance_no").alias("prev_instance_no"),
        pl.col("interruption").alias("restart_after"))
    return (
        inst.drop("restart_after", strict=False)
        .join(prev, on=["prev_job_id", "prev_instance_no"], how="left", maintain_order="left")
        .with_columns(
            interrupted.alias("interrupted"),
            pl.when(interrupted).then(lost_work_expr("elapsed_eff_s", "overhead_s", "interval_s"))
            .otherwise(0.0).alias("lost_work_s"),
            pl.when(pl.col("restart_after").is_not_null()).then(pl.col("overhead_s"))
            .otherwise(0).cast(pl.Int64).alias("charged_overhead_s"),
        )
    )


#: Output of :func:`interruption_losses`: one row per interrupted instance.
INTERRUPTION_LOSS_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.String(), "instance_no": pl.Int64(), "is_latest": pl.Boolean(), "n_gpus": pl.Int64(),
    "interruption": pl.String(), "lost_work_s": pl.Float64(), "restart_s": pl.Int64(), "restart_gpus": pl.Int64(),
    "lost_gpu_hours": pl.Float64(),
}


def interruption_losses(inst: pl.DataFrame) -> pl.DataFrame:
    """What each interruption cost its run, from :func:`charge_interruptions` output: one row per
    interrupted instance (:data:`INTERRUPTION_LOSS_SCHEMA`), with its cause (``interruption``).

    ``lost_gpu_hours`` = (GPUs × ``lost_work_s`` + ``restart_gpus`` × ``restart_s``) / 3600, where
    ``restart_s`` is the ``charged_overhead_s`` of the instance that restarted the run after it
    (min(u0, its elapsed); 0 while no restart has started — a requeue or resubmission still pending at
    the end of the data costs no restart yet) and ``restart_gpus`` its GPUs. These are goodput's two
    losses of the interruption (lost work on the day it ended, the restart on the day the restart
    started) and ETTR's: summed over the infrastructure's interruptions they give goodput's
    ``lost_failure`` + ``lost_restart`` exactly, over the planned ones its ``lost_maintenance``, over the
    preemptions its ``lost_preemption``. ``is_latest`` comes from the input when it has the column.
    """
    nxt = inst.filter(pl.col("charged_overhead_s") > 0).select(
        pl.col("prev_job_id").alias("job_id"), pl.col("prev_instance_no").alias("instance_no"),
        pl.col("charged_overhead_s").alias("restart_s"), pl.col("n_gpus").alias("restart_gpus"))
    latest = pl.col("is_latest") if "is_latest" in inst.columns else pl.lit(None, dtype=pl.Boolean)
    gpus = pl.col("n_gpus").fill_null(0)
    out = (
        inst.filter("interrupted")
        .select("job_id", "instance_no", latest.alias("is_latest"), "n_gpus", "interruption", "lost_work_s")
        .join(nxt, on=["job_id", "instance_no"], how="left")
        .with_columns(pl.col("restart_s").fill_null(0), pl.col("restart_gpus").fill_null(0))
        .with_columns(((gpus * pl.col("lost_work_s") + pl.col("restart_gpus") * pl.col("restart_s")) / 3600.0)
                      .alias("lost_gpu_hours"))
    )
    return out.select([pl.col(c).cast(t) for c, t in INTERRUPTION_LOSS_SCHEMA.items()]).sort("job_id", "instance_no")


def charged_run_jobs(runs: pl.DataFrame, job_attribution: pl.DataFrame, instance_attribution: pl.DataFrame,
                     attributions: Sequence[str] = LOSS_ATTRIBUTIONS) -> pl.DataFrame:
    """``job_id`` of every job whose losses :func:`attributed_interruption_losses` needs: the jobs of each
    run (:func:`assign_runs` rows ``runs``) that holds a job or instance attributed to one of
    ``attributions``, and those jobs themselves (an instance of a job outside ``runs`` is a run of its own).
    An instance's losses are its run's business alone — its place in the run, the restart after it."""
    charged = (pl.concat([job_attribution.select("job_id", "attribution"),
                          instance_attribution.select("job_id", "attribution")], how="vertical_relaxed")
               .filter(pl.col("attribution").is_in(list(attributions))).select("job_id").unique())
    held = runs.join(charged, on="job_id", how="semi").select("run_id").unique()
    return pl.concat([runs.join(held, on="run_id", how="semi").select("job_id"), charged]).unique()


def attributed_interruption_losses(jobs: pl.DataFrame, instances: pl.DataFrame, job_attribution: pl.DataFrame,
                                   instance_attribution: pl.DataFrame, rules: RunRules, as_of: datetime,
                                   attributions: Sequence[str] = LOSS_ATTRIBUTIONS,
                                   runs: pl.DataFrame | None = None) -> pl.DataFrame:
    """:func:`interruption_losses` of the instances attributed to one of ``attributions`` (default the
    vocabulary's :data:`~gpusre.models.vocabulary.LOSS_ATTRIBUTIONS`: the infrastructure and planned
    maintenance): the ``lost_gpu_hours`` of ``marts.job_failure_attribution`` /
    ``instance_failure_attribution``, by the same steps as goodput and ETTR (:func:`assign_runs`,
    :func:`run_instances`, :func:`charge_interruptions`) — a planned interruption priced as an
    infrastructure one, restart overhead included.

    Args:
        jobs, instances: the frames of ``read_reliability_inputs`` (:mod:`~gpusre.models.reliability.marts`),
            or just the jobs of :func:`run_mates` of the attributed jobs and their instances: the runs
            of those jobs come out the same.
        job_attribution: ``job_id``, ``attribution`` of each job's latest instance.
        instance_attribution: ``job_id``, ``instance_no``, ``attribution`` of earlier instances (and
            the last started one of a job pending again); wins over the job's.
        rules, as_of: as :func:`run_instances`.
        attributions: which attributed instances to return.
        runs: :func:`assign_runs` of ``jobs`` and ``rules`` when the caller has it already.

    Returns:
        :data:`INTERRUPTION_LOSS_SCHEMA` rows of those instances that ended.
    """
    runs = assign_runs(jobs, rules) if runs is None else runs
    # Only the runs that hold such an instance (run mates are often half a year's jobs: every "train"
    # of one user and account is one chain, cut into runs by its gaps).
    keep = charged_run_jobs(runs, job_attribution, instance_attribution, attributions)
    runs, jobs, instances = (f.join(keep, on="job_id", how="semi") for f in (runs, jobs, instances))
    inst = run_instances(instances, jobs, runs, rules, as_of).with_columns(pl.col("instance_no").cast(pl.Int64))
    own = instance_attribution.select("job_id", pl.col("instance_no").cast(pl.Int64), "attribution")
    latest = (inst.filter("is_latest").select("job_id", "instance_no")
              .join(job_attribution.select("job_id", "attribution"), on="job_id"))
    attr = pl.concat([own, latest], how="vertical").unique(["job_id", "instance_no"], keep="first",
                                                            maintain_order=True)
    inst = charge_interruptions(inst.with_columns(interruption_cause(inst, attr)))
    wanted = attr.filter(pl.col("attribution").is_in(list(attributions))).select("job_id", "instance_no")
    return interruption_losses(inst).join(wanted, on=["job_id", "instance_no"], how="semi")


def ettr_runs(inst: pl.DataFrame, jobs: pl.DataFrame, runs: pl.DataFrame, as_of: datetime,
              min_gpus: int = 8) -> pl.DataFrame:
    """One row per run with at least ``min_gpus`` GPUs (:data:`ETTR_RUNS_SCHEMA`), from :func:`run_instances`
    output with :func:`charge_interruptions`' columns."""
    as_of_lit = pl.lit(as_of).cast(pl.Datetime("us", "UTC"))
    # The runs big enough to count, chosen before the per-run sorts (a year holds ~1 M small jobs).
    run_jobs = jobs.join(runs, on="job_id")
    counted = (run_jobs.group_by("run_id").agg(pl.col("n_gpus").max().cast(pl.Int64))
               .filter(pl.col("n_gpus") >= min_gpus).select("run_id"))
    job_side = (
        run_jobs.join(counted, on="run_id", how="semi")
        .group_by("run_id")
        .agg(
            pl.col("user").sort_by("submit_ts").first(),
            pl.col("account").sort_by("submit_ts").first(),
            pl.col("name").sort_by("submit_ts").first(),
            pl.col("run_key_source").first(),
            pl.col("job_id").sort_by("submit_ts", "job_id").alias("job_ids"),
            pl.len().alias("n_jobs"),
            pl.col("n_gpus").max().cast(pl.Int64),
            pl.col("n_nodes").max().cast(pl.Int64),
            pl.col("submit_ts").min().alias("first_submit_ts"),
            # available wall-clock starts when the run's first job became eligible (a held job's submit
            # does not count; a run of held jobs only falls back to its first submit)
            pl.coalesce(_known_available_from(jobs).min(), pl.col("submit_ts").min()).alias("_first_avail"),
            # A job without an end is pending or running: the run goes on.
            pl.col("end_ts").is_null().any().alias("ongoing"),
            pl.col("end_ts").max().alias("_last_end"),
        )
    )
    inst_side = (
        inst.join(counted, on="run_id", how="semi")
        .sort("run_id", "start_ts", "job_id", "instance_no")  # fixed order for the float sums
        .group_by("run_id")
        .agg(
            pl.len().alias("n_instances"),
            pl.col("interrupted").sum().cast(pl.Int64).alias("interruptions"),
            (pl.col("start_ts") - pl.coalesce("eligible_ts", "submit_ts", "start_ts")).dt.total_seconds()
            .clip(lower_bound=0).sum().cast(pl.Int64).alias("queue_s"),
            pl.col("elapsed_eff_s").sum().cast(pl.Int64).alias("run_s"),
            pl.col("charged_overhead_s").sum().cast(pl.Int64).alias("restart_overhead_s"),
            pl.col("lost_work_s").sum(),
            pl.col("interval_s").first().alias("checkpoint_interval_s"),
            pl.col("restart_overhead_cfg_s").first(),
            pl.col("policy_source").first(),
        )
    )
    out = (
        job_side.join(inst_side, on="run_id", how="left")
        .with_columns(
            pl.when(pl.col("ongoing")).then(as_of_lit).otherwise(pl.col("_last_end")).alias("last_end_ts"),
            pl.col("n_instances").fill_null(0), pl.col("interruptions").fill_null(0),
            pl.col("queue_s").fill_null(0), pl.col("run_s").fill_null(0),
            pl.col("restart_overhead_s").fill_null(0), pl.col("lost_work_s").fill_null(0.0),
        )
        .with_columns(
            (pl.col("last_end_ts") - pl.col("_first_avail")).dt.total_seconds().cast(pl.Int64)
            .alias("wallclock_s"),
            (pl.col("run_s") - pl.col("restart_overhead_s") - pl.col("lost_work_s")).alias("productive_s"),
        )
        .with_columns(
            pl.when(pl.col("wallclock_s") > 0).then(pl.col("productive_s") / pl.col("wallclock_s"))
            .otherwise(None).alias("ettr"),
            # the same run with its queue wait taken out of the denominator (cluster.yaml
            # slo.ettr_includes_queue_wait chooses which of the two the SLO uses)
            pl.when(pl.col("wallclock_s") - pl.col("queue_s") > 0)
            .then(pl.col("productive_s") / (pl.col("wallclock_s") - pl.col("queue_s")))
            .otherwise(None).alias("ettr_excl_queue"),
        )
    )
    return out.select([pl.col(c).cast(t) for c, t in ETTR_RUNS_SCHEMA.items()]).sort("first_submit_ts", "run_id")
