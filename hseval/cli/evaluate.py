"""``hseval evaluate`` and ``hseval report``."""

from __future__ import annotations

import argparse

from hseval.cli import bounded, positive_int, refuse_unused
from hseval.cli.predict import (
    MODEL_HELP,
    WEIGHTS_HELP,
    add_data_arguments,
    add_run_arguments,
    dataset_options,
    read_classes,
)
from hseval.core.arguments import Threads
from hseval.core.errors import ConfigError
from hseval.io.records import Positive as Recorded  # --max-points and --subset: in the marker's inputs

RUN_OPTIONS = ("data_root", "split", "subset", "device", "batch_size", "workers", "quiet")
"""The options of evaluating run folders: the data, device and threads of their forward pass."""
PREDICTION_OPTIONS = ("hierarchy", "classes", "name", "dataset", "head", "scores", "split")
"""The options of evaluating a prediction file: what the file does not say itself (its split among them)."""
MODEL_OPTIONS = ("data_root", "split", "device", "batch_size", "quiet", "hierarchy", "classes", "name", "dataset",
                 "weights", "recipe", "predictions_dir", "loader_workers", "amp", "wordnet", "tree", "year")
"""The options of evaluating pretrained models (``--model``): the data and its loader's options
(:data:`hseval.cli.data.CLI_OPTIONS`), the models' files, how they run, their names."""
MODES = {"run folders": RUN_OPTIONS, "--predictions": PREDICTION_OPTIONS, "--model": MODEL_OPTIONS}
"""Each way of evaluating and the options it takes (beside those of every mode)."""


def _refuse_other_modes(args: argparse.Namespace, mode: str, why: str) -> None:
    """Refuse, in one line, an option given that ``mode`` does not take, naming the modes that do."""
    for dest in dict.fromkeys(d for options in MODES.values() for d in options):
        if dest not in MODES[mode]:
            owners = " or ".join(m for m, options in MODES.items() if dest in options)
            refuse_unused(args, (dest,), why=f"applies only to {owners}; {why}")


def _methods(text: str) -> list[str]:
    return [m.strip() for m in text.split(",") if m.strip()] if text.strip().lower() != "none" else []


def _rules(text: str | None) -> dict[str, tuple[str, ...]]:
    """``--rules``, each checked before any work ({} when not given: the default rules)."""
    if text is None:
        return {}
    from hseval.metrics.decisions import rules  # numpy only

    if text.strip().lower() == "none":
        return {"rules": ()}
    names = [r.strip() for r in text.split(",") if r.strip()]
    if not names:
        raise ConfigError("--rules: give at least one decoding rule, e.g. --rules leaf,threshold:0.5,optimal:hf1")
    try:
        return {"rules": tuple(r.name for r in rules(names))}
    except ConfigError as exc:
        raise ConfigError(f"--rules: {exc}") from None


