"""``hseval evaluate`` and ``hseval report`` on runs trained by ``train-all``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from hseval.cli.main import main
from hseval.evaluation.runs import find_runs
from hseval.io.evaluation_format import FILES as EVAL_FILES
from hseval.io.results import load_evaluation
from hseval.tree import write_hierarchy
from hseval.tree.hierarchy import Hierarchy
from tests.bad_inputs.mutations import Mutation, mutations_of
from tests.conftest import BESIDE_PLAIN, EVALUATED_RUNS
from tests.helpers import fashion_tree, reseal, write_fashion_like


def test_every_file_of_the_output_contract(evaluated):
    runs = sorted(p.name for p in evaluated.iterdir() if p.is_dir())
    assert runs == EVALUATED_RUNS
    for run in runs:
        for name in EVAL_FILES:
            assert (evaluated / run / name).is_file(), name
        metrics = json.loads((evaluated / run / "metrics.json").read_text())
        assert metrics["samples"] == 200 and 0 <= metrics["top1"] <= 1
        assert set(metrics["superclass_acc"]) == {"1", "2"}
        proj = pd.read_csv(evaluated / run / "projections.csv")
        assert {"method", "kind", "x", "y", "label", "level1", "level2", "correct"} <= set(proj.columns)
        assert (proj["kind"] == "sample").sum() == 200 and set(proj["method"]) == {"pca"}
        with np.load(evaluated / run / "embeddings.npz", allow_pickle=False) as emb:
            assert emb["embeddings"].shape == (200, 128) and len(emb["labels"]) == 200
        per_node = pd.read_csv(evaluated / run / "per_node.csv")
        assert len(per_node) == 13 and per_node.loc[per_node["is_leaf"], "support"].sum() == 200
    index = json.loads((evaluated / "index.json").read_text())
    assert sorted(e["run"] for e in index["runs"]) == runs
    assert "superclass_acc_from_levels" not in json.loads((evaluated / "plain" / "metrics.json").read_text())


def test_superclass_accuracy_via_parent_delta_equals_a_direct_computation(evaluated, fashion_like):
    """Recompute way (a) from model.safetensors alone: w_p = Σ_{a ⪯ p} R_a δ_a, argmax over depth-k nodes."""
    from hseval.data import load_dataset
    from hseval.io.run_format import load_run

    metrics = json.loads((evaluated / "riemann" / "metrics.json").read_text())
    run_dir = metrics["run_path"]
    tensors = load_file(f"{run_dir}/model.safetensors")
    tree = Hierarchy.from_dict(json.loads(open(f"{run_dir}/run.json").read())["hierarchy"])
    delta = tensors["head.delta"].double()
    radius = tensors["head.radius"].double()
    w = torch.zeros(tree.num_nodes, delta.shape[1], dtype=torch.float64)
    for node in range(tree.num_nodes):
        for a in tree.path(node):
            w[node] += radius[a] * delta[a]
    data = load_dataset("fashion-mnist", fashion_like, download=False)
    model = load_run(run_dir).model
    with torch.no_grad():
        z = model.embed(data.test.preprocess(data.test.images, train=False)).double()
    for depth in (1, 2):
        nodes = tree.nodes_at_depth(depth)
        pred = nodes[(z @ w[nodes].t()).argmax(1).numpy()]
        truth = tree.ancestor_at_depth(data.test.labels, depth)
        keep = truth >= 0
        direct = float((pred[keep] == truth[keep]).mean())
        assert metrics["superclass_acc_from_levels"][str(depth)] == pytest.approx(direct, abs=1e-9)


def test_report_writes_tables_and_an_offline_page(evaluated, tmp_path, capsys):
    folder = tmp_path / "eval"
    shutil.copytree(evaluated, folder)
    assert main(["report", str(folder)]) == 0
    for name in ("summary.csv", "summary_grouped.csv", "superclass_accuracy.csv", "superclass_accuracy.md",
                 "report.md", "report.html"):
        assert (folder / name).is_file(), name
    levels = pd.read_csv(folder / "superclass_accuracy.csv")
    assert list(levels["run"]) == EVALUATED_RUNS
    assert {"level 1 (from leaf)", "level 2 (own scores)"} <= set(levels.columns)
    page = (folder / "report.html").read_text()
    # nothing is loaded from a network: no external script, stylesheet, image or frame
    # (plotly.js itself mentions URLs inside strings, e.g. its logo link, which load nothing)
    assert not re.search(r"""<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "id='plotly-gz'" in page  # plotly.js inlined (compressed)
    assert page.count("class='chart'") >= 6 and "hseval report" in page
    # a table of contents whose links reach headings, and a reading guide under every chart
    links = re.findall(r"<a href='#([^']+)'>", page)
    assert len(links) >= 5 and all(f"id='{target}'" in page for target in links)
    assert page.count("<p class='guide'>") >= page.count("class='chart'")
    significance = pd.read_csv(folder / "significance.csv")
    assert set(significance["run"]) == set(BESIDE_PLAIN)  # against plain, the default baseline
    assert significance["p"].notna().all()
    markdown = (folder / "report.md").read_text()
    assert "## Contents" in markdown and "- [Difference from plain](#difference-from-plain)" in markdown
    assert "## Argmax and CRM re-ranking" in markdown and "| CRM top-1 | Δ top-1 |" in markdown
    assert "## The paper's tables" in markdown  # and its own files: a small CNN on Fashion-MNIST has no paper cell
    paper = (folder / "paper_tables.md").read_text()
    assert "no matching paper cell" in paper and "## Table 6: Super-class accuracy" in paper
    assert "_No run fills it: it takes ResNet-18 runs" in paper  # the ablations need ResNet-18, and say so
    assert (folder / "paper_tables.tex").read_text().startswith("% Tables 1–2")
    assert "## Decisions: what each model answers when it is unsure" in markdown
    assert "| depth recall at 90% correct |" in markdown  # each run against plain at matched operating points
    assert "Operating curves by depth" in page and "barz-denzler: decisions" in page
    across = pd.read_csv(folder / "decisions_summary.csv")
    assert set(across["run"]) == set(EVALUATED_RUNS) and {"rule", "probabilities", "hf1"} <= set(across.columns)
    matched = pd.read_csv(folder / "operating_points.csv")
    assert set(matched["run"]) <= set(BESIDE_PLAIN) and {"difference", "p_holm"} <= set(matched.columns)
    summary = pd.read_csv(folder / "summary.csv").set_index("run")
    assert summary.loc["plain", "crm_top1"] == pytest.approx(
        json.loads((folder / "plain" / "metrics.json").read_text())["crm"]["top1"])
    assert main(["report", str(folder), "--baseline", "riemann"]) == 0
    assert set(pd.read_csv(folder / "significance.csv")["run"]) == set(EVALUATED_RUNS) - {"riemann"}
    assert main(["report", str(folder), "--baseline", "nope"]) == 2
    assert "--baseline 'nope' is not a readable run of this folder" in capsys.readouterr().err


