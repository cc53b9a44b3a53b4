"""``hseval hierarchy build | random`` and ``hseval data list | info``: the datasets' trees and facts.

``hierarchy build`` writes a dataset's tree in the paper's pairs format (plus the ``.names.tsv``
sidecar); without ``--data-root`` it uses the official class lists shipped with hseval, with it
the dataset's own files (validated, no image decoded). ``hierarchy random`` writes the shuffled
tree of the paper's ablation (Table 5).
"""

from __future__ import annotations

import argparse
import json
import textwrap

from hseval.cli import non_negative_int
from hseval.cli.hierarchy import tree_output
from hseval.core.errors import ConfigError, DataError, HierarchyError
from hseval.tree import FORMATS, read_hierarchy, write_hierarchy
from hseval.tree.builders import BUILDERS, random_hierarchy
from hseval.tree.formats.pairs import names_sidecar

# dataset options that the command line exposes: each a --flag taking a path (a file or a folder), the tree's rule
# or iNaturalist's year
CLI_OPTIONS = {"hierarchy": "FILE", "wordnet": "DIR", "tree": "RULE", "year": "YEAR"}
CLI_HELP = {"hierarchy": "the tree of an image-folder dataset (checked against its class folders)",
            "wordnet": "WordNet 3.0 folder (the WordNet trees: tiny-imagenet, imagenet; default: look it up)",
            "tree": "the rule that builds the dataset's tree, e.g. mbm: Making Better Mistakes' (imagenet, "
                    "tiered-imagenet-h: paper or mbm; inaturalist: taxonomy or mbm; default: the dataset's own)",
            "year": "the iNaturalist competition: 2018, 2019, 2021 or 2021-mini (default: the one whose files "
                    "are in the folder)"}
"""Each option's help, the same in every command that takes it."""


def _options(args: argparse.Namespace, accepted: dict) -> dict:
    """The dataset options given on the command line, each checked against what the dataset takes."""
    given = {name: value for name in CLI_OPTIONS if (value := getattr(args, name, None)) is not None}
    for name in given:
        if name not in accepted:
            takes = ", ".join(f"--{a}" for a in accepted if a in CLI_OPTIONS) or "none"
            raise ConfigError(f"--{name} does not apply to {args.dataset} (its options: {takes})")
    return given


def cmd_build(args: argparse.Namespace) -> int:
    output = tree_output(args.out, "--out", trees=(args.hierarchy,))
    if args.data_root is None:
        tree = BUILDERS.get(args.dataset)(**_options(args, BUILDERS.options(args.dataset)))
    else:
        from hseval.data import DATASETS, load_dataset  # torch: only with --data-root

        options = _options(args, DATASETS.options(args.dataset))
        tree = load_dataset(args.dataset, args.data_root, **options).hierarchy
    with output as path:
        write_hierarchy(tree, path, format="pairs")
    print(f"wrote {args.out} and {names_sidecar(args.out)} ({tree.num_leaves} classes, {tree.num_nodes} nodes, "
          f"depth {tree.max_depth})")
    return 0


def cmd_random(args: argparse.Namespace) -> int:
    output = tree_output(args.out, "--out", trees=(args.file,))
    tree = random_hierarchy(read_hierarchy(args.file, format=args.format), seed=args.seed)
    with output as path:
        write_hierarchy(tree, path, format=args.to)
    print(f"wrote {args.out} (classes dealt at random to the leaves of {args.file}, seed {args.seed})")
    return 0


def _count(value: int | None) -> str:
    return "yours" if value is None else f"{value:,}"


def cmd_list(args: argparse.Namespace) -> int:
    from hseval.data import DATASETS, dataset_card  # torch: kept out of the other commands

    rows = [("dataset", "train", "test", "classes", "tree", "options")]
    for name in DATASETS.names():
        card = dataset_card(name)
        options = " ".join(f"--{option} {CLI_OPTIONS[option]}" for option in DATASETS.options(name)
                           if option in CLI_OPTIONS)
        rows.append((name, _count(card.train), _count(card.test), _count(card.classes), card.tree, options))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.rjust(w) if 0 < i < 4 else cell.ljust(w)
                        for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    print("train, test: images of the official splits; hseval data info DATASET: its classes and tree, and "
          "whether its files are here")
    return 0


def _known(name: str, options: dict) -> dict:
    """What hseval knows of dataset ``name`` without its files: its card, and its tree from the
    class lists shipped with hseval (where it has one)."""
    from hseval.data import dataset_card  # torch: for this command only

    card = dataset_card(name)
    out = {"name": name, "train_size": card.train, "test_size": card.test, "classes": card.classes,
           "tree": card.tree}
    if name in BUILDERS:
        try:
            tree = BUILDERS.get(name)(**{k: v for k, v in options.items() if k in BUILDERS.options(name)})
        except (DataError, HierarchyError) as exc:  # the WordNet trees need WordNet; an option's value is checked
            out["tree"] = f"{card.tree}; not built here: {exc}"
        else:
            out.update(class_names=list(tree.leaf_names), hierarchy=tree.stats())
    return out


