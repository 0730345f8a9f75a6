"""Projection of a parse step's wall clock to N worker processes from its measured 1-core cost.

Why a model and not a measurement: this machine has 2 cores, and the issue asks how the step scales
on a larger one. The model is the simplest that the measurements support: a process costs a fixed
time (start, imports, plan) plus a time per input byte, the workers run side by side on a core each,
and the step ends with its slowest shard. It ignores what a larger machine adds or takes away
(memory and disk bandwidth, more threads per worker); ``bench_syslog.py --scaling`` prints it next
to the measured 2-core run so the reader sees how far it holds here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ShardCost:
    """What one worker process costs on one core: ``fixed_s`` per process, ``per_byte_s`` per input byte."""

    fixed_s: float
    per_byte_s: float


def project_parse(cost: ShardCost, shard_bytes: Sequence[int]) -> float:
    """Projected wall seconds of a parse step whose shards (input bytes each) run side by side, one
    worker process and one core per shard: the slowest shard's.

    >>> project_parse(ShardCost(fixed_s=2.0, per_byte_s=1e-8), [3_000_000_000, 1_000_000_000])
    32.0
    >>> project_parse(ShardCost(fixed_s=2.0, per_byte_s=1e-8), [])
    0.0
    """
    return max((cost.fixed_s + cost.per_byte_s * b for b in shard_bytes), default=0.0)
