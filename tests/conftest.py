"""Fixtures shared across test modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusre.pipelines.runner import RunSummary
from sim_warehouse import RICH_CONFIG, build_warehouse


@pytest.fixture(scope="session")
def rich_warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunSummary]:
    """The pipeline run once per session over ``RICH_CONFIG`` (``sim_warehouse``): the warehouse path
    and the run's summary. Read it; a test that writes works on a copy."""
    return build_warehouse(tmp_path_factory.mktemp("rich"))