def test_runs_grouped_over_seeds(fashion_like, tmp_path):
    runs = tmp_path / "runs"
    assert main(["train-all", "--data-root", str(fashion_like), "--heads", "plain", "--seeds", "0,1", "--quiet",
                 "--set", "optim.epochs=1", "--set", "data.train_subset=100", "--out", str(runs)]) == 0
    assert main(["evaluate", str(runs / "*"), "--data-root", str(fashion_like), "--projections", "none",
                 "--quiet", "--out", str(tmp_path / "eval")]) == 0
    assert main(["report", str(tmp_path / "eval")]) == 0
    grouped = pd.read_csv(tmp_path / "eval" / "summary_grouped.csv")
    assert len(grouped) == 1 and grouped.loc[0, "seeds"] == 2
    summary = pd.read_csv(tmp_path / "eval" / "summary.csv")
    assert grouped.loc[0, "top1_mean"] == pytest.approx(summary["top1"].mean())
    assert grouped.loc[0, "top1_std"] == pytest.approx(summary["top1"].std(ddof=1))
    assert "± " in (tmp_path / "eval" / "report.md").read_text()


def _error(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    return code, err


def test_evaluate_errors_leave_no_output(evaluated, fashion_like, tmp_path, capsys):
    run = json.loads((evaluated / "plain" / "metrics.json").read_text())["run_path"]
    out = tmp_path / "out"
    cases = [
        (["evaluate", str(tmp_path / "nothing"), "--out", str(out)], r"no such run folder"),
        (["evaluate", str(tmp_path), "--out", str(out)], r"no runs \(folders with run.json\)"),
        (["evaluate", run, "--out", str(out), "--max-points", "0"],
         r"argument --max-points: expected a positive integer, got 0"),
        (["evaluate", run, "--out", str(out), "--max-points", "-5"], r"--max-points: expected a positive integer"),
        (["evaluate", run, "--out", str(out), "--projections", "mds"], r"unknown projection 'mds'"),
        (["evaluate", run, "--out", str(out), "--data-root", str(tmp_path / "empty")], r"Fashion-MNIST not found"),
    ]
    for argv, message in cases:
        code, err = _error(capsys, argv)
        assert code == 2 and len(err.splitlines()) == 1 and re.search(message, err), (argv, err)
        assert not out.exists() or not any(out.iterdir())


def test_evaluate_refuses_unknown_schema(evaluated, tmp_path, capsys):
    run = json.loads((evaluated / "plain" / "metrics.json").read_text())["run_path"]
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    meta = json.loads((copy / "run.json").read_text())
    meta["schema_version"] = 7
    (copy / "run.json").write_text(json.dumps(meta))
    code, err = _error(capsys, ["evaluate", str(copy), "--out", str(tmp_path / "out")])
    assert code == 2 and "run.json: 'schema_version': 7 is newer than this hseval understands" in err
    assert not (tmp_path / "out" / "run").exists()


def test_report_on_garbage_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "metrics.json").write_text("{broken")
    code, err = _error(capsys, ["report", str(tmp_path)])  # a folder is an evaluation by its marker, not its files
    assert code == 2 and "holds no evaluated runs" in err
    reseal(tmp_path / "x")
    code, err = _error(capsys, ["report", str(tmp_path)])
    assert code == 2 and "no readable evaluated run" in err and "x/metrics.json" in err
    code, err = _error(capsys, ["report", str(tmp_path / "missing")])
    assert code == 2 and "no such evaluation folder" in err


