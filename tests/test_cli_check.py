"""``agents-learn --check``: the dry run ML-Agents users make by starting a run and killing it.
Everything that can be checked without an environment is, the resolved configuration is
printed, the exit code says the verdict, and nothing is written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import yaml

from stats import STATS_WRITER_GROUP
from tests.support.plugins import write_fake_plugin
from tests.test_cli import REPO, basic_config, one_line_error, run_cli
from trainers.settings import apply_cli_overrides, load_run_options

pytestmark = pytest.mark.slow  # runs the CLI in subprocesses


def test_a_valid_configuration_prints_what_would_run_and_writes_nothing(tmp_path):
    config = REPO / "config/ppo/3DBall.yaml"
    result = run_cli(tmp_path, str(config), "--check", "--run-id=ball", "--num-areas", "3", "--seed", "7")
    assert result.returncode == 0, result.stderr
    device = "auto" if torch.cuda.is_available() else "cpu"  # auto: each behavior measures where it trains
    assert result.stderr.strip().endswith(
        f"agents-learn: configuration OK: 3DBall in builtin:3DBall on {device}; nothing was written"
    )
    printed = tmp_path / "printed.yaml"
    printed.write_text(result.stdout)
    expected = apply_cli_overrides(load_run_options(str(config)), {"run_id": "ball", "num_areas": 3, "seed": 7})
    assert load_run_options(str(printed)) == expected
    assert list(tmp_path.iterdir()) == [printed]  # no results folder


def test_every_problem_found_without_an_environment_is_exit_1_and_writes_nothing(tmp_path):
    data = yaml.safe_load(basic_config(tmp_path, 1000).read_text())
    data["behaviors"]["Basic"]["behavioral_cloning"] = {"demo_path": "Demos/Expert.demo", "strength": 0.5}
    data["behaviors"]["Basic"]["reward_signals"]["curiosity"] = {"network_settings": {"memory": {"memory_size": 8}}}
    bc = tmp_path / "bc.yaml"
    bc.write_text(yaml.safe_dump(data))
    line = one_line_error(run_cli(tmp_path, str(bc), "--check"))
    assert "behaviors.Basic.behavioral_cloning.demo_path: Demos/Expert.demo does not exist" in line
    assert "behaviors.Basic.reward_signals.curiosity.network_settings.memory: the curiosity signal's network" in line
    assert one_line_error(run_cli(tmp_path, str(bc))) == line  # a real run refuses the same, first

    typo = tmp_path / "typo.yaml"
    typo.write_text("behaviors:\n  Basic:\n    hyperparameters:\n      batchsize: 32\n")
    assert "batchsize: unknown key (did you mean batch_size?)" in one_line_error(
        run_cli(tmp_path, str(typo), "--check")
    )

    line = one_line_error(run_cli(tmp_path, str(basic_config(tmp_path, 1000)), "--check", "--env", "Builds/Nope"))
    assert "Builds/Nope does not exist" in line
    line = one_line_error(run_cli(tmp_path, str(basic_config(tmp_path, 1000)), "--check", "--initialize-from=old"))
    assert "--initialize-from old" in line
    assert not (tmp_path / "results").exists()


def test_an_existing_run_is_refused_as_the_run_would_refuse_it(tmp_path):
    run = tmp_path / "results/taken"
    (run / "run_logs").mkdir(parents=True)
    (run / "run_logs/training_status.json").write_text("{}")
    config = str(basic_config(tmp_path, 1000))
    line = one_line_error(run_cli(tmp_path, config, "--check", "--run-id=taken"))
    assert "results/taken already exists: use --resume" in line
    assert run_cli(tmp_path, config, "--check", "--run-id=taken", "--force").returncode == 0
    assert sorted(str(p.relative_to(run)) for p in run.rglob("*")) == ["run_logs", "run_logs/training_status.json"]


def test_plugins_are_loaded(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    write_fake_plugin(site, "broken", "import not_installed_anywhere\n", STATS_WRITER_GROUP, {"dash": "broken:writers"})
    result = subprocess.run(
        [sys.executable, "-m", "orchestration.cli", str(basic_config(tmp_path, 1000)), "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    line = one_line_error(result)
    assert "stats writer plugin 'dash' (broken:writers)" in line and "failed to load" in line
    assert "ModuleNotFoundError" in line
