"""Parse step processes get a share of the cores for Polars' threads (``gpusre run --workers N``),
through the fork server the multiprocess executor starts them from; a user's setting wins."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpusre.pipelines import step_threads
from gpusre.pipelines.step_threads import POLARS_THREADS_VARIABLE, step_process_threads, threads_per_worker


def test_each_worker_gets_an_equal_share_of_at_least_one_core() -> None:
    assert doctest.testmod(step_threads).failed == 0
    assert [threads_per_worker(16, w) for w in (1, 2, 3, 4, 16, 32)] == [16, 8, 5, 4, 1, 1]


def test_the_variable_is_set_for_the_block_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(POLARS_THREADS_VARIABLE, raising=False)
    with step_process_threads(workers=4, cores=16) as threads:
        assert threads == 4 and os.environ[POLARS_THREADS_VARIABLE] == "4"
    assert POLARS_THREADS_VARIABLE not in os.environ


def test_a_users_setting_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POLARS_THREADS_VARIABLE, "3")
    with step_process_threads(workers=4, cores=16) as threads:
        assert threads == 3 and os.environ[POLARS_THREADS_VARIABLE] == "3"
    assert os.environ[POLARS_THREADS_VARIABLE] == "3"


# A fresh interpreter (a process has one fork server, started once): Polars already imported here, as
# in gpusre's CLI; the executor's way of starting steps — a fork server preloading Polars — inside the block.
CHILD = r"""
import multiprocessing as mp, os
import polars as pl  # noqa: F401 (imported before the block, as in the CLI)
from gpusre.pipelines.step_threads import step_process_threads

def pool(queue):
    import polars as pl
    queue.put(pl.thread_pool_size())

if __name__ == "__main__":
    cores = len(os.sched_getaffinity(0))
    with step_process_threads(workers=cores, cores=cores) as threads:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["polars"])
        queue = ctx.Queue()
        step = ctx.Process(target=pool, args=(queue,))
        step.start()
        print(threads, queue.get(timeout=120))
        step.join()
"""


def test_a_step_process_forked_from_the_fork_server_sizes_its_pool_by_it(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {k: v for k, v in os.environ.items() if k != POLARS_THREADS_VARIABLE}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                         timeout=180, env=env).stdout.split()
    threads, step_pool = map(int, out)
    assert threads == 1 and step_pool == 1
