"""The line `gpusre run` prints to open the Dagster UI loads definitions bound to *that* run's landing,
warehouse and reports, from any directory (outside probe R: it printed DAGSTER_HOME only, so the UI
loaded the demo's resources relative to the current directory, and `workspace.yaml` only resolved
from inside the repo)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpusre.pipelines import cli
from gpusre.pipelines.runner import RunSummary, ui_command

#: Prints the resource paths and the sensor's / schedule's targets of the definitions `dagster dev` loads.
_SHOW_RESOURCES = """
import json, sys
from gpusre.pipelines.definitions import defs
print(json.dumps({name: getattr(defs.resources[name], "path", None)
                  for name in ("warehouse", "landing", "reports")}))
"""


def _split(line: str) -> tuple[dict[str, str], list[str]]:
    """The VAR=value assignments leading a shell line, and the command words after them."""
    words = shlex.split(line)
    env: dict[str, str] = {}
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return env, words


def test_printed_command_loads_definitions_on_the_runs_warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Spaces and a quote in the paths: the line must survive the shell.
    root = tmp_path / "site a's data"
    landing, warehouse, reports = root / "landing", root / "wh" / "gpusre.duckdb", root / "reports"
    landing.mkdir(parents=True)
    (landing / "cluster.yaml").write_text("cluster: ui\nnodes: gpu[01-02]\ngpus_per_node: 8\ntimezone: UTC\n")
    home = root / "wh" / "dagster_home"
    monkeypatch.chdir(root)  # relative arguments, as typed at a prompt
    monkeypatch.delenv("GPUSRE_PARTITIONS_START", raising=False)
    monkeypatch.delenv("GPUSRE_PARTITIONS_AHEAD_DAYS", raising=False)
    line = ui_command(home, Path("landing"), Path("wh/gpusre.duckdb"), Path("reports"))

    env, words = _split(line)
    assert env == {"DAGSTER_HOME": str(home), "GPUSRE_LANDING": str(landing), "GPUSRE_WAREHOUSE": str(warehouse),
                   "GPUSRE_REPORTS": str(reports)}
    assert words[:2] == ["dagster", "dev"]
    if words[2] == "-w":  # a source checkout: its workspace.yaml, by absolute path, loading the one module
        workspace = Path(words[3])
        assert workspace.is_absolute() and workspace.is_file()
        target = yaml.safe_load(workspace.read_text())["load_from"][0]["python_module"]
        module, attribute = target["module_name"], target["attribute"]
    else:  # an installed package: the module itself
        assert words[2:] == ["-m", "gpusre.pipelines.definitions", "-a", "defs"]
        module, attribute = "gpusre.pipelines.definitions", "defs"
    assert (module, attribute) == ("gpusre.pipelines.definitions", "defs")

    # What `dagster dev` would load, in another directory, with only the printed variables set.
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GPUSRE_", "DAGSTER_HOME"))}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run([sys.executable, "-c", _SHOW_RESOURCES], env={**clean, **env}, cwd=elsewhere,
                         capture_output=True, text=True, timeout=300, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "warehouse": str(warehouse), "landing": str(landing), "reports": str(reports)}


def test_partition_settings_of_the_run_are_passed_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSRE_PARTITIONS_START", "2019-06-01")
    monkeypatch.delenv("GPUSRE_PARTITIONS_AHEAD_DAYS", raising=False)
    env, _ = _split(ui_command(tmp_path / "h", tmp_path / "l", tmp_path / "w.duckdb", tmp_path / "r"))
    assert env["GPUSRE_PARTITIONS_START"] == "2019-06-01" and "GPUSRE_PARTITIONS_AHEAD_DAYS" not in env


def test_gpusre_run_prints_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`gpusre run` prints ui_command's line for its own paths (the pipeline itself is stubbed)."""
    import gpusre.pipelines.runner as runner

    home = tmp_path / "wh" / "dagster_home"
    monkeypatch.setattr(runner, "run_pipeline", lambda *a, **k: RunSummary(dagster_home=home))
    monkeypatch.setattr(cli, "_start_run_log", lambda folder: None)
    landing, warehouse = tmp_path / "landing", tmp_path / "wh" / "w.duckdb"
    assert cli._run_locked(landing, warehouse, tmp_path / "reports", None) == 0
    printed = [l for l in capsys.readouterr().out.splitlines() if l.startswith("Dagster UI")]
    assert printed == ["Dagster UI (runs, materializations, checks): "
                       + ui_command(home, landing, warehouse, tmp_path / "reports")]