def test_load_evaluation_sets_damaged_runs_aside(evaluated, tmp_path):
    folder = tmp_path / "eval"
    shutil.copytree(evaluated, folder)
    (folder / "plain" / "metrics.json").write_text("[1,2")
    result = load_evaluation(folder)
    assert [r.name for r in result.runs] == BESIDE_PLAIN
    assert result.problems == [f"{folder / 'plain' / 'metrics.json'}: was changed after 'hseval evaluate' wrote it "
                               "(checksum mismatch); re-run 'hseval evaluate'"]
    reseal(folder / "plain")
    problems = load_evaluation(folder).problems
    assert len(problems) == 1 and "plain/metrics.json: not valid JSON (EOF while parsing a list at line 1" in \
        problems[0]


def test_find_runs_globs_and_folders(evaluated):
    root = json.loads((evaluated / "plain" / "metrics.json").read_text())["run_path"].rsplit("/", 1)[0]
    assert [p.name for p in find_runs([root])] == EVALUATED_RUNS
    assert [p.name for p in find_runs([root + "/p*"])] == ["plain"]


@pytest.mark.slow  # trains a run: not in the fast lane
def test_a_run_is_self_contained(tmp_path, monkeypatch, capsys):
    """Trained with relative --data-root and --hierarchy, the run is evaluated from another folder
    after the tree file is gone: the run carries its tree and an absolute data root."""
    from tests.bad_inputs.builders import image_folder

    work = tmp_path / "work"
    work.mkdir()
    image_folder(work, classes=("a", "b"), per_class=4)
    monkeypatch.chdir(work)
    assert main(["train", "--dataset", "image-folder", "--data-root", "images", "--hierarchy", "tree.txt",
                 "--backbone", "small-cnn", "--quiet", "--set", "optim.epochs=1", "--set", "data.batch_size=4",
                 "--set", "data.workers=0", "--out", "run"]) == 0
    meta = json.loads((work / "run" / "run.json").read_text())
    assert meta["dataset"]["root"] == str((work / "images").resolve())
    (work / "tree.txt").unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["evaluate", str(work / "run"), "--out", "eval", "--projections", "none", "--quiet"]) == 0
    assert json.loads((elsewhere / "eval" / "run" / "metrics.json").read_text())["samples"] == 8
    # every file of the run and of the evaluation gets the same permissions (the user's umask)
    folders = (work / "run", elsewhere / "eval" / "run")
    modes = {p.stat().st_mode & 0o777 for folder in folders for p in folder.iterdir()}
    assert len(modes) == 1, modes


