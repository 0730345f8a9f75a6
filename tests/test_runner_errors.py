"""A failing step is one line: Dagster 1.13 re-raises the step's own exception from
execute_in_process, which the runner turns into a one-line PipelineError; the traceback goes to the
``gpusre`` log (the run's log file), and Dagster's own ERROR event log never reaches the terminal."""

from __future__ import annotations

import logging
from pathlib import Path

import dagster as dg
import pytest

from gpusre.pipelines.runner import PipelineError, _execute


@dg.asset
def exploding() -> None:
    raise OverflowError("int too large to convert\nsecond line of detail")


def test_failing_step_is_one_line_and_the_traceback_is_logged(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                              caplog: pytest.LogCaptureFixture) -> None:
    defs = dg.Definitions(assets=[exploding], jobs=[dg.define_asset_job("boom_job", selection=[exploding])])
    with caplog.at_level(logging.ERROR, logger="gpusre.run"), pytest.raises(PipelineError) as info:
        _execute(defs, "boom_job", dg.DagsterInstance.ephemeral(), tmp_path / "w.duckdb")
    assert str(info.value) == "boom_job failed: OverflowError: int too large to convert"
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "OverflowError" not in out + err  # Dagster's console log is silent
    logged = [r for r in caplog.records if r.name == "gpusre.run"]
    assert len(logged) == 1 and logged[0].exc_info is not None and logged[0].exc_info[0] is OverflowError
