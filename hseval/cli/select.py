"""``hseval select VAL_EVAL --metric METRIC --out selection.json``: choose each method's setting on
a validation evaluation (:mod:`hseval.reporting.selection`), for ``hseval report TEST_EVAL
--selection selection.json``."""

from __future__ import annotations

import argparse


def cmd_select(args: argparse.Namespace) -> int:
    from hseval.io.output import OutputFile  # pandas and scipy: for this command only
    from hseval.io.results import load_evaluation  # pandas: for this command only
    from hseval.io.selection_format import write_selection  # pydantic records: for this command only
    from hseval.reporting.selection import select, selection_table  # scipy: for this command only

    target = OutputFile(args.out, reads=[args.dir])  # a bad --out: refused before any work
    evaluation = load_evaluation(args.dir)
    chosen = select(evaluation, args.metric, per=args.per)
    with target as path:
        write_selection(path, chosen)
    print(selection_table(chosen).drop(columns=["candidates"]).to_string(index=False))
    print(f"chose {len(chosen.choices)} setting(s) by {chosen.metric} on the {chosen.split} split -> {args.out}; "
          f"next: hseval report TEST_EVAL --selection {args.out}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    select = commands.add_parser("select", help="choose each method's setting on a validation evaluation")
    select.add_argument("dir", metavar="VAL_EVAL", help="a folder written by 'hseval evaluate RUNS --split val'")
    select.add_argument("--metric", required=True, help="the metric to choose by: top1, level1_from_leaf, "
                        "level1_own_scores, mistake_severity, avg_hdist@1, hierarchical_f1, cross_entropy, ece, or a "
                        "decision metric METRIC@RULE such as hf1@optimal:hf1 (lower is better for severity, distances, "
                        "cross-entropy and ECE)")
    select.add_argument("--per", default="head", choices=("head", "all"), help="one setting per head (default), or "
                        "one over all runs")
    select.add_argument("--out", required=True, help="the selection file to write (JSON)")
    select.set_defaults(func=cmd_select)