def test_reuse_keeps_an_up_to_date_evaluation_only(evaluated, tmp_path):
    """``reuse`` (what ``hseval demo`` uses to continue) keeps an evaluation made from the same run
    on the same images (by content, wherever they lie) with the same settings, and evaluates again
    when any of them changed."""
    from hseval.evaluation.runs import evaluate_runs

    run = Path(json.loads((evaluated / "plain" / "metrics.json").read_text())["run_path"])
    data_root = json.loads((evaluated / "plain" / "metrics.json").read_text())["training"]["data"]["root"]
    out = tmp_path / "eval"

    def evaluate(**options) -> list[str]:
        log: list[str] = []
        evaluate_runs([str(run)], out, data_root=data_root, projections=[], progress=False, log=log.append,
                      **options)
        return log

    evaluate(max_points=50)
    assert any("up to date" in line for line in evaluate(max_points=50, reuse=True))
    assert not any("up to date" in line for line in evaluate(max_points=60, reuse=True))  # another setting
    assert not any("up to date" in line for line in evaluate(max_points=60))  # reuse is asked for, never assumed
    (out / "plain" / "per_node.csv").write_text("damaged")
    assert not any("up to date" in line for line in evaluate(max_points=60, reuse=True))  # a damaged one is redone
    assert load_evaluation(out).runs[0].metrics["top1"] > 0
    data_root = str(write_fashion_like(tmp_path / "data"))  # the same images under another root: the same data
    assert any("up to date" in line for line in evaluate(max_points=60, reuse=True))
    write_fashion_like(Path(data_root), seed=1)  # other images under the same root
    assert not any("up to date" in line for line in evaluate(max_points=60, reuse=True))
    assert any("up to date" in line for line in evaluate(max_points=60, reuse=True))


def test_workers_finish_runs_in_threads_with_the_same_files(evaluated, tmp_path):
    """Projections and writes of finished runs in worker threads (while the next run is embedded)
    give the same files as one run after the other; runs are reported in order."""
    from hseval.evaluation.runs import evaluate_runs
    from hseval.io import evaluation_format as eval_format

    metrics = json.loads((evaluated / "plain" / "metrics.json").read_text())
    runs = [str(Path(metrics["run_path"]).parent / name) for name in ("plain", "riemann", "multitask")]
    data_root = metrics["training"]["data"]["root"]
    logs = {}
    for workers in (1, 3):
        logs[workers] = []
        evaluate_runs(runs, tmp_path / str(workers), data_root=data_root, projections=["pca"], max_points=60,
                      progress=False, workers=workers, log=logs[workers].append)
    assert [line for line in logs[3] if line.startswith("[")] == [line for line in logs[1] if line.startswith("[")]
    assert [line.split("; ")[1].split("->")[0] for line in logs[3] if "top-1" in line] == \
        [line.split("; ")[1].split("->")[0] for line in logs[1] if "top-1" in line]  # the times may differ
    for name in ("plain", "riemann", "multitask"):
        for file in eval_format.FILES:
            one, three = (tmp_path / str(w) / name / file for w in (1, 3))
            if file == eval_format.METRICS:
                a, b = json.loads(one.read_text()), json.loads(three.read_text())
                a.pop("eval_seconds"), b.pop("eval_seconds")
                assert a == b
            else:
                assert one.read_bytes() == three.read_bytes(), (name, file)


