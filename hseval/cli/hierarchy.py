"""``hseval hierarchy stats | convert | show | induce``: inspect and convert hierarchy files, and
induce a tree from a trained head's class vectors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hseval.cli import positive_int
from hseval.core.errors import ConfigError, RunFormatError
from hseval.io.output import OutputFile
from hseval.tree import FORMATS, Hierarchy, read_hierarchy, write_hierarchy
from hseval.tree.formats import companions


def cmd_stats(args: argparse.Namespace) -> int:
    stats = read_hierarchy(args.file, format=args.format).stats()
    if args.json:
        print(json.dumps(stats))
    else:
        for key, value in stats.items():
            print(f"{key}: {value}")
    return 0


def tree_output(path: str, option: str, *inputs: str | None, trees: tuple[str | None, ...] = ()) -> OutputFile:
    """The output of a command that writes the hierarchy file ``path``, planned with its companions;
    ``inputs`` and the hierarchy files ``trees`` (with theirs) are what the command reads."""
    given = [*(p for p in inputs if p), *(f for t in trees if t for f in (t, *companions(t)))]
    return OutputFile(path, option=option, companions=companions(path), reads=given)


def cmd_convert(args: argparse.Namespace) -> int:
    output = tree_output(args.output, "OUTPUT", trees=(args.input,))
    # merged as it is read, before its depth is checked: a tree too deep in chains is converted too
    hierarchy = read_hierarchy(args.input, format=args.format, merge_chains=args.merge_chains)
    with output as path:
        write_hierarchy(hierarchy, path, format=args.to)
    print(f"wrote {args.output} ({args.to}, {hierarchy.num_leaves} classes, {hierarchy.num_nodes} nodes)")
    return 0


def _clusters(text: str) -> list[int]:
    try:
        return [positive_int(k) for k in text.split(",") if k.strip()]
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"numbers of groups (e.g. 3,6): {exc}") from None


_clusters.bounds = positive_int.bounds  # type: ignore[attr-defined]  # each number's


def _class_vectors_of(source: str | Path) -> tuple[np.ndarray, Hierarchy]:
    """The class vectors and the tree of a run folder (``hseval train``) or of one evaluated run
    (``hseval evaluate``'s ``DIR/<run>``)."""
    from hseval.io.evaluation_format import METRICS  # pandas: only for this command, not 'hseval --help'
    from hseval.io.results import read_run  # pandas: only for this command
    from hseval.io.run_format import is_run_dir, load_run  # torch: only for this command
    from hseval.metrics import geometry  # scipy, sklearn: only for this command

    folder = Path(source)
    if is_run_dir(folder):
        run = load_run(folder)
        vectors = geometry.node_vectors(run.model.head)
        if vectors is None:
            raise ConfigError(f"{folder}: head {run.head_name!r} has no class vectors to cluster")
        return vectors[0][: run.hierarchy.num_leaves], run.hierarchy
    if (folder / METRICS).is_file():
        evaluated = read_run(folder)
        vectors = evaluated.embeddings()["node_vectors"]
        if not vectors.size:
            raise ConfigError(f"{folder}: this evaluation holds no class vectors (head {evaluated.head!r})")
        return vectors[: evaluated.hierarchy.num_leaves], evaluated.hierarchy
    raise RunFormatError(f"{folder}: neither a run (no run.json) nor an evaluated run (no metrics.json); give "
                         "'hseval train's output folder or one run folder of 'hseval evaluate's output")


def cmd_induce(args: argparse.Namespace) -> int:
    from hseval.tree.induce import default_clusters, induce_tree  # scipy.cluster (0.3 s): only for induce

    output = tree_output(args.out, "--out", args.source)
    vectors, given = _class_vectors_of(args.source)
    clusters = args.clusters or default_clusters(given)
    tree = induce_tree(vectors, given.leaf_names, clusters=clusters)
    with output as path:
        write_hierarchy(tree, path, format=args.to)
    print(f"wrote {args.out} ({tree.num_leaves} classes, {tree.num_nodes - tree.num_leaves} super-classes in "
          f"{tree.max_depth - 1} level(s), from {len(clusters)} cut(s): {','.join(map(str, clusters))} groups)")
    return 0


def render_tree(hierarchy, max_depth: int | None = None) -> str:
    """The tree as text, one node per line (a node's display label in brackets after its name),
    super-classes with their number of classes.

    Iterative (a tree may be MAX_DEPTH levels deep) and linear in the size of the output."""
    labels, depth, children = hierarchy.labels, hierarchy.depth.tolist(), hierarchy.children
    names = [f"{name} [{labels[name]}]" if name in labels else name  # an NBDT tree: its ids with their words
             for name in (*hierarchy.node_names, hierarchy.root_name)]
    classes = _classes_below(hierarchy)
    lines = [names[-1]]
    stack = [(child, "", k == len(children[-1]) - 1) for k, child in enumerate(children[-1])][::-1]
    while stack:
        node, prefix, last = stack.pop()
        label = names[node] if hierarchy.is_leaf(node) else f"{names[node]}  ({classes[node]} classes)"
        lines.append(f"{prefix}{'└── ' if last else '├── '}{label}")
        if max_depth is None or depth[node] < max_depth:
            inner = prefix + ("    " if last else "│   ")
            kids = children[node]
            stack.extend((kid, inner, k == len(kids) - 1) for k, kid in reversed(list(enumerate(kids))))
    return "\n".join(lines)


def _classes_below(hierarchy) -> list[int]:
    """Number of classes (leaves) below each node, deepest nodes first: O(|P|)."""
    counts = [1] * hierarchy.num_leaves + [0] * (hierarchy.num_nodes - hierarchy.num_leaves)
    parents, depth = hierarchy.parents.tolist(), hierarchy.depth.tolist()
    for node in sorted(range(hierarchy.num_nodes), key=depth.__getitem__, reverse=True):
        if parents[node] >= 0:
            counts[parents[node]] += counts[node]
    return counts


def cmd_show(args: argparse.Namespace) -> int:
    print(render_tree(read_hierarchy(args.file, format=args.format), args.max_depth))
    return 0


def register(commands: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """Add ``hierarchy`` and return its action sub-parser (other modules add actions to it)."""
    hierarchy = commands.add_parser("hierarchy", help="inspect, convert and build hierarchy files")
    actions = hierarchy.add_subparsers(dest="hierarchy_command", metavar="ACTION", required=True)
    stats = actions.add_parser("stats", help="print |L|, |P|, max depth and nodes per depth")
    stats.add_argument("file")
    stats.add_argument("--format", choices=FORMATS.names(), help="file format (default: detect)")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(func=cmd_stats)
    convert = actions.add_parser("convert", help="convert between hierarchy formats")
    convert.add_argument("input")
    convert.add_argument("output")
    convert.add_argument("--to", required=True, choices=FORMATS.names(), help="output format")
    convert.add_argument("--format", choices=FORMATS.names(), help="input format (default: detect)")
    convert.add_argument("--merge-chains", action="store_true",
                         help="merge every super-class that has a single child into that child")
    convert.set_defaults(func=cmd_convert)
    show = actions.add_parser("show", help="print the tree")
    show.add_argument("file")
    show.add_argument("--format", choices=FORMATS.names(), help="file format (default: detect)")
    show.add_argument("--max-depth", type=positive_int, help="stop at this depth")
    show.set_defaults(func=cmd_show)
    induce = actions.add_parser("induce", help="the tree recovered from a trained head's class vectors")
    induce.add_argument("source", help="a run folder (hseval train) or an evaluated run (hseval evaluate's DIR/<run>)")
    induce.add_argument("--out", required=True, help="the tree file to write")
    induce.add_argument("--to", choices=FORMATS.names(), default=None,
                        help="output format (default: nbdt for .json, else pairs with a .names.tsv)")
    induce.add_argument("--clusters", type=_clusters, default=None, metavar="K1,K2,...",
                        help="groups per level from the top (default: as many as the run's tree has per level)")
    induce.set_defaults(func=cmd_induce)
    return actions
