"""SLO review section "ETTR by run size: measured vs expected" (``#ettr``).

Reads core.size_bucket, marts.checkpoint_what_if, marts.ettr_by_size, marts.ettr_runs, marts.ettr_window_by_size, marts.ettr_window_policies; formats, computes nothing."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import fmt_hours, fmt_int, fmt_num, fmt_pct, fmt_span, is_number, plural, truncate
from gpusre.reports.kit.labels import bucket_cell
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Chart, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import macro_status, query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.slo.terms import fmt_rate
from gpusre.reports.slo.sections.mttf import whole_record_text
from gpusre.reports.slo.window import SloWindow, source_status

_TOP_N_RUNS = 12



def most_interrupted(sizes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The size bucket (a row of ``marts.ettr_window_by_size``) whose runs lost the largest share of their
    wall-clock to restarts and re-done work, when that is not the largest bucket, which the lead quotes
    anyway: a quarter whose six interruptions all hit 9-64-GPU runs read "restarts 0.0 %" from the
    65-256 bucket alone."""
    def interrupted(r: dict[str, Any]) -> float:
        return sum(v for v in (r["restart_share"], r["lost_work_share"]) if is_number(v))
    if not sizes:
        return None
    worst = max(sizes, key=interrupted)
    return worst if worst is not sizes[-1] and interrupted(worst) > interrupted(sizes[-1]) else None