def test_report_grows_with_seed_groups_not_runs(evaluated, tmp_path):
    """Three seeds of each run are drawn as one entry per group: the page is about as big as for
    one seed each (tables grow with runs; charts and their data do not)."""
    import json

    from hseval.core import fileio
    from hseval.reporting.report import write_report
    from tests.dashboard_helpers import copy_runs
    from tests.helpers import reseal

    one = copy_runs(evaluated, tmp_path / "one")
    three = copy_runs(evaluated, tmp_path / "three", copies=3)
    for folder in three.iterdir():
        if (folder / "metrics.json").is_file():
            metrics = json.loads((folder / "metrics.json").read_text())
            copy = folder.name.rsplit("-", 1)[-1]  # run, run-2, run-3 (a head's name may hold a dash)
            metrics["seed"] = int(copy) if copy.isdigit() else 1
            fileio.write_json(folder / "metrics.json", metrics)
            reseal(folder)
    write_report(one)
    write_report(three)
    small, big = (one / "report.html").stat().st_size, (three / "report.html").stat().st_size
    assert big < 1.1 * small, (small, big)
    page = (three / "report.html").read_text()
    assert f"{3 * len(EVALUATED_RUNS)} run(s) in {len(EVALUATED_RUNS)} seed groups" in page
    assert "Differences over seeds" in page and page.count("<option value=") == len(EVALUATED_RUNS)  # one per group


def _index_mutations(intact: bytes) -> list[Mutation]:
    """The real index.json edited as a user (or another tool) might: the issue's unknown key, a key
    missing, a value of the wrong type, an entry for a run that is gone, and the fuzzer's edits."""
    def edit(change):
        def apply(data: bytes) -> bytes:
            doc = json.loads(data)
            change(doc)
            return json.dumps(doc).encode()
        return apply

    gone = {"run": "gone", "path": "/nowhere/gone", "head": "plain", "dataset": "d", "leaf_top1": 0.5}
    named = {"an unknown key added": lambda d: d.update(notes="mine"),
             "an unknown key in an entry": lambda d: d["runs"][0].update(best=True),
             "'runs' removed": lambda d: d.pop("runs"),
             "an entry's 'run' removed": lambda d: d["runs"][1].pop("run"),
             "an entry's 'head' removed": lambda d: d["runs"][2].pop("head"),
             "'leaf_top1' a string": lambda d: d["runs"][0].update(leaf_top1="high"),
             "'seed' 10**400": lambda d: d["runs"][0].update(seed=10**400),
             "'runs' an object": lambda d: d.update(runs={"plain": {}}),
             "an entry for a run that is gone": lambda d: d["runs"].append(gone),
             "an entry removed": lambda d: d["runs"].pop(),
             "the entries in another order": lambda d: d["runs"].reverse()}
    return [*(Mutation("index.json", what, edit(change)) for what, change in named.items()),
            Mutation("index.json", "deleted", lambda d: None),
            *mutations_of("index.json", intact, np.random.default_rng(36), json_edits=8)]


