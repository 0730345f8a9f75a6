"""Job mix of an LLM/AI GPU cluster: who submits what, how big, how long, and how it is meant to end.

Drawn vectorised up front (numpy) as one row per submission. Shares follow the public traces in
/work/shared/reference/reliability-facts.md: most jobs are below one node and fail or finish fast,
few multi-node jobs hold most GPU time; user cancellation holds the largest GPU-time share (Acme
Seren/Kalos 61-66 %), user failures are numerous but short. Long training runs are not single rows:
a row with ``is_run`` starts a run whose segments are planned one by one by :func:`plan_segment`
while the simulation runs (a segment's end decides when the next is submitted).

Intended outcome (``intent``) is what the *user* would cause; the scheduler and the fault process may
end a job differently (preemption, NODE_FAIL) before that happens.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from gpusre.simulate.clock import LocalClock
from gpusre.simulate.config import SimulationConfig

__all__ = [
    "SIZE_CLASSES", "INTENTS", "PARTITIONS", "QOS_BY_TIER", "ACCOUNTS", "TIME_LIMITS_S",
    "UserTable", "Workload", "RunPlan", "SegmentPlan", "make_users", "generate_workload", "plan_segment",
    "snap_limit", "EXIT_CODES",
]

SIZE_CLASSES = ("single", "sub_node", "node", "medium", "large")
INTENTS = ("completed", "user_cancel", "user_error", "oom", "timeout")
PARTITIONS = ("interactive", "batch", "preempt")
#: Scheduling tier -> QOS name; tier 0 is scheduled first.
QOS_BY_TIER = ("high", "normal", "low")
ACCOUNTS = ("llm-pretrain", "llm-posttrain", "multimodal", "evaluation", "data", "speech", "research", "infra")
#: Per account: affinity to each size class (who runs the big jobs).
_ACCOUNT_AFFINITY = np.array([
    [0.5, 1.0, 2.0, 2.0, 4.0],
    [1.0, 1.5, 2.0, 2.0, 1.5],
    [1.0, 1.0, 1.5, 1.5, 1.5],
    [3.0, 1.5, 0.5, 0.3, 0.05],
    [2.0, 0.5, 0.2, 0.1, 0.02],
    [1.0, 1.0, 1.0, 1.0, 0.5],
    [2.0, 1.0, 1.0, 1.0, 0.5],
    [0.5, 0.5, 0.3, 0.2, 0.02],
])
_ACCOUNT_WEIGHT = np.array([0.14, 0.16, 0.12, 0.16, 0.08, 0.09, 0.18, 0.07])
_RUN_FAMILY = {"llm-pretrain": ("llm", ("pretrain",)), "llm-posttrain": ("llm", ("sft", "rlhf", "dpo")),
               "multimodal": ("vlm", ("pretrain", "sft")), "speech": ("asr", ("pretrain",)),
               "research": ("moe", ("pretrain", "ablation"))}
_SMALL_NAMES = ("eval-mmlu", "eval-humaneval", "eval-gsm8k", "tokenize", "data-filter", "sweep-lr", "debug",
                "inference-bench", "convert-ckpt", "nccl-test", "train-probe", "embed-corpus", "reward-model")
_INTERACTIVE_NAMES = ("bash", "jupyter", "interactive", "vscode")
_SURNAMES = ("chen", "patel", "garcia", "kim", "nguyen", "smith", "mueller", "rossi", "tanaka", "silva",
             "kowalski", "haddad", "okafor", "ivanova", "larsen", "dubois", "singh", "moreau", "costa", "yilmaz")

#: Common --time values users pick (s): 30 min ... 7 days (maximum job lifetime, as on Meta RSC).
TIME_LIMITS_S = np.array([1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800, 259200, 432000, 604800])
_PARTITION_MAX_LIMIT_S = (8 * 3600, 604800, 604800)

# Per size class: median runtime (s), lognormal sigma, partition shares, intent shares.
_RUNTIME_MEDIAN_S = np.array([20 * 60, 40 * 60, 90 * 60, 6 * 3600, 8 * 3600], dtype=float)
_RUNTIME_SIGMA = np.array([1.6, 1.6, 1.5, 1.4, 1.3])
_PARTITION_SHARE = np.array([
    [0.20, 0.62, 0.18],
    [0.12, 0.68, 0.20],
    [0.05, 0.75, 0.20],
    [0.00, 0.85, 0.15],
    [0.00, 1.00, 0.00],
])
_INTENT_SHARE = np.array([
    [0.58, 0.10, 0.27, 0.015, 0.035],
    [0.55, 0.12, 0.27, 0.020, 0.040],
    [0.50, 0.17, 0.26, 0.020, 0.050],
    [0.38, 0.32, 0.23, 0.020, 0.050],
    [0.24, 0.50, 0.22, 0.010, 0.030],
])
_INTERACTIVE_INTENT = np.array([0.35, 0.45, 0.08, 0.02, 0.10])
_CLASS_WEIGHT = np.array([0.50, 0.25, 0.18, 0.06, 0.015])
#: Share of medium / large submissions that are multi-job training runs, and run length (median s, sigma).
_RUN_SHARE = {3: 0.12, 4: 0.40}
_RUN_WORK = {3: (1.0 * 86400, 0.7), 4: (3.5 * 86400, 0.7)}
_RUN_SEGMENT_LIMITS_S = (86400, 172800, 259200)
_ARRAY_SHARE = 0.04
_PENDING_PATIENCE_SHARE = 0.03
EXIT_CODES = ("1:0", "2:0", "127:0", "134:0", "0:11")
_EXIT_WEIGHTS = np.array([0.72, 0.10, 0.05, 0.08, 0.05])
_HOUR_WEIGHT = np.array([0.35] * 7 + [0.8] * 2 + [1.6] * 9 + [1.0] * 4 + [0.6] * 2)


@dataclass(frozen=True)
class UserTable:
    """Users with their uid, primary account and relative activity (zipf)."""

    names: tuple[str, ...]
    uids: tuple[int, ...]
    accounts: tuple[str, ...]
    account_idx: np.ndarray
    activity: np.ndarray


@dataclass(frozen=True)
class RunPlan:
    """A multi-job training run: its key, owner and total GPU work still to do (s of wall time)."""

    run_id: str
    name: str
    work_s: float
    segment_limit_s: int
    with_comment: bool


@dataclass(frozen=True)
class SegmentPlan:
    """One job of a run: intended outcome, intended runtime, time limit, whether it is the last one."""

    intent: str
    planned_s: int
    limit_s: int
    last: bool


@dataclass
class Workload:
    """All first submissions, sorted by submit time (numpy columns, one row per Slurm job)."""

    submit: np.ndarray
    size_class: np.ndarray
    n_gpus: np.ndarray
    n_nodes: np.ndarray
    user: np.ndarray
    partition: np.ndarray
    tier: np.ndarray
    intent: np.ndarray
    planned_s: np.ndarray
    limit_s: np.ndarray
    exit_code: np.ndarray
    requeue_ok: np.ndarray
    patience_s: np.ndarray
    array_group: np.ndarray
    array_task: np.ndarray
    names: list[str]
    runs: dict[int, RunPlan]
    users: UserTable
    runtime_scale: float

    def __len__(self) -> int:
        return int(self.submit.size)


def make_users(n_users: int, rng: np.random.Generator) -> UserTable:
    """``n_users`` users ``<initial><surname>`` with zipf activity and a primary account each."""
    names: list[str] = []
    seen: set[str] = set()
    letters = "abcdefghijklmnoprstwy"
    while len(names) < n_users:
        name = letters[int(rng.integers(len(letters)))] + _SURNAMES[int(rng.integers(len(_SURNAMES)))]
        if name in seen:
            name = f"{name}{len(names)}"
        seen.add(name)
        names.append(name)
    account_idx = rng.choice(len(ACCOUNTS), size=n_users, p=_ACCOUNT_WEIGHT / _ACCOUNT_WEIGHT.sum())
    activity = 1.0 / np.arange(1, n_users + 1) ** 1.1
    return UserTable(tuple(names), tuple(20001 + i for i in range(n_users)),
                     tuple(ACCOUNTS[a] for a in account_idx), account_idx, activity / activity.sum())


def _multi_node_sizes(nodes: int) -> tuple[list[int], list[int]]:
    max_nodes = max(2, nodes // 2)
    medium = [s for s in (2, 4, 8) if s <= max_nodes]
    large = [s for s in (16, 32, 64, 128, 256, 512, 1024) if s <= max_nodes]
    top = max_nodes // 8 * 8
    if large and top > large[-1]:
        large.append(top)
    if not large:
        large = [medium.pop()] if len(medium) > 1 else [max_nodes]
    return medium, large


def snap_limit(seconds: np.ndarray, max_limit: np.ndarray) -> np.ndarray:
    """Smallest standard ``--time`` value >= ``seconds``, capped at the partition maximum."""
    idx = np.searchsorted(TIME_LIMITS_S, seconds, side="left")
    snapped = TIME_LIMITS_S[np.minimum(idx, TIME_LIMITS_S.size - 1)]
    return np.minimum(snapped, max_limit).astype(np.int64)


def _pick(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """Row-wise categorical draw: ``probs`` is (n, k), rows sum to 1."""
    u = rng.random(probs.shape[0])[:, None]
    return (u > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, probs.shape[1] - 1)


def _submit_times(rng: np.random.Generator, n: int, clock: LocalClock, start_weekday: int) -> np.ndarray:
    days = clock.days
    weekday = (start_weekday + np.arange(days)) % 7
    day_w = np.where(weekday >= 5, 0.55, 1.0)
    d = rng.choice(days, size=n, p=day_w / day_w.sum())
    h = rng.choice(24, size=n, p=_HOUR_WEIGHT / _HOUR_WEIGHT.sum())
    day_start = np.asarray(clock.day_start[:-1], dtype=np.int64)
    ts = day_start[d] + h * 3600 + rng.integers(0, 3600, size=n)
    # DST days are 23/25 h long: keep every submission inside the horizon.
    return np.minimum(ts, clock.day_start[-1] - 1)


def _realized(intent: np.ndarray, planned: np.ndarray, limit: np.ndarray, short: np.ndarray) -> np.ndarray:
    out = np.minimum(planned, limit - 60).astype(float)
    out = np.where((intent == 2) | (intent == 3), np.minimum(short, out), out)
    return np.where(intent == 4, limit, np.maximum(out, 5))


def generate_workload(config: SimulationConfig, clock: LocalClock, rng: np.random.Generator) -> Workload:
    """Draw all first submissions for ``config`` (arrays expanded, runs as their first row).

    Runtimes are scaled by one factor so the offered GPU-time is ``config.target_load`` of capacity.
    """
    g_node = config.gpus_per_node
    n_users = int(np.clip(30 + config.nodes // 20, 30, 80))
    users = make_users(n_users, rng)
    target_jobs = config.effective_jobs_per_day * config.days
    n = max(1, int(rng.poisson(target_jobs / 1.25)))  # arrays add ~25 % more jobs

    submit = np.sort(_submit_times(rng, n, clock, config.start.weekday()))
    frac = (submit - clock.day_start[0]) / max(1, clock.day_start[-1] - clock.day_start[0])
    # Usage shifts over time: large jobs' share falls, mid-size rises (SAKURAONE pattern).
    w = np.tile(_CLASS_WEIGHT, (n, 1))
    w[:, 3] *= 0.6 + 0.8 * frac
    w[:, 4] *= 1.4 - 0.8 * frac
    if g_node == 1:
        w[:, 1] = 0.0
    size_class = _pick(rng, w / w.sum(axis=1, keepdims=True))

    medium, large = _multi_node_sizes(config.nodes)
    sub_sizes = [s for s in (2, 4, 8, 16, 32) if s < g_node] or [1]
    n_nodes = np.ones(n, dtype=np.int64)
    pm = np.array(medium, dtype=float) ** -0.8
    pl = np.array(large, dtype=float) ** -1.2
    is_m, is_l = size_class == 3, size_class == 4
    n_nodes[is_m] = rng.choice(medium, size=int(is_m.sum()), p=pm / pm.sum())
    n_nodes[is_l] = rng.choice(large, size=int(is_l.sum()), p=pl / pl.sum())
    n_gpus = n_nodes * g_node
    n_gpus[size_class == 0] = 1
    is_s = size_class == 1
    n_gpus[is_s] = rng.choice(sub_sizes, size=int(is_s.sum()), p=None)

    aff = _ACCOUNT_AFFINITY[users.account_idx]  # (users, classes)
    user = np.empty(n, dtype=np.int64)
    for c in range(len(SIZE_CLASSES)):
        sel = size_class == c
        p = users.activity * aff[:, c]
        user[sel] = rng.choice(n_users, size=int(sel.sum()), p=p / p.sum())

    partition = _pick(rng, _PARTITION_SHARE[size_class])
    tier = np.where(partition == 0, 0, np.where(partition == 2, 2, 1))
    tier[(size_class == 4) & (rng.random(n) < 0.3)] = 0
    intent = _pick(rng, np.where((partition == 0)[:, None], _INTERACTIVE_INTENT, _INTENT_SHARE[size_class]))

    base_planned = rng.lognormal(np.log(_RUNTIME_MEDIAN_S[size_class]), _RUNTIME_SIGMA[size_class])
    base_planned = np.where(partition == 0, rng.lognormal(np.log(3600), 1.0, size=n), base_planned)
    base_planned = np.where(intent == 1, base_planned * 1.3, base_planned)
    short = np.where(intent == 2, rng.lognormal(np.log(90), 1.3, size=n), rng.lognormal(np.log(360), 1.0, size=n))
    slack = rng.uniform(1.2, 3.0, size=n)
    max_limit = np.array(_PARTITION_MAX_LIMIT_S)[partition]

    is_run = np.zeros(n, dtype=bool)
    for c, share in _RUN_SHARE.items():
        is_run |= (size_class == c) & (partition == 1) & (rng.random(n) < share)
    run_work = np.zeros(n)
    for c, (median, sigma) in _RUN_WORK.items():
        sel = is_run & (size_class == c)
        run_work[sel] = np.minimum(rng.lognormal(np.log(median), sigma, size=int(sel.sum())), 40 * 86400)

    # Array jobs: some small batch submissions become arrays of 2..64 tasks.
    is_array = (size_class <= 1) & (partition == 1) & ~is_run & (rng.random(n) < _ARRAY_SHARE)
    tasks = np.where(is_array, np.minimum(2 + rng.geometric(1 / 9, size=n), 64), 1)
    rep = np.repeat(np.arange(n), tasks)
    array_group = np.where(is_array[rep], rep, -1)
    array_task = np.concatenate([np.arange(t) for t in tasks]) if n else np.zeros(0, dtype=np.int64)
    m = rep.size
    # Tasks of one array share size, user and partition but have their own runtime and outcome.
    task_jitter = np.where(array_task > 0, rng.lognormal(0.0, 0.5, size=m), 1.0)
    cols = {k: v[rep] for k, v in dict(submit=submit, size_class=size_class, n_gpus=n_gpus, n_nodes=n_nodes,
                                      user=user, partition=partition, tier=tier, max_limit=max_limit,
                                      is_run=is_run, run_work=run_work).items()}
    intent_m = np.where(array_task > 0, _pick(rng, _INTENT_SHARE[cols["size_class"]]), intent[rep])
    base_m = base_planned[rep] * task_jitter
    short_m = short[rep] * task_jitter
    slack_m = slack[rep]

    # Runtime scale: offered GPU-seconds (runs count their whole work plus ~15 % restart overhead).
    capacity_s = config.total_gpus * config.days * 86400.0
    scale = 1.0
    for _ in range(4):
        planned = base_m * scale
        limit = snap_limit(np.where(intent_m == 4, planned * 0.6, planned * slack_m), cols["max_limit"])
        real = _realized(intent_m, planned, limit, short_m)
        offered = float((cols["n_gpus"] * np.where(cols["is_run"], cols["run_work"] * scale * 1.15, real)).sum())
        scale *= float(np.clip(config.target_load * capacity_s / max(offered, 1.0), 0.5, 2.0))
    scale = float(np.clip(scale, 0.02, 50.0))
    planned = base_m * scale
    limit = snap_limit(np.where(intent_m == 4, planned * 0.6, planned * slack_m), cols["max_limit"])
    real = _realized(intent_m, planned, limit, short_m)
    # Jobs that want more than the partition maximum are cut by it: they end in TIMEOUT.
    intent_m = np.where((intent_m <= 1) & (planned >= limit - 60), 4, intent_m)
    real = np.where(intent_m == 4, limit, real)

    exit_code = rng.choice(len(EXIT_CODES), size=m, p=_EXIT_WEIGHTS)
    requeue_ok = np.where(cols["partition"] == 0, False, rng.random(m) < np.where(cols["partition"] == 1, 0.9, 0.7))
    patience = np.where((rng.random(m) < _PENDING_PATIENCE_SHARE) & ~cols["is_run"],
                        rng.lognormal(np.log(2 * 3600), 1.0, size=m), 0.0)

    names, runs = _names_and_runs(rng, cols, users, cols["run_work"] * scale, array_group)
    return Workload(
        submit=cols["submit"].astype(np.int64), size_class=cols["size_class"], n_gpus=cols["n_gpus"],
        n_nodes=cols["n_nodes"], user=cols["user"], partition=cols["partition"], tier=cols["tier"],
        intent=intent_m, planned_s=np.maximum(real, 5).astype(np.int64), limit_s=limit, exit_code=exit_code,
        requeue_ok=requeue_ok, patience_s=patience.astype(np.int64), array_group=array_group,
        array_task=array_task, names=names, runs=runs, users=users, runtime_scale=scale,
    )


def _model_size(n_gpus: int) -> str:
    if n_gpus <= 64:
        return "3b"
    if n_gpus <= 256:
        return "13b"
    return "70b"


def _names_and_runs(rng: np.random.Generator, cols: dict[str, np.ndarray], users: UserTable,
                    run_work_s: np.ndarray, array_group: np.ndarray) -> tuple[list[str], dict[int, RunPlan]]:
    m = cols["submit"].size
    names: list[str] = []
    runs: dict[int, RunPlan] = {}
    run_counter: dict[str, int] = {}
    pick = rng.integers(0, 1 << 30, size=m)
    seg_limit = rng.choice(len(_RUN_SEGMENT_LIMITS_S), size=m, p=[0.3, 0.5, 0.2])
    comment = rng.random(m) < 0.5
    for i in range(m):
        if i > 0 and array_group[i] >= 0 and array_group[i - 1] == array_group[i]:
            names.append(names[-1])
            continue
        account = users.accounts[int(cols["user"][i])]
        c = int(cols["size_class"][i])
        r = int(pick[i])
        if cols["partition"][i] == 0:
            names.append(_INTERACTIVE_NAMES[r % len(_INTERACTIVE_NAMES)])
            continue
        if c <= 2:
            names.append(_SMALL_NAMES[r % len(_SMALL_NAMES)])
            continue
        family, phases = _RUN_FAMILY.get(account, ("llm", ("finetune",)))
        stem = f"{family}-{_model_size(int(cols['n_gpus'][i]))}-{phases[r % len(phases)]}"
        if cols["is_run"][i]:
            run_counter[stem] = run_counter.get(stem, 0) + 1
            run_id = f"{stem}-{run_counter[stem]:02d}"
            names.append(run_id)
            seg = int(_RUN_SEGMENT_LIMITS_S[int(seg_limit[i])])
            runs[i] = RunPlan(run_id, run_id, float(run_work_s[i]), seg, bool(comment[i]))
        else:
            names.append(f"{stem}-{('ablation', 'sweep', 'eval-suite', 'continue')[r % 4]}")
    return names, runs


def plan_segment(run: RunPlan, remaining_s: float, rnd: random.Random) -> SegmentPlan:
    """Plan the next job of a run given the work left.

    A segment that cannot finish the run ends at its time limit (TIMEOUT) unless the user cancels and
    resubmits it earlier (new config, bad loss curve) or it crashes; the segment that can finish ends
    with the user cancelling (run judged done) or completing.
    """
    limit = run.segment_limit_s
    if remaining_s > limit - 600:
        u = rnd.random()
        if u < 0.50:
            return SegmentPlan("user_cancel", int(limit * rnd.uniform(0.3, 0.95)), limit, False)
        if u < 0.56:
            return SegmentPlan("user_error", int(rnd.lognormvariate(np.log(300), 1.2)) + 5, limit, False)
        return SegmentPlan("timeout", limit, limit, False)
    planned = max(600, int(remaining_s))
    if rnd.random() < 0.55:
        return SegmentPlan("user_cancel", planned, limit, True)
    return SegmentPlan("completed", planned, limit, True)
