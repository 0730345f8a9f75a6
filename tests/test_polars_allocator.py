"""Polars' allocator keeps freed memory for reuse in every process that imports gpusre first."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpusre.models.polars_allocator import POLARS_MALLOC_CONF


def _conf_after_import(package: str, env: dict[str, str]) -> str:
    code = f"import {package}, polars, os; print(os.environ['_RJEM_MALLOC_CONF'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.parametrize("package", ["gpusre.models", "gpusre.pipelines.definitions", "gpusre.pipelines.cli",
                                     "gpusre.assets", "gpusre.reports", "gpusre.simulate"])
def test_each_package_sets_the_allocator_before_polars_loads(package: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    conf = _conf_after_import(package, env)
    # Polars puts its own defaults first and appends ours, so ours win (jemalloc: last one wins).
    assert conf.endswith("," + POLARS_MALLOC_CONF), conf
    assert conf.startswith("dirty_decay_ms:"), conf


def test_a_users_own_setting_is_left_alone() -> None:
    env = {**os.environ, "_RJEM_MALLOC_CONF": "dirty_decay_ms:0"}
    conf = _conf_after_import("gpusre.pipelines.definitions", env)
    assert conf.endswith(",dirty_decay_ms:0") and POLARS_MALLOC_CONF not in conf, conf


def test_options_inherited_from_a_parent_that_imported_polars_first_are_not_a_users_setting() -> None:
    # What a child of such a parent (a benchmark, a notebook's subprocess) inherits: Polars' own
    # defaults, possibly with the THP ones and another option the user set.
    for inherited in ("dirty_decay_ms:500,muzzy_decay_ms:1000",
                      "dirty_decay_ms:500,muzzy_decay_ms:1000,thp:always,metadata_thp:always,background_thread:true"):
        env = {**os.environ, "_RJEM_MALLOC_CONF": inherited}
        conf = _conf_after_import("gpusre.models", env)
        assert conf.endswith("," + POLARS_MALLOC_CONF), conf
        assert inherited in conf, conf  # the user's other options are kept


def test_a_parent_that_imported_polars_first_passes_the_setting_on_to_its_children() -> None:
    code = ("import polars, subprocess, sys; "
            "print(subprocess.run([sys.executable, '-c', 'import gpusre.models, os; "
            "print(os.environ[\"_RJEM_MALLOC_CONF\"])'], capture_output=True, text=True, check=True).stdout)")
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("," + POLARS_MALLOC_CONF), out.stdout