def test_a_damaged_index_is_rebuilt_whole_from_the_evaluations(evaluated, fashion_like, tmp_path, capsys):
    """index.json only lists the folders: however it was edited or damaged, the next evaluation
    writes every entry from that evaluation's own metrics.json (it used to keep only the run and
    its path, head, dataset and top-1 None, for every earlier run when the file had an unknown key)."""
    runs = Path(json.loads((evaluated / "plain" / "metrics.json").read_text())["run_path"]).parent
    argv = ["evaluate", str(runs / "plain"), "--data-root", str(fashion_like), "--projections", "none", "--quiet"]
    intact = (evaluated / "index.json").read_bytes()
    expected = json.loads(intact)["runs"]
    assert [e["run"] for e in expected] == EVALUATED_RUNS and all(None not in e.values() for e in expected)
    for k, mutation in enumerate(_index_mutations(intact)):
        out = Path(shutil.copytree(evaluated, tmp_path / str(k)))
        changed = mutation.apply(intact)
        if changed is None:
            (out / "index.json").unlink()
        else:
            (out / "index.json").write_bytes(changed)
        capsys.readouterr()
        assert main([*argv, "--out", str(out)]) == 0, (mutation.id, capsys.readouterr().err)
        assert "index.json" not in capsys.readouterr().err, mutation.id
        assert json.loads((out / "index.json").read_text())["runs"] == expected, mutation.id
        shutil.rmtree(out)
    # an evaluation whose metrics.json is damaged: left out of the index, with a warning saying why
    out = Path(shutil.copytree(evaluated, tmp_path / "damaged"))
    with open(out / "riemann" / "metrics.json", "a") as fh:
        fh.write(" ")
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 0
    assert "left out of" in capsys.readouterr().err
    assert json.loads((out / "index.json").read_text())["runs"] == [e for e in expected if e["run"] != "riemann"]


def test_predictions_npz_says_which_samples_of_the_split_it_holds(evaluated, fashion_like, tmp_path):
    """``--subset N`` evaluates N samples drawn from the split: predictions.npz's ``indices`` say
    which, so that a row joins the user's own data and a metric can be recomputed from the dataset."""
    from hseval.data import load_dataset

    runs = Path(json.loads((evaluated / "plain" / "metrics.json").read_text())["run_path"]).parent
    out = tmp_path / "eval"
    assert main(["evaluate", str(runs / "plain"), "--subset", "50", "--data-root", str(fashion_like), "--projections",
                 "none", "--quiet", "--out", str(out)]) == 0
    labels = load_dataset("fashion-mnist", fashion_like, download=False).test.labels
    with np.load(out / "plain" / "predictions.npz", allow_pickle=False) as arrays:
        indices, targets, top1 = arrays["indices"], arrays["targets"], arrays["topk"][:, 0]
    assert len(indices) == 50 < len(labels) and (np.diff(indices) > 0).all() and indices.max() < len(labels)
    assert (targets == labels[indices]).all()
    metrics = json.loads((out / "plain" / "metrics.json").read_text())
    assert metrics["top1"] == pytest.approx(float((top1 == labels[indices]).mean()), abs=1e-12)
    with np.load(evaluated / "plain" / "predictions.npz", allow_pickle=False) as whole:  # the whole split: 0..N-1
        assert (whole["indices"] == np.arange(len(labels))).all()
        assert (whole["topk"][indices, 0] == top1).all()  # the same samples, row for row
    prediction_file = tmp_path / "p.npz"  # a prediction file: its rows
    np.savez(prediction_file, targets=np.arange(30) % 10, logits=np.random.default_rng(0).normal(size=(30, 10)))
    tree = tmp_path / "tree.json"
    write_hierarchy(fashion_tree(), tree)
    assert main(["evaluate", "--predictions", str(prediction_file), "--hierarchy", str(tree), "--projections", "none",
                 "--out", str(out)]) == 0
    with np.load(out / "p" / "predictions.npz", allow_pickle=False) as arrays:
        assert (arrays["indices"] == np.arange(30)).all()
