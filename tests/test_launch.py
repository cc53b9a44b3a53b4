"""Many runs elsewhere: ``train-all --devices`` (one spawned process per device) trains the plan
byte for byte as one process does, goes on past a failed run and resumes across devices;
``--launcher slurm|local`` submits one job per run through submitit (the local executor runs the
real submitit path here), and a dry run prints the sbatch script."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from hseval.cli.main import build_parser, main
from hseval.io.folders import locked
from hseval.io.output import OutputFolder
from hseval.io.run_format import load_run
from tests.helpers import interrupted_after_last_epoch

HEADS = ("plain", "hierarchy", "riemann")
ROOT = Path(__file__).resolve().parents[1]


def _args(fashion_like, *extra: str) -> list[str]:
    return ["train-all", "--data-root", str(fashion_like), "--quiet", "--set", "optim.epochs=1", "--set",
            "data.train_subset=64", "--set", "data.batch_size=32", "--set", "data.eval_batch_size=100", "--set",
            "engine.threads=1", *extra]


def _same_bytes(a, b, heads=HEADS) -> None:
    for head in heads:
        assert (a / head / "model.safetensors").read_bytes() == (b / head / "model.safetensors").read_bytes(), head


def test_devices_train_as_one_process_go_on_past_a_failure_and_resume(fashion_like, tmp_path, capsys):
    seq, par = tmp_path / "seq", tmp_path / "par"
    assert main([*_args(fashion_like, "--heads", ",".join(HEADS)), "--out", str(seq)]) == 0
    capsys.readouterr()
    devices = [*_args(fashion_like, "--heads", ",".join(HEADS), "--devices", "cpu,cpu"), "--out", str(par)]
    with OutputFolder(par, "runs"):  # the folder of runs, empty
        pass
    with locked(par / "hierarchy"):  # another writer holds one run's folder: that run fails when it starts
        assert main(devices) == 2
    captured = capsys.readouterr()
    assert "hierarchy failed on cpu: " in captured.out and "another hseval process" in captured.out
    assert "1 of 3 runs failed (hierarchy" in captured.err and len(captured.err.strip().splitlines()) == 1
    assert "plain: " in captured.out and " s on cpu" in captured.out
    interrupted_after_last_epoch(par / "riemann")  # its state is there
    assert main([*devices, "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "continuing riemann on cpu" in printed and "training hierarchy on cpu" in printed
    assert "plain: " in printed and "(kept)" in printed
    _same_bytes(seq, par)


@pytest.mark.parametrize(("argv", "message"), [
    (["--devices", "cpu,gpu"], r"--devices='gpu' is not a device"),
    (["--devices", "cpu", "--device", "cpu"], r"--devices gives each run its device; it does not go with --device"),
    (["--devices", "cpu", "--launcher", "local"], r"it does not go with --launcher"),
    (["--dry-run"], r"--dry-run prints the sbatch script of --launcher slurm"),
    (["--slurm-partition", "gpu"], r"--slurm-partition applies to --launcher slurm"),
    (["--launcher", "slurm"], r"--launcher slurm: .*srun.*submit from a Slurm login node"),
])
def test_launcher_options_are_checked_before_any_work(fashion_like, tmp_path, capsys, argv, message):
    assert main([*_args(fashion_like, "--heads", "plain", *argv), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
    assert not (tmp_path / "runs").exists()


def test_slurm_dry_run_prints_the_sbatch_script(fashion_like, tmp_path, capsys):
    out = tmp_path / "runs"
    assert main([*_args(fashion_like, "--heads", "plain,hierarchy,manifold", "--launcher", "slurm", "--dry-run",
                        "--slurm-partition", "gpu", "--slurm-gpus-per-run", "1", "--slurm-time", "120",
                        "--slurm-mem", "32", "--slurm-cpus-per-run", "8", "--slurm-parallel", "2"),
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for line in ("#SBATCH --partition=gpu", "#SBATCH --array=0-2%2", "#SBATCH --gpus-per-node=1",
                 "#SBATCH --time=120", "#SBATCH --mem=32GB", "#SBATCH --cpus-per-task=8", "#SBATCH --job-name=hseval",
                 f"#SBATCH --output={out.absolute()}/jobs/%A_%a/%A_%a_0_log.out", "-m submitit.core._submit"):
        assert line in printed, line
    assert "# 3 job(s), one per run: plain, hierarchy, manifold" in printed
    assert not out.exists()


def test_local_launcher_runs_a_submitit_job_whose_run_evaluates(fashion_like, tmp_path, capsys, monkeypatch):
    """submitit's working files (its pickles, logs) stay outside the user's folder and are removed
    when the jobs end; the summary names the device the run trained on."""
    import tempfile

    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    out = tmp_path / "runs"
    assert main([*_args(fashion_like, "--heads", "plain", "--launcher", "local"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "running 1 job(s) at once on this machine" in printed and "[cpu] plain: plain epoch 1/1" in printed
    assert "  plain: " in printed and " s on cpu" in printed and "on auto" not in printed
    assert "submitit INFO" not in printed and "trained 1 run as jobs on this machine" in printed
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["plain"]  # no jobs/, no pickle
    assert not [p for p in out.rglob("*") if p.suffix == ".pkl"] and not list(work.iterdir())
    assert load_run(out / "plain").meta["history"][0]["epoch"] == 1
    assert main(["evaluate", str(out), "--data-root", str(fashion_like), "--projections", "pca", "--quiet",
                 "--out", str(tmp_path / "eval")]) == 0
    assert (tmp_path / "eval" / "plain" / "metrics.json").is_file()


def test_a_job_fits_its_loader_processes_to_the_cpus_it_is_given(fashion_like, tmp_path, monkeypatch):
    """A Slurm job learns its node's CPUs only when it starts (the login node that plans it has
    others): the process that trains a planned run fits ``data.workers`` to the CPUs it may use,
    with the one-line note the command line gives."""
    from hseval.core.errors import HsevalWarning
    from hseval.train import launch, loader
    from tests.helpers import quick

    trained = {}
    monkeypatch.setattr(loader, "available_cores", lambda: 2)
    monkeypatch.setattr(launch, "train", lambda config, *args, **kwargs: trained.update(workers=config.data.workers))
    run = launch.PlannedRun("plain", quick(fashion_like, "plain", "data.workers=8"), tmp_path / "plain", False, False)
    with pytest.warns(HsevalWarning, match=r"data.workers=8 lowered to 2: 2 CPU\(s\) here"):
        launch.train_planned(run)
    assert trained == {"workers": 2}


def test_reproduce_paper_submits_each_table_through_the_launcher(capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("reproduce_paper", ROOT / "scripts" / "reproduce_paper.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "reproduce_paper", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    assert module.main(["4", "--dry-run", "--launcher", "slurm", "--slurm-partition", "gpu", "--slurm-time",
                        "600"]) == 0
    commands = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("hseval train-all")]
    assert len(commands) == 2
    for command in commands:
        assert command[-8:-2] == ["--launcher", "slurm", "--slurm-partition", "gpu", "--slurm-time", "600"]
        args = build_parser().parse_args(command[1:])
        assert (args.launcher, args.slurm_partition, args.slurm_time) == ("slurm", "gpu", 600)
    with pytest.raises(SystemExit):
        module.main(["4", "--dry-run", "--slurm-partition", "gpu"])  # --slurm-* without --launcher


def test_a_device_listed_twice_is_two_processes_sharing_the_cores(fashion_like, tmp_path, capsys):
    """``--devices cpu,cpu``: two processes (they were merged into one), each run with the cores'
    share of threads unless it sets its own."""
    import os

    argv = ["train-all", "--data-root", str(fashion_like), "--quiet", "--set", "optim.epochs=1", "--set",
            "data.train_subset=64", "--set", "data.batch_size=32", "--heads", "plain,hxe", "--devices", "cpu,cpu"]
    assert main([*argv, "--out", str(tmp_path / "runs")]) == 0
    printed = capsys.readouterr().out
    assert printed.count(" s on cpu") == 2
    threads = max(1, len(os.sched_getaffinity(0)) // 2)
    shared = f"2 processes (cpu x2, {threads} thread{'s' if threads > 1 else ''} each of the "
    assert f"training 2 run(s) in {shared}" in printed and f"trained 2 runs in {shared}" in printed  # said
    for head in ("plain", "hxe"):
        meta = load_run(tmp_path / "runs" / head).meta
        assert meta["device"]["threads"] == threads
        assert meta["training"]["engine"]["threads"] == threads


def test_a_device_listed_more_often_than_there_are_runs_starts_a_process_per_run():
    from hseval.train.launch import describe_processes, processes

    assert processes(["cpu"] * 4, 2)[0] == ["cpu", "cpu"]
    assert describe_processes(["cuda:0", "cpu", "cpu"], 1) == "1 process (cuda:0)"