def _evaluate_models(args: argparse.Namespace) -> int:
    """``--model``: pretrained classifiers predicted on a dataset, then evaluated (:mod:`hseval.evaluation.zoo`)."""
    from hseval.evaluation.zoo import PREDICTIONS_DIR, evaluate_models  # torch and the models: for --model only

    if args.runs or args.predictions is not None:
        raise ConfigError("give run folders, --predictions or --model, one of them; evaluate each in its own command "
                          "with the same --out")
    _refuse_other_modes(args, "--model", "a pretrained model is evaluated on the whole split, under its own name")
    if args.dataset is None:
        raise ConfigError("--model needs --dataset NAME (hseval data list): the data the models are run on")
    entries = evaluate_models(args.model, args.weights, args.out, dataset=args.dataset, data_root=args.data_root,
                              data_options=dataset_options(args), recipes=args.recipe, names=args.name,
                              classes=read_classes(args.classes), split=args.split or "test",
                              predictions_dir=args.predictions_dir or PREDICTIONS_DIR, device=args.device or "auto",
                              batch_size=args.batch_size or 64, amp=args.amp is not False, progress=not args.quiet,
                              loader_workers=args.loader_workers, projections=_methods(args.projections),
                              max_points=args.max_points, **_rules(args.rules))
    print(f"evaluated {len(entries)} model(s) into {args.out}; next: hseval report {args.out}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    if args.model:
        return _evaluate_models(args)
    if args.name:
        if len(args.name) > 1:
            raise ConfigError("--name is given once, for the one prediction file")
        args.name = args.name[0]
    else:
        args.name = None
    if args.predictions is not None:
        from hseval.evaluation.predictions import evaluate_predictions  # numpy and scikit-learn: no torch
        if args.runs:
            raise ConfigError(f"give run folders or --predictions, not both (got {args.runs[0]!r} and --predictions); "
                              "evaluate them in two commands with the same --out")
        _refuse_other_modes(args, "--predictions", "a prediction file holds the model's outputs already")
        if args.hierarchy is None:
            raise ConfigError("--predictions needs --hierarchy TREE: the class tree the predictions are scored "
                              "against")
        entry = evaluate_predictions(args.predictions, args.out, hierarchy=args.hierarchy, classes=args.classes,
                                     name=args.name, dataset=args.dataset, head=args.head, scores=args.scores,
                                     projections=_methods(args.projections), max_points=args.max_points,
                                     split=args.split or "test", **_rules(args.rules))
        print(f"evaluated {args.predictions} as {entry['run']!r} into {args.out}; next: hseval report {args.out}")
        return 0
    if not args.runs:
        raise ConfigError("give run folders to evaluate, or --predictions FILE --hierarchy TREE for a model trained "
                          "elsewhere")
    _refuse_other_modes(args, "run folders", "a run carries its own tree and names")
    from hseval.evaluation.runs import evaluate_runs  # torch and the datasets: for run folders only
    given = {option: getattr(args, option) for option in RUN_OPTIONS if option != "quiet"}
    entries = evaluate_runs(args.runs, args.out, projections=_methods(args.projections), max_points=args.max_points,
                            progress=not args.quiet, **{k: v for k, v in given.items() if v is not None},
                            **_rules(args.rules))
    print(f"evaluated {len(entries)} run(s) into {args.out}; next: hseval report {args.out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from hseval.reporting.report import write_report  # plotly: for this command only

    metrics = None if args.leaderboard is None else [m.strip() for m in args.leaderboard.split(",") if m.strip()]
    for path in write_report(args.dir, out=args.out, baseline=args.baseline, selection=args.selection,
                             leaderboard=metrics):
        print(f"wrote {path}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser("evaluate", help="metrics, geometry and projections of trained runs")
    evaluate.add_argument("runs", nargs="*", metavar="RUN", help="run folders, folders of runs, or globs")
    foreign = evaluate.add_argument_group("a model trained elsewhere (instead of RUN)")
    foreign.add_argument("--predictions", metavar="FILE", help=".npz, .safetensors or .csv of its outputs: targets "
                         "and logits or probs, optionally level_scores_<k>, embeddings, class_weights or node_weights "
                         "(see README)")
    foreign.add_argument("--hierarchy", metavar="TREE", help="the class tree (any format 'hseval hierarchy' reads)")
    foreign.add_argument("--classes", metavar="NAMES", help="class names, one per line, in the model's class order "
                         "(default: the tree's leaf order)")
    foreign.add_argument("--name", action="append", default=[], help="the evaluation's folder name in --out "
                         "(default: the file's stem; with --model: one per model, default the model's name)")
    foreign.add_argument("--dataset", help="dataset label in tables, to sit beside runs on the same data "
                         "(default: external)")
    foreign.add_argument("--head", help="model label in tables' head column (default: external)")
    foreign.add_argument("--scores", choices=("logits", "probs"), help="what a CSV's score_<i> columns hold (a CSV's "
                         "logit_<i> or prob_<i> columns, and a .npz's 'logits' or 'probs', say it themselves)")
    models = evaluate.add_argument_group("pretrained models (instead of RUN): predicted on --dataset, then evaluated")
    models.add_argument("--model", action="append", default=[], help=f"{MODEL_HELP}; repeat for a zoo, each "
                        "followed by its --weights")
    models.add_argument("--weights", action="append", default=[], metavar="FILE", help=WEIGHTS_HELP)
    models.add_argument("--recipe", action="append", default=[], help="torchvision: each model's weights enum member "
                        "whose preprocessing runs (one per --model, or none; 'default': the model's default)")
    models.add_argument("--predictions-dir", metavar="DIR", help="where the prediction files are kept (default: "
                        "~/.cache/hseval/predictions); a model predicted before on the same images is read again")
    add_data_arguments(models, hierarchy=False)
    add_run_arguments(models, batch=False)
    evaluate.add_argument("--out", required=True, help="evaluation folder (one sub-folder per run)")
    evaluate.add_argument("--projections", default="pca,tsne", help="comma-separated from pca,tsne,umap, or none "
                                                                   "(default: pca,tsne)")
    evaluate.add_argument("--max-points", type=bounded(Recorded), default=5000,
                          help="samples kept for projections (default 5000)")
    evaluate.add_argument("--rules", metavar="RULE,...", help="the decoding rules of decisions.csv, comma-separated: "
                          "leaf, top-down, crm, plurality, threshold:T, info-threshold:T (T in [0, 1]), "
                          "optimal:METRIC (correct, exact, depth_precision, depth_recall, info_precision, info_recall, "
                          "hf1, hf:BETA, tree_distance, wu_palmer); default: the first four, threshold:0.5, "
                          "info-threshold:0.5 and optimal: of every metric; none: no decisions and no operating "
                          "curves")
    runs = evaluate.add_argument_group("run folders and --model (their forward pass)")
    runs.add_argument("--data-root", help="dataset folder (default: where the run was trained)")
    evaluate.add_argument("--split", help="train, val or test (default: test); val: the validation split a run held "
                          "out of the training split (data.val_fraction), or the dataset's own; --predictions: "
                          "the split the file holds. An evaluation folder holds one split: evaluate each into "
                          "its own --out")
    runs.add_argument("--subset", type=bounded(Recorded), metavar="N", help="evaluate a class-stratified random subset "
                      "of N samples of the split (default: all of it)")
    runs.add_argument("--device", help="auto, cpu, cuda or cuda:N (default: auto)")
    runs.add_argument("--batch-size", type=positive_int, help="images per batch of the forward pass (default: 512; "
                      "--model: 64)")
    runs.add_argument("--workers", type=bounded(Threads), help="threads for the projections of finished runs while "
                      "the next run is embedded (default: a quarter of the cores, at least 1)")
    runs.add_argument("--quiet", action="store_true", help="no progress bars")
    evaluate.set_defaults(func=cmd_evaluate, memory_advice="with run folders, use a smaller --batch-size")
    report = commands.add_parser("report", help="tables and an offline HTML report of an evaluation folder")
    report.add_argument("dir", help="a folder written by 'hseval evaluate'")
    report.add_argument("--out", help="report.html path (default: DIR/report.html)")
    report.add_argument("--baseline", metavar="RUN", help="the run the others are compared with (paired bootstrap "
                                                          "interval, McNemar p; default: the first plain head)")
    report.add_argument("--selection", metavar="FILE", help="report only the runs 'hseval select' chose on a "
                        "validation evaluation (DIR: the test evaluation), with how they were chosen")
    report.add_argument("--leaderboard", metavar="METRIC,...", help="the leaderboard's metrics (default: "
                        "top1,levels,mistake_severity,hierarchical_f1; 'levels': every super-class level from the "
                        "leaf; any metric of 'hseval select --metric')")
    report.set_defaults(func=cmd_report)
