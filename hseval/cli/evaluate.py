"""``hseval evaluate`` and ``hseval report``."""

from __future__ import annotations

import argparse

from hseval.cli import positive_int, refuse_unused
from hseval.core.errors import ConfigError

RUN_OPTIONS = ("data_root", "split", "subset", "device", "batch_size", "workers", "quiet")
"""The options of evaluating run folders alone: the data, device and threads of their forward pass."""
PREDICTION_OPTIONS = ("hierarchy", "classes", "name", "dataset", "head", "scores")
"""The options of evaluating a prediction file alone: what the file does not say itself."""


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


def cmd_evaluate(args: argparse.Namespace) -> int:
    if args.predictions is not None:
        from hseval.evaluation.predictions import evaluate_predictions  # numpy and scikit-learn: no torch
        if args.runs:
            raise ConfigError(f"give run folders or --predictions, not both (got {args.runs[0]!r} and --predictions); "
                              "evaluate them in two commands with the same --out")
        refuse_unused(args, RUN_OPTIONS, why="applies only to run folders; a prediction file holds the model's "
                                             "outputs on its test set already")
        if args.hierarchy is None:
            raise ConfigError("--predictions needs --hierarchy TREE: the class tree the predictions are scored "
                              "against")
        entry = evaluate_predictions(args.predictions, args.out, hierarchy=args.hierarchy, classes=args.classes,
                                     name=args.name, dataset=args.dataset, head=args.head, scores=args.scores,
                                     projections=_methods(args.projections), max_points=args.max_points,
                                     **_rules(args.rules))
        print(f"evaluated {args.predictions} as {entry['run']!r} into {args.out}; next: hseval report {args.out}")
        return 0
    if not args.runs:
        raise ConfigError("give run folders to evaluate, or --predictions FILE --hierarchy TREE for a model trained "
                          "elsewhere")
    refuse_unused(args, PREDICTION_OPTIONS, why="applies only with --predictions; a run carries its own tree and names")
    from hseval.evaluation.runs import evaluate_runs  # torch and the datasets: for run folders only
    given = {option: getattr(args, option) for option in RUN_OPTIONS if option != "quiet"}
    entries = evaluate_runs(args.runs, args.out, projections=_methods(args.projections), max_points=args.max_points,
                            progress=not args.quiet, **{k: v for k, v in given.items() if v is not None},
                            **_rules(args.rules))
    print(f"evaluated {len(entries)} run(s) into {args.out}; next: hseval report {args.out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from hseval.reporting.report import write_report  # plotly: for this command only

    for path in write_report(args.dir, out=args.out, baseline=args.baseline):
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
    foreign.add_argument("--name", help="the evaluation's folder name in --out (default: the file's stem)")
    foreign.add_argument("--dataset", help="dataset label in tables, to sit beside runs on the same data "
                         "(default: external)")
    foreign.add_argument("--head", help="model label in tables' head column (default: external)")
    foreign.add_argument("--scores", choices=("logits", "probs"), help="what a CSV's score_<i> columns hold (a CSV's "
                         "logit_<i> or prob_<i> columns, and a .npz's 'logits' or 'probs', say it themselves)")
    evaluate.add_argument("--out", required=True, help="evaluation folder (one sub-folder per run)")
    evaluate.add_argument("--projections", default="pca,tsne", help="comma-separated from pca,tsne,umap, or none "
                                                                   "(default: pca,tsne)")
    evaluate.add_argument("--max-points", type=int, default=5000, help="samples kept for projections (default 5000)")
    evaluate.add_argument("--rules", metavar="RULE,...", help="the decoding rules of decisions.csv, comma-separated: "
                          "leaf, top-down, crm, plurality, threshold:T, info-threshold:T (T in [0, 1]), "
                          "optimal:METRIC (correct, exact, depth_precision, depth_recall, info_precision, info_recall, "
                          "hf1, hf:BETA, tree_distance, wu_palmer); default: the first four, threshold:0.5, "
                          "info-threshold:0.5 and optimal: of every metric; none: no decisions and no operating "
                          "curves")
    runs = evaluate.add_argument_group("run folders only (their forward pass)")
    runs.add_argument("--data-root", help="dataset folder (default: where the run was trained)")
    runs.add_argument("--split", help="train, val or test (default: test); val: the validation split a run held "
                      "out of the training split (data.val_fraction), or the dataset's own")
    runs.add_argument("--subset", type=positive_int, metavar="N", help="evaluate a class-stratified random subset "
                      "of N samples of the split (default: all of it)")
    runs.add_argument("--device", help="auto, cpu, cuda or cuda:N (default: auto)")
    runs.add_argument("--batch-size", type=positive_int, help="images per batch of the forward pass (default: 512)")
    runs.add_argument("--workers", type=int, help="threads for the projections of finished runs while the next "
                      "run is embedded (default: a quarter of the cores, at least 1)")
    runs.add_argument("--quiet", action="store_true", help="no progress bars")
    evaluate.set_defaults(func=cmd_evaluate, memory_advice="with run folders, use a smaller --batch-size")
    report = commands.add_parser("report", help="tables and an offline HTML report of an evaluation folder")
    report.add_argument("dir", help="a folder written by 'hseval evaluate'")
    report.add_argument("--out", help="report.html path (default: DIR/report.html)")
    report.add_argument("--baseline", metavar="RUN", help="the run the others are compared with (paired bootstrap "
                                                          "interval, McNemar p; default: the first plain head)")
    report.set_defaults(func=cmd_report)