def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    sec = Section("ettr", "ETTR by run size: measured vs expected",
                     scope=f"Measured: training runs that ended in the window (marts.ettr_runs, last job end "
                           f"{w.text}, not ongoing). Expected ETTR and the checkpoint what-if: whole record "
                           "(marts.ettr_by_size, marts.checkpoint_what_if).")
    reason = source_status(con, "ettr_runs") or macro_status(con, "marts.ettr_window_by_size")
    if reason:
        sec.no_data = reason
        return sec
    runs = query_rows(con, f"""SELECT run_id, "user", account, name, run_key_source, n_jobs, n_instances, n_gpus, n_nodes,
                                 interruptions, last_end_ts, wallclock_s, queue_s, run_s, restart_overhead_s,
                                 lost_work_s, productive_s, ettr, ettr_excl_queue, checkpoint_interval_s, restart_overhead_cfg_s,
                                 policy_source, core.size_bucket(n_gpus) AS size_bucket
                          FROM marts.ettr_runs
                          WHERE NOT coalesce(ongoing, false) AND ettr IS NOT NULL
                            AND {utc_day_sql('last_end_ts')} BETWEEN ? AND ?""", [w.start, w.end])
    if not runs:
        sec.no_data = f"{NO_DATA}: no training run in marts.ettr_runs ended in the window {w.text}."
        return sec
    expected: dict[str, dict[str, Any]] = {}
    if table_status(con, "marts.ettr_by_size") is None:
        expected = {r["gpus_bucket"]: r for r in query_rows(
            con, "SELECT gpus_bucket, expected_ettr, r_f_per_1000_node_days, n_nodes_median FROM marts.ettr_by_size")}
    # Per-bucket quantiles and wall-clock shares come from the mart; the runs are read only for the chart.
    sizes = query_rows(con, "SELECT * FROM marts.ettr_window_by_size(?, ?)", [w.start, w.end])
    # Expected ETTR and the what-if rest on the whole record's failure rate (the marts hold no period rows):
    # named with its span wherever quoted, so nobody reads them as the window's.
    record = whole_record_text(con)
    per_run: dict[str, list[float]] = {}
    for r in runs:
        per_run.setdefault(r["size_bucket"], []).append(r["ettr"])
    buckets = [r["size_bucket"] for r in sizes]
    big = sizes[-1]
    exp = expected.get(big["size_bucket"], {}).get("expected_ettr")
    take = (f"Runs of {big['size_bucket']} GPUs that ended in the window had a median ETTR of "
            f"{fmt_num(big['ettr_p50'], 2)} with queue wait and {fmt_num(big['ettr_excl_queue_p50'], 2)} without "
            f"({plural(big['runs'], 'run')})"
            + (f" against {fmt_num(exp, 2)} expected from failures alone (expected ETTR: {record}, not this "
               "window alone)" if is_number(exp) else "")
            + f"; on average queue wait took {fmt_pct(big['queue_share'])} of their "
              f"wall-clock, gaps between jobs {fmt_pct(big['gap_share'])}, restarts "
              f"{fmt_pct(big['restart_share'])} and re-done work {fmt_pct(big['lost_work_share'])}.")
    worst = most_interrupted(sizes)
    if worst is not None:
        take += (f" Runs of {worst['size_bucket']} GPUs lost the most to interruptions: restarts "
                 f"{fmt_pct(worst['restart_share'])} and re-done work {fmt_pct(worst['lost_work_share'])} of their "
                 f"wall-clock (median ETTR {fmt_num(worst['ettr_p50'], 2)}, {plural(worst['runs'], 'run')}).")
    sec.lead = take
    definition = scalar(con, "SELECT definition FROM marts.slo_daily WHERE sli = 'ettr_large_runs' "
                             "AND definition IS NOT NULL ORDER BY day DESC LIMIT 1") \
        if table_status(con, "marts.slo_daily") is None else None
    if definition:
        # The definition says what the SLO leaves out (queue wait, when it does); say what stays in, so
        # nobody reads the ETTR as the infrastructure's alone.
        sec.notes.append(f"The ETTR SLO: {definition} With or without queue wait, its wall-clock keeps every "
                         "gap between a job's end and its resubmission, those after a user's own failure or "
                         "cancellation too: they lower the ETTR though they cost no GPU-hours.")
    sec.items.append(Chart(svg(charts.ettr_distribution_chart(
        [(b, per_run.get(b, []), expected.get(b, {}).get("expected_ettr")) for b in buckets],
        f"ETTR per run by run size, runs that ended {w.text}")), take))

    rf = next((e["r_f_per_1000_node_days"] for e in expected.values() if is_number(e.get("r_f_per_1000_node_days"))), None)
    sec.items.append(Table(
        [Column("GPUs per run"), Column("Runs", True), Column("Median nodes", True), Column("ETTR mean", True),
         Column("p10", True), Column("p50", True), Column("p90", True), Column("Interruptions / run", True),
         Column("Queue share", True), Column("Expected ETTR", True)],
        [[bucket_cell(r["size_bucket"]), Cell(fmt_int(r["runs"])), Cell(fmt_num(r["median_nodes"], 0)),
          Cell(fmt_num(r["ettr_mean"], 2)), Cell(fmt_num(r["ettr_p10"], 2)), Cell(fmt_num(r["ettr_p50"], 2)),
          Cell(fmt_num(r["ettr_p90"], 2)), Cell(fmt_num(r["interruptions_mean"], 2)), Cell(fmt_pct(r["queue_share"])),
          Cell(fmt_num(expected.get(r["size_bucket"], {}).get("expected_ettr"), 3))] for r in sizes],
        caption="ETTR (Kokolis et al., HPCA 2025) = productive time / wall-clock of a run; wall-clock = the first job's "
                "eligible time (its submit when unknown) to the last end, all of it: queue waits and every gap "
                "between a job's end and the eligible time of the run's next job count as unproductive, the time "
                "after a user's own failure or cancellation until the resubmission included; productive = run "
                "time − restart overhead u0 after each interruption − re-done work since the last checkpoint (on "
                "average half a checkpoint interval Δ); interruptions are the infrastructure's, preemption's or "
                "planned maintenance's, as in goodput. A user's own failure or cancellation is no interruption: "
                "its run time counts as productive and it loses no GPU-hours, but the gap before its resubmission "
                "still lowers ETTR. Excl. queue takes only the queue waits out of the wall-clock, not those gaps. "
                "Queue share = mean of queue wait / wall-clock. Expected "
                "ETTR ≈ (1 − N · r_f · (u0 + Δ/2)) / (1 + w_cp/Δ) with the bucket's median nodes N, the measured "
                + (f"r_f = {fmt_rate(rf)} per 1,000 node-days " if is_number(rf) else "r_f ")
                + "and the median Δ, u0 of its runs (whole record): it counts failures only, not queue wait, which "
                  "is why measured ETTR sits far below it when runs wait in the queue.",
    ))

    # The assumptions behind every ETTR number: which checkpoint policy the window's runs were given.
    policies = query_rows(con, "SELECT * FROM marts.ettr_window_policies(?, ?)", [w.start, w.end])
    sec.notes.append(
        "Assumptions, not measurements: the checkpoint interval Δ and restart overhead u0 come from cluster.yaml "
        "(reliability.checkpoint, per-account overrides) — "
        + "; ".join(f"{plural(p['runs'], 'run')} with Δ = {fmt_span(p['checkpoint_interval_s'])} and "
                    f"u0 = {fmt_span(p['restart_overhead_cfg_s'])} ({p['policy_source'] or 'unknown source'})"
                    for p in policies)
        + ". Runs group jobs of one account: by explicit run key (job comment / name) whoever in the account "
          "submitted them, requeues of one job id, or resubmission of the same user and job name.")

    if table_status(con, "marts.checkpoint_what_if") is None:
        wi = query_rows(con, """SELECT n_nodes, interval_s, expected_ettr, reaches_target, target, max_interval_for_target_s,
                                  includes_queue_wait, queue_share, measured_ettr
                           FROM marts.checkpoint_what_if ORDER BY interval_s""")
        if wi:
            w0 = wi[0]
            best = w0["max_interval_for_target_s"]
            # The failure-rate section calls a rate from few failures insufficient: say the what-if rests on it.
            thin = (query_rows(con, """SELECT failures FROM marts.node_failure_rate WHERE period = 'all'
                                       AND variant = 'hw_incidents' AND NOT sufficient""")
                    if table_status(con, "marts.node_failure_rate") is None else [])
            caveat = (f" — from only {plural(thin[0]['failures'], 'failure')}, too few for a point estimate: "
                      "indicative only" if thin else "")
            # The mart's measured_ettr is the SLO's figure over every run the SLO counts (and their queue
            # share), not the ETTR of the what-if's run size: say which runs it is.
            measured_of = (f"measured ETTR of all runs the ETTR SLO counts (its large runs, not only "
                           f"{fmt_int(w0['n_nodes'])}-node ones)")
            sec.notes.append(
                f"Checkpoint what-if ({record}): for a run on {fmt_int(w0['n_nodes'])} nodes (the largest run "
                + (f"size) at r_f = {fmt_rate(rf)} per 1,000 node-days{caveat}, " if is_number(rf) else "size), ")
                + (f"checkpointing at least every {fmt_span(best)} keeps the expected ETTR at or above "
                   f"{fmt_num(w0['target'], 2)}." if is_number(best) else
                   f"no checkpoint interval reaches the expected ETTR target {fmt_num(w0['target'], 2)}.")
                + (f" Same definition as the SLO: queue wait counts as lost time, so the expected ETTR is the closed "
                   f"form × (1 − the runs' queue share {fmt_pct(w0['queue_share'])}); {measured_of} "
                   f"{fmt_num(w0['measured_ettr'], 2)}." if w0["includes_queue_wait"] and is_number(w0["queue_share"])
                   else f" Same definition as the SLO: queue wait left out; {measured_of} "
                   f"{fmt_num(w0['measured_ettr'], 2)}." if is_number(w0["measured_ettr"]) else
                   # marts.checkpoint_what_if leaves both empty rather than quote the small runs as the SLO's
                   " No run the ETTR SLO counts has finished, so there is no measured ETTR to set this against"
                   + (" and no queue share: the expected ETTR leaves queue wait out (an upper bound)."
                      if w0["includes_queue_wait"] else ".")))
            sec.items.append(Table(
                [Column("Checkpoint interval Δ")] + [Column(fmt_span(r["interval_s"]), True) for r in wi],
                [[Cell("Expected ETTR")] + [Cell(fmt_num(r["expected_ettr"], 3)) for r in wi],
                 [Cell(f"Reaches {fmt_num(w0['target'], 2)}")]
                 + [Cell("yes" if r["reaches_target"] else "no", swatch="#2e7d32" if r["reaches_target"] else "#c62828")
                    for r in wi]],
                caption=f"Expected ETTR of a {fmt_int(w0['n_nodes'])}-node run by checkpoint interval (Kokolis et al. "
                        f"closed form, site restart overhead and write time), target {fmt_num(w0['target'], 2)} "
                        "(the ETTR objective).",
            ))

    worst = sorted(runs, key=lambda r: (-(r["n_gpus"] or 0), r["ettr"], str(r["run_id"])))[:_TOP_N_RUNS]
    sec.items.append(Table(
        [Column("Run"), Column("User"), Column("Account"), Column("Name"), Column("GPUs", True), Column("Jobs", True),
         Column("Interrupted", True), Column("Wall-clock", True), Column("Queue", True), Column("ETTR", True), Column("excl. queue", True),
         Column("Δ / u0", nowrap=True)],
        [[Cell(truncate(r["run_id"], 20), title=str(r["run_id"])), Cell(truncate(r["user"], 16), title=r["user"]),
          Cell(truncate(r["account"], 18), title=r["account"]), Cell(truncate(r["name"], 34), title=r["name"]),
          Cell(fmt_int(r["n_gpus"])), Cell(fmt_int(r["n_jobs"])), Cell(fmt_int(r["interruptions"])),
          Cell(fmt_hours((r["wallclock_s"] or 0) / 3600)), Cell(fmt_hours((r["queue_s"] or 0) / 3600)),
          Cell(fmt_num(r["ettr"], 2)), Cell(fmt_num(r["ettr_excl_queue"], 2)),
          Cell(f"{fmt_span(r['checkpoint_interval_s'])} / {fmt_span(r['restart_overhead_cfg_s'])}",
               title=r["policy_source"])] for r in worst],
        caption=f"The largest runs that ended in the window, lowest ETTR first (top {len(worst)} of "
                f"{fmt_int(len(runs))}). Wall-clock: first eligible (submit) to last end; queue: summed waits of its "
                "instances; ETTR with queue wait, and without it (excl. queue); Δ / u0: assumed checkpoint interval and restart overhead (hover for the source).",
    ))
    return sec


SECTION = SectionSpec("ettr", "ETTR by run size: measured vs expected", build)