def _print_summary(summary: dict) -> None:
    words = summary.get("class_words", {})  # WordNet ids are shown with their first word
    names = summary.get("class_names")
    if names:
        labels = [f"{name} ({words[name].split(',')[0]})" if name in words else name for name in names]
        print(f"classes ({len(names)}):")
        print(textwrap.fill(", ".join(labels), width=100, initial_indent="  ", subsequent_indent="  ",
                            break_on_hyphens=False))
    stats = summary.get("hierarchy")
    if stats:
        print(f"hierarchy: {stats['num_leaves']} classes, {stats['num_nodes']} nodes, depth {stats['max_depth']}, "
              f"nodes per depth {stats['nodes_per_depth']}")


def cmd_info(args: argparse.Namespace) -> int:
    from hseval.data import DATASETS, load_dataset  # torch: kept out of the other commands

    options = _options(args, DATASETS.options(args.dataset))
    known = _known(args.dataset, options)
    missing = None  # no copy here: what hseval knows without the files, and where it looked
    try:
        data = load_dataset(args.dataset, args.data_root, **options)
    except (DataError, HierarchyError) as exc:  # a bad option (ConfigError) is the user's error, not a missing copy
        if args.data_root is not None:  # the copy asked for does not read: one line
            raise
        missing = exc
    summary = {**known, "files": f"not read ({missing})"} if missing else \
        {**data.describe(content=False), "tree": known["tree"], "hierarchy": data.hierarchy.stats()}
    if args.json:
        print(json.dumps(summary))
        return 0
    if missing:
        images = "your train/ and test/ folders" if known["train_size"] is None else \
            f"{known['train_size']:,} train, {known['test_size']:,} test (the official splits)"
        print(f"dataset: {args.dataset}\nimages: {images}\ntree: {known['tree']}")
        _print_summary(summary)
        print(f"files: not read here: {missing}")
        return 0
    print(f"dataset: {data.name}\nroot: {data.root}")
    print(f"images: {len(data.train):,} train, {len(data.test):,} test; {data.channels}×{data.image_size}×"
          f"{data.image_size} after preprocessing")
    if "no_training_images" in data.info:  # a copy of the validation images only (ImageNet's)
        print(f"training images: none: {data.info['no_training_images']}; evaluation only, training refuses it")
    print(f"normalisation: mean {list(data.mean)}, std {list(data.std)}")
    if "augmentation" in data.info:
        print(f"augmentation: {data.info['augmentation']}")
    print(f"tree: {known['tree']}")
    _print_summary({**summary, "class_words": data.info.get("class_words", {})})
    return 0


def register(commands: argparse._SubParsersAction, hierarchy_actions: argparse._SubParsersAction) -> None:
    """Add ``build`` and ``random`` to the ``hierarchy`` actions (as returned by
    :func:`hseval.cli.hierarchy.register`) and the ``data`` group to ``commands``."""
    build = hierarchy_actions.add_parser("build", help="write a dataset's tree (paper's pairs format + names)")
    build.add_argument("dataset", metavar="DATASET", help="a dataset name (hseval data list)")
    build.add_argument("--data-root", metavar="DIR",
                       help="read the classes from the dataset's files (default: the official lists)")
    build.add_argument("--out", required=True, metavar="FILE", help="pairs file to write (and FILE.names.tsv)")
    build.add_argument("--hierarchy", metavar="FILE", help="the tree of an image-folder dataset (checked against "
                                                          "its class folders)")
    build.add_argument("--wordnet", metavar="DIR", help="WordNet 3.0 folder (tiny-imagenet; default: look it up)")
    build.add_argument("--tree", metavar="RULE", help=CLI_HELP["tree"])
    build.add_argument("--year", metavar="YEAR", help=CLI_HELP["year"])
    build.set_defaults(func=cmd_build)
    shuffle = hierarchy_actions.add_parser("random", help="the same tree with the classes dealt at random "
                                                          "(the paper's ablation)")
    shuffle.add_argument("file")
    shuffle.add_argument("--seed", required=True, type=non_negative_int, help="random seed (reproducible)")
    shuffle.add_argument("--out", required=True, metavar="FILE", help="file to write")
    shuffle.add_argument("--format", choices=FORMATS.names(), help="input format (default: detect)")
    shuffle.add_argument("--to", choices=FORMATS.names(), help="output format (default: nbdt for .json, else pairs)")
    shuffle.set_defaults(func=cmd_random)
    data = commands.add_parser("data", help="inspect the datasets")
    actions = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="print the datasets: their sizes, classes, tree and options")
    listing.set_defaults(func=cmd_list)
    info = actions.add_parser("info", help="print a dataset's sizes, classes and tree, and check its files (without "
                                           "--data-root and no copy found: what hseval knows, and where it looked)")
    info.add_argument("dataset", metavar="DATASET", help="a dataset name (hseval data list)")
    info.add_argument("--data-root", metavar="DIR", help="dataset folder (default: $HSEVAL_DATA, then the usual "
                                                         "places)")
    info.add_argument("--hierarchy", metavar="FILE", help="the tree of an image-folder dataset")
    info.add_argument("--wordnet", metavar="DIR", help="WordNet 3.0 folder (tiny-imagenet; default: look it up)")
    info.add_argument("--tree", metavar="RULE", help=CLI_HELP["tree"])
    info.add_argument("--year", metavar="YEAR", help=CLI_HELP["year"])
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(func=cmd_info)
