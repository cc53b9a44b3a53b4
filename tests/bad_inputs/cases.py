"""The catalogue of bad inputs: one :class:`Case` per row of ``README.md``.

Each case builds its bad input in its own folder and returns the command line that a user would
type; ``test_catalogue.py`` runs it through ``hseval.cli.main.main`` (or a subprocess) and checks the
exit code 2, the one pinned line on stderr and that nothing new appeared on disk.

``python -m tests.bad_inputs.cases`` rewrites the table in ``README.md`` from this list.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hseval.tree import write_hierarchy
from scripts.readme_blocks import read_block, write_block
from tests.bad_inputs.builders import (
    Good,
    copy_fashion,
    copy_run,
    edit_meta,
    image_folder,
    match_checksum,
    planted_pickle,
    resave_tensors,
    reseal,
    write,
    write_idx,
)

README = Path(__file__).with_name("README.md")


@dataclass(frozen=True)
class Case:
    id: str
    area: str
    input: str                                   # the bad input, for the README
    expect: str                                  # the message after "hseval: error: "; "…" elides a part
    build: Callable[[Path, Good], list[str]]     # (case folder, good inputs) -> argv
    subprocess: bool = False                     # run as `python -m hseval` (a server or a crash to catch)

    def pattern(self) -> re.Pattern:
        return re.compile(".*".join(re.escape(part) for part in self.expect.split("…")), re.DOTALL)


CASES: list[Case] = []


def case(id: str, area: str, input: str, expect: str, *, subprocess: bool = False):
    def register(build):
        CASES.append(Case(id, area, input, expect, build, subprocess))
        return build

    return register


# ====================================================================== hierarchy files
def convert(path: Path, tmp: Path, *extra: str) -> list[str]:
    """`hseval hierarchy convert FILE OUT --to pairs`: OUT (and OUT.names.tsv) must not appear."""
    return ["hierarchy", "convert", str(path), str(tmp / "out.txt"), "--to", "pairs", *extra]


def hierarchy(id: str, input: str, expect: str, text: str | bytes, name: str = "tree.txt", *extra: str):
    case(id, "hierarchy", input, expect)(lambda tmp, good: convert(write(tmp / name, text), tmp, *extra))


hierarchy("empty-file", "an empty file", "tree.txt: is empty; expected a hierarchy in one of the formats pairs, "
          "nbdt, paths, isa, child-parent", "")
hierarchy("binary-file", "random binary bytes (with NUL)", "tree.txt: is a binary file, not a hierarchy (expected "
          "text: one of pairs, nbdt, paths, isa, child-parent)", bytes(range(256)) * 4)
hierarchy("latin-1-file", "Latin-1 text (`caf\\xe9/x`)", "tree.txt: is not UTF-8 text (byte 3); save it as UTF-8",
          b"caf\xe9/x\n")
hierarchy("only-comments", "only `#` comments", "tree.txt: holds only comments; expected a hierarchy",
          "# a tree\n# to come\n")
hierarchy("undetectable", "three names on a line", "tree.txt: cannot tell the hierarchy format; pass --format "
          "(pairs, nbdt, paths, isa, child-parent)", "a b c\n")
hierarchy("pairs-cycle", "pairs: 2 → 3 → 2, no root", "tree.txt: every node has a parent, so the pairs contain a "
          "cycle", "4\n0 2\n1 2\n2 3\n3 2\n")
hierarchy("pairs-self-parent", "pairs: a node its own parent", "tree.txt, line 2: node 0 is its own parent (a cycle)",
          "1\n0 0\n")
hierarchy("isa-cycle-beside-root", "isa: a cycle a → b → a beside a proper root",
          "tree.txt: the parent links contain a cycle through node 'a'", "root x\nx y\na b\nb a\n")
hierarchy("isa-two-parents", "isa: a node with two parents", "tree.txt: node 'x' has two parents ('a' and 'b'); a "
          "hierarchy must be a tree", "root a\nroot b\na x\nb x\n")
hierarchy("pairs-two-parents", "pairs: a node with two parents", "tree.txt, line 4: node 0 has two parents (2 on "
          "line 2 and 3); a hierarchy must be a tree", "3\n0 2\n1 2\n0 3\n")
hierarchy("two-roots", "isa: two roots", "tree.txt: 2 roots ('r1', 'r2'); a tree has exactly one node without a "
          "parent: add a common root", "r1 a\nr2 b\n")
hierarchy("pairs-gap", "pairs: index 4 never used", "tree.txt: index 4 is missing; node indices must run 0..5 "
          "without gaps", "4\n0 3\n1 3\n2 5\n3 5\n")
hierarchy("pairs-huge-index", "pairs: an index of 10^11 (used to hang building range(10^11))",
          "tree.txt: index 3 is missing; node indices must run 0..99999999999 without gaps",
          "2\n0 2\n1 99999999999\n")
hierarchy("count-line-lies", "pairs: count line says 5, file has 2", "tree.txt, line 1: the count line says 5 "
          "entries but the file has 2; fix the first line", "5\n0 2\n1 2\n")
hierarchy("count-line-5000-digits", "pairs: a 5,000-digit count (used to crash: int() digit limit)",
          "tree.txt, line 1: index 11111111111111111111... is too large (more than 12 digits)", "1" * 5000 + "\n")
hierarchy("negative-index", "pairs: a negative index", "tree.txt, line 2: '-1' is not a non-negative integer index",
          "1\n0 -1\n")
hierarchy("pairs-not-a-count", "`--format pairs` on a names file", "tree.txt, line 1: 'a' is not a non-negative "
          "integer index", "a\nb c\n", "tree.txt", "--format", "pairs")
hierarchy("leaf-not-first", "pairs: a super-class among indices 0..L-1", "tree.txt: node 0 is a super-class, but "
          "indices 0..1 must be the 2 classes (leaves) in class order; renumber the file", "3\n1 0\n2 0\n0 3\n")


@case("names-sidecar-unknown-index", "hierarchy", "pairs + names.tsv naming node 7 of 3",
      "tree.txt.names.tsv, line 1: index 7 is not a node of tree.txt (0..2)")
def _(tmp, good):
    write(tmp / "tree.txt.names.tsv", "7\tghost\n")
    return convert(write(tmp / "tree.txt", "2\n0 2\n1 2\n"), tmp)


@case("names-sidecar-duplicate", "hierarchy", "pairs + names.tsv giving two nodes one name",
      "tree.txt: two nodes are called 'x'; node names must be unique")
def _(tmp, good):
    write(tmp / "tree.txt.names.tsv", "0\tx\n1\tx\n")
    return convert(write(tmp / "tree.txt", "2\n0 2\n1 2\n"), tmp)


@case("chain-of-a-million", "hierarchy", "pairs: 10^6 nodes in a chain", "tree.txt: the tree is 1000000 levels deep "
      "(limit 1000), 1 once its single-child chains are merged: merge them with hseval hierarchy convert "
      "--merge-chains")
def _(tmp, good):
    n = 10**6
    lines = "\n".join(f"{k} {k + 1}" for k in range(n))
    return convert(write(tmp / "tree.txt", f"{n}\n{lines}\n"), tmp)


@case("path-100000-deep", "hierarchy", "paths: one class 100,000 levels deep (used to hang: O(depth²))",
      "tree.txt: the tree is 100000 levels deep (limit 1000), 1 once its single-child chains are merged: merge them "
      "with hseval hierarchy convert --merge-chains")
def _(tmp, good):
    return convert(write(tmp / "tree.txt", "/".join(f"n{k}" for k in range(10**5)) + "\n"), tmp)


hierarchy("paths-duplicate", "paths: the same class twice", "tree.txt: the path 'a/x' is given twice",
          "a/x\na/x\n")
hierarchy("paths-class-is-super-class", "paths: a class that is also a super-class",
          "tree.txt: class 'a/x' is also a super-class of another class; every class must be a leaf", "a/x\na/x/y\n")
hierarchy("nbdt-not-json", "nbdt: broken JSON", "tree.json, line 1: not valid JSON (Expecting property name enclosed "
          "in double quotes)", "{nodes: [", "tree.json")
hierarchy("nbdt-nested-100000", "nbdt: `[` × 100,000 (used to crash: RecursionError)",
          "tree.json: not valid JSON (maximum recursion depth exceeded", "[" * 100_000, "tree.json")
hierarchy("nbdt-5000-digit-id", "nbdt: a 5,000-digit node id (used to crash: int() digit limit)",
          "tree.json: not valid JSON (Exceeds the limit (4300 digits) for integer string conversion",
          '{"nodes": [{"id": ' + "7" * 5000 + '}], "links": []}', "tree.json")
hierarchy("nbdt-wrong-shape", "nbdt: `nodes` not a list", "tree.json: expected node-link JSON with 'nodes' and "
          "'links' lists (NBDT format)", '{"nodes": 3, "links": []}', "tree.json")
hierarchy("nbdt-unknown-name", "nbdt: a link to a node that is not listed", "tree.json: links[0] refers to 'zzz', "
          "which is not in 'nodes'", '{"nodes": [{"id": "r"}, {"id": "a"}], "links": [{"source": "r", '
          '"target": "zzz"}]}', "tree.json")


@case("hierarchy-unknown-classes", "hierarchy", "`train --hierarchy` with names that are not the dataset's classes",
      "tree.txt: class 'T-shirt/top' is not in the hierarchy; every class must be a leaf")
def _(tmp, good):
    tree = write(tmp / "tree.txt", "root cat\nroot dog\n")
    return ["train", "--data-root", str(good.fashion), "--hierarchy", str(tree), "--quiet", "--out", str(tmp / "r")]


@case("names-sidecar-5000-digit-index", "hierarchy", "pairs + names.tsv with a 5,000-digit index (used to crash: "
      "int() digit limit)",
      "tree.txt.names.tsv, line 1: index 11111111111111111111... is not a node of tree.txt (0..2)")
def _(tmp, good):
    write(tmp / "tree.txt.names.tsv", "1" * 5000 + "\tghost\n")
    return convert(write(tmp / "tree.txt", "2\n0 2\n1 2\n"), tmp)


hierarchy("header-not-json", "paths file whose `# hseval hierarchy:` header is not JSON", "tree.txt, line 1: the "
          "'# hseval hierarchy:' line is not valid JSON (Expecting property name enclosed in double quotes); fix it or "
          "delete the line", "# hseval hierarchy: {paths}\na/x\n")
hierarchy("header-unknown-key", "a header with a key paths files do not take", "tree.txt, line 1: the '# hseval "
          "hierarchy:' line has the key 'colour', which paths files do not take; fix it or delete the line",
          '# hseval hierarchy: {"format": "paths", "colour": "red"}\na/x\n')
hierarchy("paths-shared-names-blowup", "paths: 1,000 lines of 998 nested `a` (used to take 55 s and write a 1 GB "
          "names file)", "tree.txt: 998000 nodes share their names with other nodes, and naming them by their paths "
          "would take 1000884220 characters (limit 67108864); give the nodes distinct names",
          "".join(f"k{i}/" + "/".join(["a"] * 998) + "\n" for i in range(1000)))


def convert_to(fmt: str, path: Path, tmp: Path) -> list[str]:
    return ["hierarchy", "convert", str(path), str(tmp / "out.txt"), "--to", fmt]


@case("convert-isa-hash-superclass", "hierarchy", "`convert --to isa` of a tree with a super-class `#hash` (used to "
      "write a file that read back as another tree)", "cannot write isa format: node name '#hash' starts with '#', "
      "and its lines would be comments in an isa file; use --to pairs, paths or nbdt")
def _(tmp, good):
    return convert_to("isa", write(tmp / "tree.txt", "\\#hash/x\n\\#hash/y\n"), tmp)


@case("convert-isa-trailing-space", "hierarchy", "`convert --to isa` of a class named `x ` (used to write `x`)",
      "cannot write isa format: node name 'x ' contains whitespace; use --to pairs, paths or nbdt")
def _(tmp, good):
    return convert_to("isa", write(tmp / "tree.txt", "a/x\\ \na/y\n"), tmp)


@case("convert-surrogate-name", "hierarchy", "an nbdt node id `\"\\ud800\"`, `convert --to pairs` (used to crash: "
      "UnicodeEncodeError)", "cannot write pairs format: node name '\\ud800' holds a surrogate code point, which is "
      "not Unicode text and no hierarchy file can hold; rename the node")
def _(tmp, good):
    text = '{"nodes": [{"id": "r"}, {"id": "\\ud800"}, {"id": "b"}], "links": [{"source": "r", "target": "\\ud800"}, ' \
           '{"source": "r", "target": "b"}]}'
    return convert(write(tmp / "tree.json", text), tmp)


@case("hierarchy-is-a-folder", "hierarchy", "a folder given as the hierarchy file",
      "tree: is a folder, expected a hierarchy file")
def _(tmp, good):
    (tmp / "tree").mkdir()
    return convert(tmp / "tree", tmp)


@case("hierarchy-missing", "hierarchy", "a hierarchy file that does not exist", "nothing.txt: no such file")
def _(tmp, good):
    return convert(tmp / "nothing.txt", tmp)


# ====================================================================== runs
def evaluate(run: Path, tmp: Path, good: Good) -> list[str]:
    """`hseval evaluate RUN --out OUT`: OUT must not appear."""
    return ["evaluate", str(run), "--out", str(tmp / "eval"), "--data-root", str(good.fashion), "--projections",
            "none", "--quiet"]


def run_case(id: str, input: str, expect: str, damage: Callable[[Path], object]):
    def build(tmp, good):
        run = copy_run(good, tmp)
        damage(run)
        return evaluate(run, tmp, good)

    case(id, "run", input, expect)(build)


def _set_head(meta, name):
    meta["model"]["head"] = {"name": name, "config": {}}


def _swap_first_leaves(meta):
    for names in (meta["hierarchy"]["names"], meta["dataset"]["class_names"]):
        names[0], names[1] = names[1], names[0]


def _move_first_class(meta):
    """Class 0 under the super-class of class 9: the same node count, another tree."""
    meta["hierarchy"]["parents"][0] = meta["hierarchy"]["parents"][9]


run_case("no-run-json", "a run folder without run.json", "no runs (folders with run.json) in …/run; train some with "
         "'hseval train-all'", lambda p: (p / "run.json").unlink())
run_case("no-tensors", "run.json without model.safetensors", "run/model.safetensors: missing; the run is incomplete "
         "(was training interrupted? 'hseval train --resume' finishes it)",
         lambda p: (p / "model.safetensors").unlink())
run_case("truncated-tensors", "model.safetensors cut to 1,000 bytes", "run/model.safetensors: does not match the "
         "checksum in run.json (truncated, tampered with or from another run)",
         lambda p: write(p / "model.safetensors", (p / "model.safetensors").read_bytes()[:1000]))
run_case("tampered-tensors", "one byte of a weight changed", "run/model.safetensors: does not match the checksum in "
         "run.json (truncated, tampered with or from another run)",
         lambda p: write(p / "model.safetensors", (p / "model.safetensors").read_bytes()[:-1] + b"\x7f"))
run_case("pickle-as-tensors", "a pickle (os.system payload) planted as model.safetensors, checksum updated",
         "run/model.safetensors: not a valid safetensors file (…)",
         lambda p: (write(p / "model.safetensors", planted_pickle(p / "PWNED")), match_checksum(p)))
run_case("run-json-not-json", "run.json cut in the middle", "run/run.json, line …: run.json is not valid JSON (…)",
         lambda p: write(p / "run.json", (p / "run.json").read_text()[:50]))
run_case("run-json-binary", "run.json of random bytes", "run/run.json: run.json is not UTF-8 text",
         lambda p: write(p / "run.json", bytes(range(128, 256))))
run_case("run-json-nested", "run.json `[` × 100,000 (used to crash: RecursionError)", "run/run.json: run.json is not "
         "valid JSON (maximum recursion depth exceeded", lambda p: write(p / "run.json", "[" * 100_000))
run_case("run-json-a-list", "run.json holding a list", "run/run.json: expected a JSON object, got list",
         lambda p: write(p / "run.json", "[1, 2]"))
run_case("run-json-leaves-swapped", "run.json: two class names swapped in the tree and the class list (used to "
         "evaluate with the labels swapped, exit 0)", "run/run.json: was edited after training (its checksum "
         "'meta_sha256' no longer matches); a run's tree, classes and model must stay as trained: restore the file or "
         "train again", lambda p: edit_meta(p, _swap_first_leaves, reseal=False))
run_case("run-json-class-moved", "run.json: a class moved under another super-class (used to change a level's "
         "accuracy, exit 0)", "run/run.json: was edited after training (its checksum 'meta_sha256' no longer "
         "matches)…", lambda p: edit_meta(p, _move_first_class, reseal=False))
run_case("run-json-classes-disagree", "run.json: class list reversed, tree unchanged, checksum updated",
         "run/run.json: 'dataset.class_names' must be the 10 leaves of 'hierarchy' in class order; the file is damaged",
         lambda p: edit_meta(p, lambda m: m["dataset"]["class_names"].reverse()))
run_case("wrong-type-head-name", "run.json: `model.head.name` is a number, checksum updated", "run/run.json: "
         "'model.head.name' must be a string, got 3",
         lambda p: edit_meta(p, lambda m: m["model"]["head"].update(name=3)))
run_case("wrong-type-parents", "run.json: hierarchy parents are strings, checksum updated", "run/run.json: "
         "'hierarchy.parents[0]' must be an integer, got \"x\"",
         lambda p: edit_meta(p, lambda m: m["hierarchy"].update(parents=["x"] * 13)))
run_case("num-leaves-infinity", "run.json: `num_leaves: Infinity`, checksum updated (used to crash: OverflowError)",
         "run/run.json: 'hierarchy.num_leaves' must be an integer, got Infinity",
         lambda p: (write(p / "run.json", (p / "run.json").read_text().replace(
             '"num_leaves": 10', '"num_leaves": Infinity')), reseal(p)))
run_case("huge-parent-index", "run.json: a parent index of 10^30, checksum updated (used to crash: OverflowError)",
         "run/run.json: 'hierarchy.parents[0]' must be <= 9007199254740991, got 1000000000000000000000000000000",
         lambda p: edit_meta(p, lambda m: m["hierarchy"]["parents"].__setitem__(0, 10**30)))
run_case("head-option-wrong-type", "run.json: head option `radius: \"big\"`, checksum updated (used to crash: "
         "TypeError)", "run/run.json: cannot rebuild the model: head 'riemann': option 'radius' must be a number, got "
         "'big'…", lambda p: edit_meta(p, lambda m: m["model"]["head"]["config"].update(radius="big")))
run_case("newer-schema", "run.json: schema version 99", "run/run.json: 'schema_version': 99 is newer than "
         "this hseval understands (2); upgrade hseval", lambda p: edit_meta(p, lambda m: m.update(schema_version=99)))
run_case("old-schema", "run.json: schema version 0", "run/run.json: 'schema_version': unknown schema "
         "version 0 (this hseval reads 2)",
         lambda p: edit_meta(p, lambda m: m.update(schema_version=0)))
run_case("head-does-not-match", "run.json says multitask, the tensors are riemann's, checksum updated",
         "run/model.safetensors: has no tensor 'head.classifier.weight' that head 'multitask' with backbone "
         "'small-cnn' needs; run.json does not match the tensors",
         lambda p: edit_meta(p, lambda m: _set_head(m, "multitask")))
run_case("shape-changed", "a head tensor of another shape, checksum updated", "run/model.safetensors: tensor "
         "'head.delta' has shape (13, 7) but run.json's model needs (13, 128)",
         lambda p: resave_tensors(p, lambda t: t.update({"head.delta": __import__("torch").zeros(13, 7)})))
run_case("nan-weights", "NaN weights, checksum updated", "run/model.safetensors: tensor 'head.delta' holds NaN or "
         "infinite values; the run diverged", lambda p: resave_tensors(p, lambda t: t["head.delta"].fill_(np.nan)))
run_case("inf-weights", "an infinite backbone weight, checksum updated", "run/model.safetensors: tensor …holds NaN "
         "or infinite values; the run diverged",
         lambda p: resave_tensors(p, lambda t: next(v for k, v in t.items() if k.startswith("backbone") and
                                                    v.is_floating_point()).view(-1).__setitem__(0, np.inf)))


def hseval_run_folder(folder: Path, good: Good) -> Path:
    """An empty run folder that hseval created (its marker): a training state planted there is read."""
    import shutil

    from hseval.io.folders import MARKER

    folder.mkdir()
    shutil.copy2(good.run / MARKER, folder / MARKER)
    return folder


def resume(run: Path, tmp: Path, good: Good) -> list[str]:
    return ["train", "--head", "riemann", "--data-root", str(good.fashion), "--quiet", "--set",
            "data.train_subset=null", "--out", str(run), "--resume"]


@case("pickle-as-train-state", "run", "a pickle (os.system payload) planted as train_state.pt, then `--resume`",
      "run/train_state.pt: cannot be read as a training state (UnpicklingError); remove it to restart training "
      "from the beginning")
def _(tmp, good):
    run = hseval_run_folder(tmp / "run", good)
    import torch

    from tests.bad_inputs.builders import PlantedSystem
    torch.save({"epoch": 1, "model": PlantedSystem(tmp / "PWNED")}, run / "train_state.pt")
    return resume(run, tmp, good)


@case("train-state-a-list", "run", "train_state.pt holding a list, then `--resume` (used to crash: AttributeError)",
      "run/train_state.pt: not a training state written by hseval (no 'epoch' and 'history'); remove it to restart "
      "training from the beginning")
def _(tmp, good):
    import torch

    torch.save([1, 2, 3], hseval_run_folder(tmp / "run", good) / "train_state.pt")
    return resume(tmp / "run", tmp, good)


# ====================================================================== data folders
def train_on(dataset: str, root: Path, tmp: Path, *extra: str) -> list[str]:
    """`hseval train` on a damaged data folder: the run folder must not appear."""
    return ["train", "--dataset", dataset, "--data-root", str(root), "--backbone", "small-cnn", "--quiet",
            "--set", "optim.epochs=1", "--set", "data.batch_size=4", "--out", str(tmp / "r"), *extra]


@case("fashion-missing-split", "data", "Fashion-MNIST folder without the test images",
      "Fashion-MNIST not found (looked in …/fashion); install dataset-fashion-mnist or pass --data-root DIR with "
      "the four IDX files")
def _(tmp, good):
    root = copy_fashion(good, tmp)
    (root / "t10k-images-idx3-ubyte.gz").unlink()
    return train_on("fashion-mnist", root, tmp)


@case("fashion-truncated", "data", "training images cut in half (gzip)", "fashion/train-images-idx3-ubyte.gz: "
      "cannot decompress (EOFError: …); the file is damaged, download it again")
def _(tmp, good):
    root = copy_fashion(good, tmp)
    path = root / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return train_on("fashion-mnist", root, tmp)


@case("fashion-bad-deflate", "data", "a gzip header followed by garbage (used to crash: zlib.error)",
      "fashion/train-labels-idx1-ubyte.gz: cannot decompress (error: Error -3 while decompressing data: …); the file "
      "is damaged, download it again")
def _(tmp, good):
    root = copy_fashion(good, tmp)
    (root / "train-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"garbage" * 9)
    return train_on("fashion-mnist", root, tmp)


@case("fashion-not-idx", "data", "a PNG renamed to an IDX file", "fashion/t10k-labels-idx1-ubyte.gz: not an IDX file "
      "(bad magic number)")
def _(tmp, good):
    root = copy_fashion(good, tmp)
    import gzip

    (root / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(b"\x89PNG\r\n\x1a\n" + bytes(100)))
    return train_on("fashion-mnist", root, tmp)


@case("fashion-label-out-of-range", "data", "a label 12 in a 10-class dataset", "fashion: train-labels-idx1-ubyte has "
      "label 12, outside 0..9")
def _(tmp, good):
    root = copy_fashion(good, tmp)
    labels = np.arange(600) % 10
    labels[5] = 12
    write_idx(root / "train-labels-idx1-ubyte.gz", labels)
    return train_on("fashion-mnist", root, tmp)


@case("fashion-count-mismatch", "data", "600 training images but 599 labels", "fashion: 600 train images but 599 "
      "labels")
def _(tmp, good):
    root = copy_fashion(good, tmp)
    write_idx(root / "train-labels-idx1-ubyte.gz", np.arange(599) % 10)
    return train_on("fashion-mnist", root, tmp)


@case("cifar-missing-split", "data", "cifar-100-python/ without its `test` file", "cifar-100-python/test: file is "
      "missing; the CIFAR-100 folder …/cifar-100-python is incomplete (download or extract the dataset again)")
def _(tmp, good):
    from tests.fake_datasets import write_cifar100

    (write_cifar100(tmp / "data", per_class=(1, 1)) / "test").unlink()
    return train_on("cifar100", tmp / "data", tmp)


@case("cifar-planted-pickle", "data", "cifar-100-python/train replaced by an os.system pickle",
      "cifar-100-python/train: refused to load: the pickle asks for posix.system, which the CIFAR format never uses "
      "(a foreign or tampered file); download the dataset again")
def _(tmp, good):
    from tests.fake_datasets import write_cifar100

    write(write_cifar100(tmp / "data", per_class=(1, 1)) / "train", planted_pickle(tmp / "PWNED"))
    return train_on("cifar100", tmp / "data", tmp)


@case("cifar-label-out-of-range", "data", "a CIFAR fine label 100", "cifar-100-python/test: 'fine_labels' has label "
      "100, out of range 0..99")
def _(tmp, good):
    from tests.fake_datasets import cifar100_lists, py2_pickle, write_cifar100

    folder = write_cifar100(tmp / "data", per_class=(1, 1))
    _, _, fine_to_coarse = cifar100_lists()
    labels = list(range(100))
    labels[0] = 100
    write(folder / "test", py2_pickle({"data": np.zeros((100, 3072), np.uint8), "fine_labels": labels,
                                       "coarse_labels": [fine_to_coarse[j % 100] for j in labels]}))
    return train_on("cifar100", tmp / "data", tmp)


@case("images-empty-class", "data", "image folders: a class folder with no images", "images/train/b: class folder "
      "holds no images (…); add images or remove the folder")
def _(tmp, good):
    root, tree = image_folder(tmp)
    for path in (root / "train" / "b").iterdir():
        path.unlink()
    return train_on("image-folder", root, tmp, "--hierarchy", str(tree))


@case("images-corrupt-image", "data", "image folders: a corrupt JPEG, read by a loader worker (used to print the "
      "worker's traceback)", "images/train/a/0.jpg: corrupt or unreadable image (UnidentifiedImageError); replace or "
      "remove it")
def _(tmp, good):
    root, tree = image_folder(tmp)
    (root / "train" / "a" / "0.jpg").write_bytes(b"\xff\xd8\xff not a jpeg")
    return train_on("image-folder", root, tmp, "--hierarchy", str(tree), "--set", "data.workers=1")


@case("images-missing-test", "data", "image folders: no test/ folder", "images/test: folder is missing; expected "
      "…/images/test/<class>/*.jpg")
def _(tmp, good):
    import shutil

    root, tree = image_folder(tmp)
    shutil.rmtree(root / "test")
    return train_on("image-folder", root, tmp, "--hierarchy", str(tree))


@case("images-class-not-in-tree", "data", "image folders: a class folder the hierarchy lacks", "images/train/c: class "
      "folder 'c' is not a leaf of the hierarchy …/tree.txt (1 such folders); add it to the hierarchy or remove the "
      "folder")
def _(tmp, good):
    root, tree = image_folder(tmp, classes=("a", "b", "c"))
    write(tree, "things/a\nthings/b\n")
    return train_on("image-folder", root, tmp, "--hierarchy", str(tree))


# ====================================================================== command-line arguments
def cli(id: str, input: str, expect: str, argv: Callable[[Path, Good], list[str]]):
    case(id, "cli", input, expect)(argv)


def fashion_train(tmp: Path, good: Good, *extra: str) -> list[str]:
    return ["train", "--data-root", str(good.fashion), "--quiet", "--out", str(tmp / "r"), *extra]


cli("unknown-command", "`hseval trian`", "argument COMMAND: invalid choice: 'trian' (choose from …) (see 'hseval "
    "--help')", lambda tmp, good: ["trian"])
cli("unknown-dataset", "`--dataset mnist`", "unknown dataset 'mnist'; choose one of cifar100, …",
    lambda tmp, good: fashion_train(tmp, good, "--dataset", "mnist"))
cli("unknown-head", "`--head nope`", "unknown head 'nope'; choose one of plain, …",
    lambda tmp, good: fashion_train(tmp, good, "--head", "nope"))
cli("unknown-backbone", "`--backbone vgg`", "unknown backbone 'vgg'; choose one of …",
    lambda tmp, good: fashion_train(tmp, good, "--backbone", "vgg"))
cli("unknown-setting", "`--set optim.lrr=0.1`", "--set: unknown setting 'optim.lrr'; known settings: …",
    lambda tmp, good: fashion_train(tmp, good, "--set", "optim.lrr=0.1"))
cli("negative-batch-size", "`--set data.batch_size=-1`", "--set: data.batch_size must be >= 1, got -1",
    lambda tmp, good: fashion_train(tmp, good, "--set", "data.batch_size=-1"))
cli("negative-subset", "`--set data.train_subset=-5`", "--set: data.train_subset must be >= 1, got -5",
    lambda tmp, good: fashion_train(tmp, good, "--set", "data.train_subset=-5"))
cli("negative-max-points", "`evaluate --max-points -5`",
    "argument --max-points: expected a positive integer, got -5 (see …)",
    lambda tmp, good: [*evaluate(good.run, tmp, good), "--max-points", "-5"])
cli("rule-threshold-outside", "`evaluate --rules threshold:1.5`", "--rules: rule 'threshold:1.5': the threshold must "
    "be a probability in [0, 1], e.g. threshold:0.5", lambda tmp, good: [*evaluate(good.run, tmp, good), "--rules",
                                                                        "threshold:1.5"])
cli("rule-unknown", "`evaluate --rules leaf,nearest`", "--rules: unknown decoding rule 'nearest'; choose one of "
    "leaf, …", lambda tmp, good: [*evaluate(good.run, tmp, good), "--rules", "leaf,nearest"])
cli("rule-unknown-metric", "`evaluate --rules optimal:height`", "--rules: unknown node metric 'height'; choose one "
    "of correct, …", lambda tmp, good: [*evaluate(good.run, tmp, good), "--rules", "optimal:height"])
cli("rule-beta-not-positive", "`evaluate --rules optimal:hf:0`", "--rules: metric 'hf:0': β must be a positive number, "
    "e.g. hf:0.5 or hf:2", lambda tmp, good: [*evaluate(good.run, tmp, good), "--rules", "optimal:hf:0"])
cli("negative-max-depth", "`hierarchy show --max-depth -1`", "argument --max-depth: expected a positive integer, got "
    "-1 (see 'hseval hierarchy show --help')",
    lambda tmp, good: ["hierarchy", "show", str(write(tmp / "t.txt", "a/x\n")), "--max-depth", "-1"])
cli("negative-seed", "`hierarchy random --seed -3`", "argument --seed: expected a non-negative integer, got -3",
    lambda tmp, good: ["hierarchy", "random", str(write(tmp / "t.txt", "a/x\na/y\n")), "--seed", "-3", "--out",
                       str(tmp / "out.txt")])
cli("port-out-of-range", "`dashboard --port 70000`", "argument --port: expected a port number in 1..65535, got 70000",
    lambda tmp, good: ["dashboard", str(tmp), "--port", "70000"])
cli("unknown-projection", "`evaluate --projections mds`", "unknown projection 'mds'; choose one of pca, tsne, umap",
    lambda tmp, good: [*evaluate(good.run, tmp, good)[:-3], "--projections", "mds"])
cli("recipe-not-utf8", "`--recipe` of binary bytes (used to crash: UnicodeDecodeError)", "bad.yaml: not UTF-8 text "
    "(byte 0); a recipe is a YAML file",
    lambda tmp, good: fashion_train(tmp, good, "--recipe", str(write(tmp / "bad.yaml", b"\xff\xfe\x00\x01"))))
cli("recipe-not-yaml", "`--recipe` with broken YAML", "bad.yaml, line …: not valid YAML",
    lambda tmp, good: fashion_train(tmp, good, "--recipe", str(write(tmp / "bad.yaml", "optim: [lr: 1\n"))))
cli("out-is-a-file", "`train --out` naming an existing file (used to crash: NotADirectoryError)",
    "afile: is a file, not a folder; choose another --out",
    lambda tmp, good: [*fashion_train(tmp, good)[:-2], "--out", str(write(tmp / "afile", "x"))])
cli("out-below-a-file", "`train --out afile/run`", "afile/run: cannot be created (…/afile is a file); choose another "
    "--out", lambda tmp, good: [*fashion_train(tmp, good)[:-2], "--out", str(write(tmp / "afile", "x") / "run")])
cli("evaluate-out-is-a-file", "`evaluate --out` naming a file (used to crash after the whole evaluation)",
    "afile: is a file, not a folder; choose another --out",
    lambda tmp, good: [*evaluate(good.run, tmp, good)[:3], str(write(tmp / "afile", "x")),
                       *evaluate(good.run, tmp, good)[4:]])


# ---------------------------------------------------------------------- checked before any work
cli("device-missing", "`evaluate --device cuda:99` (used to fail after loading, or not at all)",
    "--device=cuda:99 but this machine has …",
    lambda tmp, good: [*evaluate(good.run, tmp, good), "--device", "cuda:99"])
cli("device-not-a-device", "`evaluate --device gpu`", "--device='gpu' is not a device; use auto, cpu, cuda or cuda:N",
    lambda tmp, good: [*evaluate(good.run, tmp, good), "--device", "gpu"])
cli("train-device-missing", "`train --set engine.device=cuda:99`", "engine.device=cuda:99 but this machine has …",
    lambda tmp, good: fashion_train(tmp, good, "--set", "engine.device=cuda:99"))
cli("seeds-twice", "`train-all --seeds 0,0` (used to refuse after training the first run)", "two runs would be "
    "written to 'plain-seed0'; a head, seed or sweep value is listed twice",
    lambda tmp, good: ["train-all", "--heads", "plain", "--seeds", "0,0", "--data-root", str(good.fashion), "--out",
                       str(tmp / "runs")])
cli("head-option-not-a-number", "`--set model.head_options.radius=big` (used to fail when the model was built)",
    "head 'riemann': option 'radius' must be a number, got 'big' (set head options with --set "
    "model.head_options.NAME=VALUE)",
    lambda tmp, good: fashion_train(tmp, good, "--head", "riemann", "--set", "model.head_options.radius=big"))
cli("subset-below-classes", "`--set data.train_subset=5` with 10 classes (used to crash in scikit-learn)",
    "data.train_subset=5 is smaller than the 10 classes; a stratified subset needs at least one image per class: use "
    "data.train_subset >= 10", lambda tmp, good: fashion_train(tmp, good, "--set", "data.train_subset=5"))
cli("subset-all-but-five", "`--set data.train_subset=595` of 600 images (used to crash in scikit-learn)",
    "data.train_subset=595 leaves out fewer images than there are classes (10), which a stratified split cannot do: "
    "use at most 590, or leave data.train_subset unset to train on all 600",
    lambda tmp, good: fashion_train(tmp, good, "--set", "data.train_subset=595"))
cli("zero-steps", "`--set data.batch_size=1000` on 600 images (used to train no step and exit 0)",
    "data.batch_size=1000 but there are only 600 training images: an epoch would train no step (the last "
    "incomplete batch is dropped); lower data.batch_size to at most 600",
    lambda tmp, good: fashion_train(tmp, good, "--set", "data.batch_size=1000"))


@case("paper-recipe-on-tiny-images", "cli", "`--recipe paper` (batch 64) on 4 images (used to train no step, exit 0, "
      "every head at chance)", "data.batch_size=64 but there are only 4 training images: an epoch would train no step "
      "(the last incomplete batch is dropped); lower data.batch_size to at most 4")
def _(tmp, good):
    root, tree = image_folder(tmp)
    return ["train", "--dataset", "image-folder", "--data-root", str(root), "--hierarchy", str(tree), "--backbone",
            "small-cnn", "--recipe", "paper", "--quiet", "--out", str(tmp / "r")]


cli("out-not-writable", "`evaluate --out` where nothing can be written (used to fail after the whole evaluation)",
    "cannot write /proc/hseval-out: …; choose another --out",
    lambda tmp, good: [*evaluate(good.run, tmp, good)[:3], "/proc/hseval-out", *evaluate(good.run, tmp, good)[4:]])


# ---------------------------------------------------------------------- folders hseval did not write
@case("evaluate-into-the-runs", "ownership", "`evaluate RUNS --out RUNS` (used to delete every trained run, exit 0)",
      "runs: is not empty and was not written by hseval as an evaluation folder (one sub-folder per evaluated run) (it "
      "holds 'run'); choose a new or empty --out")
def _(tmp, good):
    import shutil

    runs = tmp / "runs"
    shutil.copytree(good.run, runs / "run")
    return ["evaluate", str(runs), "--out", str(runs), "--data-root", str(good.fashion), "--quiet"]


@case("train-force-over-user-files", "ownership", "`train --force --out` a folder of the user's files",
      "mine: is not empty and was not written by hseval as a training run (it holds 'thesis.tex'); choose a new or "
      "empty --out")
def _(tmp, good):
    write(tmp / "mine" / "thesis.tex", "years of work")
    return [*fashion_train(tmp, good, "--force")[:-3], "--out", str(tmp / "mine"), "--force"]


@case("train-into-an-evaluation", "ownership", "`train --force --out` an evaluated run's folder",
      "run: holds the evaluation of one run, not a training run; choose another --out")
def _(tmp, good):
    import shutil

    evaluation = Path(shutil.copytree(good.evaluation, tmp / "eval"))
    return [*fashion_train(tmp, good, "--force")[:-3], "--out", str(evaluation / "run"), "--force"]


@case("train-over-user-logs", "ownership", "`train --out exp1` where `exp1/` holds only the user's `tensorboard/` "
      "logs (used to delete the logs, exit 0)", "exp1: is not empty and was not written by hseval as a training run "
      "(it holds 'tensorboard'); choose a new or empty --out")
def _(tmp, good):
    write(tmp / "exp1" / "tensorboard" / "events.out.tfevents.1", "the user's logs")
    return [*fashion_train(tmp, good)[:-2], "--out", str(tmp / "exp1")]


@case("import-into-the-checkpoints-folder", "ownership", "`import hf/model.safetensors … --out hf` (used to overwrite "
      "the checkpoint being imported)", "hf: holds …hf/model.safetensors, an input of this command, which writing the "
      "output would remove; choose another --out")
def _(tmp, good):
    import shutil

    from tests.helpers import fashion_tree

    checkpoint = Path(shutil.copy2(good.run / "model.safetensors", write(tmp / "hf" / "model.safetensors", "")))
    write_hierarchy(fashion_tree(), tmp / "tree.json")
    return ["import", str(checkpoint), "--backbone", "small-cnn", "--head", "riemann", "--hierarchy",
            str(tmp / "tree.json"), "--dataset", "fashion-mnist", "--force", "--out", str(tmp / "hf")]


@case("predictions-into-user-notes", "ownership", "`evaluate --predictions … --out notes` where `notes/` holds the "
      "user's `report.md` (used to adopt the folder, and `report notes` overwrote the file)", "notes: is not empty and "
      "was not written by hseval as an evaluation folder (one sub-folder per evaluated run) (it holds 'report.md'); "
      "choose a new or empty --out")
def _(tmp, good):
    from tests.helpers import fashion_tree

    write(tmp / "notes" / "report.md", "# my notes")
    write_hierarchy(fashion_tree(), tmp / "tree.json")
    np.savez(tmp / "p.npz", targets=np.arange(10), logits=np.eye(10) * 4)  # logits: one-hot rows would be probabilities
    return ["evaluate", "--predictions", str(tmp / "p.npz"), "--hierarchy", str(tmp / "tree.json"), "--projections",
            "none", "--out", str(tmp / "notes")]


@case("induce-into-the-run", "ownership", "`hierarchy induce RUN --out RUN/run.json` (used to replace run.json, "
      "exit 0; the run no longer loaded)", "run/run.json: lies inside …/run, an input of this command; write the "
      "output outside it (choose another --out)")
def _(tmp, good):
    run = copy_run(good, tmp)
    return ["hierarchy", "induce", str(run), "--out", str(run / "run.json")]


@case("re-export-over-user-notes", "ownership", "`export EVAL --to tensorboard tb` again after the user added "
      "`tb/notes.md` (used to delete it)", "tb: holds 'notes.md', which hseval did not write there, so it will not "
      "replace the folder; move it out or choose another OUT")
def _(tmp, good):
    import shutil

    from hseval.cli.main import main

    evaluation = Path(shutil.copytree(good.evaluation, tmp / "eval"))
    assert main(export_to(tmp, evaluation, tmp / "tb")) == 0
    write(tmp / "tb" / "notes.md", "the user's notes")
    return export_to(tmp, evaluation, tmp / "tb")


@case("convert-out-below-a-file", "cli", "`hierarchy convert` into a path below a file (used to write nothing only "
      "because the names sidecar failed first)", "afile: is a file, not a folder; choose another OUTPUT")
def _(tmp, good):
    write(tmp / "afile", "x")
    return ["hierarchy", "convert", str(write(tmp / "t.txt", "a/x\n")), str(tmp / "afile" / "out.txt"), "--to", "pairs"]


# ====================================================================== evaluation folders, report, dashboard
def garbage_folder(tmp: Path) -> Path:
    """Random files at the top, and evaluated runs of garbage (their markers, recording the
    garbage's checksums, say they are: only then is a folder read as an evaluation)."""
    from hseval.io.folders import new_marker
    from tests.helpers import reseal as seal_evaluation

    rng = np.random.default_rng(0)
    root = tmp / "garbage"
    write(root / "noise.bin", rng.bytes(2000))
    write(root / "index.json", "{not json")
    write(root / "plain" / "metrics.json", rng.bytes(500))
    write(root / "plain" / "per_node.csv", rng.bytes(300))
    write(root / "riemann" / "metrics.json", json.dumps({"top1": "high", "hierarchy": [1, 2]}))
    write(root / "riemann" / "geometry.csv", "a,b\n1\n")
    write(root / "multitask" / "metrics.json", "[" * 50_000)
    for run in ("plain", "riemann", "multitask"):
        seal_evaluation(root / run)
    write(root / ".hseval-folder.json", new_marker("evaluations").model_dump_json())  # so that report reads it
    return root


@case("dashboard-garbage", "dashboard", "`hseval dashboard` on a folder of garbage (used to start a server with "
      "nothing to show)", "garbage: no readable evaluated run: …/garbage/multitask/… (and 2 more)", subprocess=True)
def _(tmp, good):
    return ["dashboard", str(garbage_folder(tmp)), "--port", "1"]


@case("dashboard-runs-folder", "dashboard", "`hseval dashboard` on a folder of training runs (not yet evaluated)",
      "runs: this is a folder of training runs: evaluate it first with 'hseval evaluate …/runs --out EVAL'",
      subprocess=True)
def _(tmp, good):
    from hseval.io.folders import MARKER, new_marker

    runs = tmp / "runs"
    shutil.copytree(good.run, runs / "plain")
    (runs / MARKER).write_text(new_marker("runs").model_dump_json())
    return ["dashboard", str(runs)]


@case("dashboard-empty", "dashboard", "`hseval dashboard` on an empty folder", "empty: holds no evaluated runs; write "
      "them with 'hseval evaluate RUNS --out …/empty'", subprocess=True)
def _(tmp, good):
    (tmp / "empty").mkdir()
    return ["dashboard", str(tmp / "empty")]


@case("dashboard-missing", "dashboard", "`hseval dashboard` on a folder that does not exist", "nowhere: no such "
      "evaluation folder; write one with 'hseval evaluate RUNS --out …/nowhere'")
def _(tmp, good):
    return ["dashboard", str(tmp / "nowhere")]


@case("report-garbage", "dashboard", "`hseval report` on a folder of garbage", "garbage: no readable evaluated run (…)")
def _(tmp, good):
    return ["report", str(garbage_folder(tmp))]


def _only_run_damaged(tmp: Path, good: Good, damage: Callable[[Path], object], *, sealed: bool) -> Path:
    import shutil

    from tests.helpers import reseal as reseal_evaluation

    evaluation = Path(shutil.copytree(good.evaluation, tmp / "eval"))
    damage(evaluation / "run")
    if sealed:
        reseal_evaluation(evaluation / "run")
    return evaluation


@case("report-edited-metrics", "dashboard", "`hseval report` after top1 was edited in metrics.json (used to report "
      "the edited number)", "eval: no readable evaluated run (…/eval/run/metrics.json: was changed after 'hseval "
      "evaluate' wrote it (checksum mismatch); re-run 'hseval evaluate')")
def _(tmp, good):
    def edit(run: Path) -> None:
        metrics = json.loads((run / "metrics.json").read_text())
        metrics["top1"] = 0.74
        (run / "metrics.json").write_text(json.dumps(metrics))

    return ["report", str(_only_run_damaged(tmp, good, edit, sealed=False))]


def _csv_damage(name: str, edit: Callable[[list[list[str]]], list[list[str]]]) -> Callable[[Path], None]:
    """A damage that edits the rows (header first) of one of the run's CSV files."""
    from tests.bad_inputs.mutations import csv_bytes, csv_rows

    def damage(run: Path) -> None:
        (run / name).write_bytes(csv_bytes(edit(csv_rows((run / name).read_bytes()))))

    return damage


def _report_case(id: str, input: str, expect: str, name: str, edit) -> None:
    expected = f"eval: no readable evaluated run (…/eval/run/{expect}; re-run 'hseval evaluate')"
    case(id, "dashboard", input, expected)(
        lambda tmp, good: ["report", str(_only_run_damaged(tmp, good, _csv_damage(name, edit), sealed=True))])


_report_case("report-column-missing", "`hseval report` with geometry.csv lacking `depth`, checksums updated (used to "
             "crash)", "geometry.csv, line 1: no column 'depth'", "geometry.csv",
             lambda rows: [[c for c, h in zip(r, rows[0]) if h != "depth"] for r in rows])
_report_case("report-duplicated-row", "`hseval report` with a row of per_node.csv twice, checksums updated (used to "
             "crash)", "per_node.csv, line 3, column 'node': a row for the same node appears twice", "per_node.csv",
             lambda rows: [rows[0], rows[1], *rows[1:]])
_report_case("report-wrong-type", "`hseval report` with a text depth in per_node.csv, checksums updated",
             "per_node.csv, line 2, column 'depth': expected an integer, got 'two'", "per_node.csv",
             lambda rows: [rows[0], [*rows[1][:2], "two", *rows[1][3:]], *rows[2:]])


@case("report-out-below-a-file", "dashboard", "`hseval report --out afile/report.html` (used to write the tables, then "
      "fail)", "afile: is a file, not a folder; choose another --out")
def _(tmp, good):
    import shutil

    evaluation = Path(shutil.copytree(good.evaluation, tmp / "eval"))
    return ["report", str(evaluation), "--out", str(write(tmp / "afile", "x") / "report.html")]


# ====================================================================== export
def export_to(tmp: Path, eval_dir: Path, out: Path, to: str = "tensorboard") -> list[str]:
    return ["export", str(eval_dir), "--to", to, str(out)]


@case("export-a-run-folder", "export", "`hseval export` on a trained run's folder instead of an evaluation folder",
      "run: this is a training run: evaluate it first with 'hseval evaluate …/run --out EVAL'")
def _(tmp, good):
    return export_to(tmp, copy_run(good, tmp), tmp / "tb")


@case("export-unknown-format", "export", "`hseval export EVAL --to csv`",
      "--to 'csv': unknown export format; choose from tensorboard")
def _(tmp, good):
    import shutil

    return export_to(tmp, Path(shutil.copytree(good.evaluation, tmp / "eval")), tmp / "out", to="csv")


@case("export-into-user-files", "export", "`hseval export EVAL --to tensorboard OUT` with OUT a folder of the "
      "user's files", "mine: is not empty and was not written by hseval as an export of an evaluation folder "
      "(hseval export) (it holds 'thesis.tex'); choose a new or empty OUT")
def _(tmp, good):
    import shutil

    write(tmp / "mine" / "thesis.tex", "years of work")
    return export_to(tmp, Path(shutil.copytree(good.evaluation, tmp / "eval")), tmp / "mine")


# ====================================================================== import
def foreign_cnn(tmp: Path, good: Good, edit=None, name: str = "ckpt.pt") -> Path:
    """The good run's small CNN as another code base saves it (torchvision-style keys ``0.weight``...,
    a bias-free ``fc``), changed by ``edit``, as a ``.pt`` state dict."""
    import torch
    from safetensors.torch import load_file

    tensors = load_file(str(good.run / "model.safetensors"))
    state = {k.removeprefix("backbone.body."): v for k, v in tensors.items() if k.startswith("backbone.")}
    state["fc.weight"] = torch.randn(10, 128, generator=torch.Generator().manual_seed(0))
    if edit is not None:
        edit(state)
    path = tmp / name
    torch.save(state, path)
    return path


def import_cnn(tmp: Path, good: Good, checkpoint: Path, *extra: str) -> list[str]:
    from tests.helpers import fashion_tree

    tree = tmp / "tree.json"
    write_hierarchy(fashion_tree(), tree)
    return ["import", str(checkpoint), "--backbone", "small-cnn", "--head", "plain", "--hierarchy", str(tree),
            "--dataset", "fashion-mnist", "--data-root", str(good.fashion), "--out", str(tmp / "r"), *extra]


def import_case(id: str, input: str, expect: str, edit=None, *extra: str, name: str = "ckpt.pt") -> None:
    case(id, "import", input, expect)(
        lambda tmp, good: import_cnn(tmp, good, foreign_cnn(tmp, good, edit, name), *extra))


import_case("import-missing-key", "`hseval import` of a small-CNN state dict without `4.weight`",
            "ckpt.pt: has no '4.weight' of shape (64, 32, 3, 3) for backbone.body.4.weight of backbone 'small-cnn'; "
            "is it a small-cnn state dict? (strip a prefix with --prefix, or --map backbone.body.4.weight=KEY)",
            lambda s: s.pop("4.weight"))
import_case("import-extra-key", "`hseval import` of a state dict with a tensor the model does not use",
            "ckpt.pt: 'aux.weight' of shape (3, 4) is not used by backbone 'small-cnn' with head 'plain'; map it with "
            "--map HSEVAL_KEY=aux.weight or drop it with --ignore aux.weight",
            lambda s: s.update({"aux.weight": s["fc.weight"][:3, :4].clone()}))
import_case("import-misshapen-key", "`hseval import` with a 5×5 kernel where the small CNN has 3×3",
            "ckpt.pt: '4.weight' has shape (64, 32, 5, 5) but backbone 'small-cnn' (in_channels=1, small_stem=True) "
            "needs (64, 32, 3, 3) for backbone.body.4.weight",
            lambda s: s.update({"4.weight": s["4.weight"].new_zeros(64, 32, 5, 5)}))
import_case("import-wrong-class-count", "`hseval import` of a 1000-class `fc` onto a 10-class tree",
            "ckpt.pt: 'fc.weight' has shape (1000, 128) but head 'plain' on this tree (10 classes, 13 nodes) with "
            "128-d features needs (10, 128) for head.classifier.weight: the checkpoint has 1000 classes, the tree 10",
            lambda s: s.update({"fc.weight": s["fc.weight"].new_zeros(1000, 128)}))
import_case("import-nan", "`hseval import` of a state dict holding a NaN",
            "ckpt.pt: 'fc.weight' holds NaN or infinite values; the model diverged or the file is damaged",
            lambda s: s["fc.weight"].view(-1)[:1].fill_(float("nan")))
import_case("import-delta-head-without-map", "`hseval import --head riemann` without `--map` for Δ",
            "ckpt.pt: head 'riemann' needs head.delta of shape (13, 128) (one row per node of the tree, in its node "
            "order); pass --map head.delta=KEY for each of head.delta", lambda s: s.pop("fc.weight"),
            "--head", "riemann")


@case("import-planted-pickle", "import", "`hseval import` of a `.pt` pickle that would run `os.system`",
      "evil.pt: holds Python objects that a weights-only load refuses (it would call …system; a pickle can run "
      "code); hseval reads tensors only: save model.state_dict() with torch.save or as .safetensors")
def _(tmp, good):
    from tests.bad_inputs.builders import MARKER_NAME

    return import_cnn(tmp, good, write(tmp / "evil.pt", planted_pickle(tmp / MARKER_NAME)))


@case("import-not-a-checkpoint", "import", "`hseval import` of random bytes named `.pt`",
      "junk.pt: cannot be read as a PyTorch checkpoint (…); expected a state dict saved with torch.save, or a "
      ".safetensors file")
def _(tmp, good):
    return import_cnn(tmp, good, write(tmp / "junk.pt", np.random.default_rng(0).bytes(3000)))


@case("import-safetensors-garbage", "import", "`hseval import` of a text file named `.safetensors`",
      "junk.safetensors: not a readable safetensors file (…); expected tensors saved with safetensors")
def _(tmp, good):
    return import_cnn(tmp, good, write(tmp / "junk.safetensors", "not tensors\n"))


@case("import-not-tensors", "import", "`hseval import` of a training checkpoint whose top level mixes tensors and "
      "numbers", "ckpt.pt: 'epoch' is a int, not a tensor; expected a mapping of names to tensors (a state dict)")
def _(tmp, good):
    return import_cnn(tmp, good, foreign_cnn(tmp, good, lambda s: s.update({"epoch": 90})))


# ====================================================================== prediction files (models trained elsewhere)
def score_csv(path: Path, prefix: str, columns: int, target: int, value: str) -> Path:
    """A prediction CSV of one sample: ``target`` and ``columns`` score columns ``prefix_<i>``, each ``value``."""
    header = "target," + ",".join(f"{prefix}_{i}" for i in range(columns))
    return write(path, f"{header}\n{target}," + ",".join([value] * columns) + "\n")


def predictions(tmp: Path, good: Good, file: Path, *extra: str) -> list[str]:
    """`hseval evaluate --predictions FILE --hierarchy tree.txt --out ev`: ev must not appear."""
    from tests.helpers import fashion_tree

    write_hierarchy(fashion_tree(), tmp / "tree.txt")
    return ["evaluate", "--predictions", str(file), "--hierarchy", str(tmp / "tree.txt"), "--out", str(tmp / "ev"),
            "--projections", "none", *extra]


def npz(tmp: Path, edit=None, name: str = "p.npz") -> Path:
    """A good prediction file of 12 samples of the 10 Fashion-MNIST classes, changed by ``edit``."""
    rng = np.random.default_rng(0)
    arrays = {"targets": rng.integers(0, 10, 12), "logits": rng.normal(size=(12, 10))}
    if edit is not None:
        edit(arrays)
    np.savez(tmp / name, **arrays)
    return tmp / name


def predictions_case(id: str, input: str, expect: str, edit=None, *extra: str) -> None:
    case(id, "predictions", input, expect)(lambda tmp, good: predictions(tmp, good, npz(tmp, edit), *extra))


predictions_case("predictions-unknown-array", "`--predictions` .npz with `logit` for `logits`",
                 "p.npz: unknown array 'logit'; expected targets, logits, probs, level_scores_<k>, embeddings, "
                 "class_weights, node_weights", lambda a: a.update(logit=a.pop("logits")))
predictions_case("predictions-target-out-of-range", "`--predictions` with a target index 10 for 10 classes",
                 "p.npz: 'targets'[0] = 10 is not a class index 0..9 of the hierarchy",
                 lambda a: a["targets"].__setitem__(0, 10))
predictions_case("predictions-float-targets", "`--predictions` whose targets are floats",
                 "p.npz: 'targets' must hold integer class indices, got float64",
                 lambda a: a.update(targets=a["targets"].astype(float)))
predictions_case("predictions-wrong-columns", "`--predictions` logits of 9 columns for 10 classes",
                 "p.npz: 'logits' has shape (12, 9), expected (12, 10): 12 rows (one per sample) and 10 columns "
                 "(one per class)", lambda a: a.update(logits=a["logits"][:, :9]))
predictions_case("predictions-probs-not-summing", "`--predictions` probs whose rows sum to 2",
                 "p.npz: 'probs' row 0 sums to 2, not 1 (within 0.01), so these are not probabilities; save raw "
                 "scores as 'logits'",
                 lambda a: a.update(probs=np.full((12, 10), 0.2), logits=None) or a.pop("logits"))
predictions_case("predictions-nan", "`--predictions` logits holding a NaN",
                 "p.npz: 'logits' holds a NaN or infinite value (row 2); check the model's output",
                 lambda a: a["logits"].__setitem__((2, 3), np.nan))
predictions_case("predictions-features-beyond-float32", "`--predictions` class vectors with a value of 1e200",
                 "p.npz: 'class_weights' holds a value beyond float32's range ±3.4e+38 (row 4), which no layer of a "
                 "network gives; check how the file was written",
                 lambda a: a.update(class_weights=np.where(np.arange(10)[:, None] == 4, 1e200, np.ones((10, 4)))))
predictions_case("predictions-level-too-deep", "`--predictions` with `level_scores_3` (level 3 holds classes)",
                 "p.npz: 'level_scores_3': level 3 is not a super-class level of the hierarchy (1..2)",
                 lambda a: a.update(level_scores_3=np.zeros((12, 7))))
predictions_case("predictions-name-not-a-folder", "`--predictions` with `--name ../x`",
                 "--name '../x' cannot name a folder; use letters, digits, '-', '_' or '.' (not first), …",
                 None, "--name", "../x")


@case("predictions-object-array", "predictions", "`--predictions` .npz holding a pickled object array",
      "p.npz: holds Python objects (a pickle), which hseval never loads; save numeric arrays only")
def _(tmp, good):
    from tests.bad_inputs.builders import MARKER_NAME, Planted

    marker = Planted(tmp / MARKER_NAME)
    return predictions(tmp, good, npz(tmp, lambda a: a.update(logits=np.array([marker] * 12, dtype=object))))


@case("predictions-pickle-as-npz", "predictions", "`--predictions` a pickle named `.npz`",
      "p.npz: holds Python objects (a pickle), which hseval never loads; save numeric arrays only")
def _(tmp, good):
    from tests.bad_inputs.builders import MARKER_NAME

    return predictions(tmp, good, write(tmp / "p.npz", planted_pickle(tmp / MARKER_NAME)))


@case("predictions-pickle-suffix", "predictions", "`--predictions model.pkl`",
      "model.pkl: unknown kind of prediction file '.pkl'; give a .npz, .safetensors or .csv file (never a pickle)")
def _(tmp, good):
    return predictions(tmp, good, write(tmp / "model.pkl", b"\x80\x04N."))


@case("predictions-csv-unknown-name", "predictions", "prediction CSV naming a class `Sneakr`",
      "p.csv, line 3, column 'pred': 'Sneakr' is not a class of the hierarchy (did you mean 'Sneaker'?)")
def _(tmp, good):
    return predictions(tmp, good, write(tmp / "p.csv", "target,pred\nBag,Bag\nSneaker,Sneakr\n"))


@case("predictions-csv-ragged", "predictions", "prediction CSV with a row of one cell",
      "p.csv, line 3: 1 cells but the header has 2")
def _(tmp, good):
    return predictions(tmp, good, write(tmp / "p.csv", "target,pred\n1,1\n2\n"))


@case("predictions-csv-score-columns", "predictions", "prediction CSV with 9 score columns for 10 classes",
      "p.csv, line 1: score columns must be one kind (score_, logit_ or prob_) numbered 0..9, one per class; got 9 "
      "columns")
def _(tmp, good):
    return predictions(tmp, good, score_csv(tmp / "p.csv", "score", 9, 0, "0.1"))


@case("predictions-classes-incomplete", "predictions", "`--classes` listing 9 of the 10 classes",
      "classes.txt: lists 9 classes but the hierarchy has 10 (missing 'Bag'); give every class once, one per line, "
      "in the model's order")
def _(tmp, good):
    from tests.helpers import fashion_tree

    names = [n for n in fashion_tree().leaf_names if n != "Bag"]
    classes = write(tmp / "classes.txt", "".join(f"{n}\n" for n in names))
    return predictions(tmp, good, npz(tmp), "--classes", str(classes))


cli("predictions-without-hierarchy", "`--predictions p.npz` without `--hierarchy`",
    "--predictions needs --hierarchy TREE: the class tree the predictions are scored against",
    lambda tmp, good: ["evaluate", "--predictions", str(npz(tmp)), "--out", str(tmp / "ev")])
cli("predictions-and-runs", "run folders and `--predictions` together",
    "give run folders or --predictions, not both (got …); evaluate them in two commands with the same --out",
    lambda tmp, good: predictions(tmp, good, npz(tmp)) + [str(good.run)])
cli("evaluate-nothing", "`hseval evaluate --out ev` with no run",
    "give run folders to evaluate, or --predictions FILE --hierarchy TREE for a model trained elsewhere",
    lambda tmp, good: ["evaluate", "--out", str(tmp / "ev")])
cli("evaluate-run-with-hierarchy", "a run folder with `--hierarchy`",
    "--hierarchy applies only to --predictions or --model; a run carries its own tree and names",
    lambda tmp, good: ["evaluate", str(good.run), "--hierarchy", "tree.txt", "--out", str(tmp / "ev")])


@case("predictions-name-taken", "predictions", "`--predictions` with `--name` of an evaluated run in `--out`",
      "already holds the evaluation of …; choose another --name")
def _(tmp, good):
    out = Path(shutil.copytree(good.evaluation, tmp / "ev"))
    taken = next(p.name for p in sorted(out.iterdir()) if p.is_dir() and not p.name.startswith("."))
    return predictions(tmp, good, npz(tmp), "--name", taken)


# ====================================================================== issue 24: interoperability
hierarchy("isa-columns-swapped", "`child parent` name pairs (cvjena's NAB `hierarchy.txt`) read as isa",
          "tree.txt: node 'root' has two parents ('x' and 'y'); a hierarchy must be a tree; the columns look swapped "
          "(child parent): pass --format child-parent", "x root\ny root\n")
hierarchy("child-parent-columns-swapped", "`--format child-parent` on `parent child` name pairs",
          "tree.txt: node 'root' has two parents ('x' and 'y'); a hierarchy must be a tree; the columns look swapped "
          "(parent child): pass --format isa", "root x\nroot y\n", "tree.txt", "--format", "child-parent")
hierarchy("pairs-columns-swapped", "pairs: `parent child` index lines", "tree.txt, line 3: node 2 has two parents "
          "(0 on line 2 and 1); a hierarchy must be a tree; the columns look swapped (parent child): swap them, as "
          "pairs lines are 'child parent'", "2\n2 0\n2 1\n")


# ====================================================================== issue 24: tensor values, exports
import_case("import-negative-variance", "`hseval import` of a state dict whose BatchNorm `running_var` is below 0",
            "ckpt.pt: '1.running_var' holds a negative running variance (-0.5; a variance is never below 0); the "
            "model diverged or the file is damaged", lambda s: s["1.running_var"].__setitem__(0, -0.5))
run_case("negative-variance", "a BatchNorm running variance below 0, checksum updated", "run/model.safetensors: "
         "tensor 'backbone.body.1.running_var' holds a negative running variance (-0.5; a variance is never below 0); "
         "the run diverged or the file is damaged",
         lambda p: resave_tensors(p, lambda t: t["backbone.body.1.running_var"].__setitem__(0, -0.5)))


@case("export-nothing-to-export", "export", "`hseval export` of an evaluation whose one run has no embeddings",
      "ev: no evaluated run has embeddings to export (p: it holds no sampled embeddings (0 samples))")
def _(tmp, good):
    from hseval.cli.main import main

    assert main(predictions(tmp, good, npz(tmp))) == 0
    return ["export", str(tmp / "ev"), str(tmp / "tb"), "--to", "tensorboard"]


# ====================================================================== outputs planned before work (issue 24)
def fashion_tree_file(path: Path) -> Path:
    from tests.helpers import fashion_tree

    write_hierarchy(fashion_tree(), path)
    return path


def unmarked_run(tmp: Path, good: Good) -> Path:
    """The good run without hseval's marker (copied without its hidden files, say)."""
    run = copy_run(good, tmp)
    (run / ".hseval-folder.json").unlink()
    return run


@case("output-in-input-run", "outputs", "`hseval hierarchy induce RUN --out RUN/run.json`, RUN without its marker",
      "run/run.json: lies inside …run, an input of this command; write the output outside it (choose another --out)")
def _(tmp, good):
    run = unmarked_run(tmp, good)
    return ["hierarchy", "induce", str(run), "--out", str(run / "run.json")]


@case("evaluate-into-input-run", "outputs", "`hseval evaluate RUN --out RUN/eval`, RUN without its marker",
      "run/eval: lies inside …run, an input of this command; write the output outside it (choose another --out)")
def _(tmp, good):
    run = unmarked_run(tmp, good)
    return ["evaluate", str(run), "--data-root", str(good.fashion), "--out", str(run / "eval")]


@case("output-is-input-names", "outputs", "`hseval hierarchy convert tree.txt tree.txt.names.tsv` (its own names)",
      "tree.txt.names.tsv: is an input of this command; write the output to another OUTPUT")
def _(tmp, good):
    tree = fashion_tree_file(tmp / "tree.txt")
    return ["hierarchy", "convert", str(tree), f"{tree}.names.tsv", "--to", "nbdt"]


@case("output-names-are-a-folder", "outputs", "`hseval hierarchy convert … out.txt --to pairs` where "
      "`out.txt.names.tsv` is a folder", "out.txt.names.tsv: is a folder, where hseval writes a file beside out.txt; "
      "choose another OUTPUT")
def _(tmp, good):
    (tmp / "out.txt.names.tsv").mkdir()
    return ["hierarchy", "convert", str(fashion_tree_file(tmp / "tree.json")), str(tmp / "out.txt"), "--to", "pairs"]


@case("output-named-like-marker", "outputs", "an output file named `.hseval-folder.json`",
      "'.hseval-folder.json' is the name of hseval's own bookkeeping files; choose another OUTPUT")
def _(tmp, good):
    return ["hierarchy", "convert", str(fashion_tree_file(tmp / "tree.json")), str(tmp / "x" / ".hseval-folder.json"),
            "--to", "nbdt"]


@case("import-over-own-checkpoint", "ownership", "`hseval import RUN/model.safetensors --out RUN --force`",
      "run: holds …run/model.safetensors, an input of this command, which writing the output would remove; choose "
      "another --out")
def _(tmp, good):
    run = copy_run(good, tmp)
    return ["import", str(run / "model.safetensors"), "--backbone", "small-cnn", "--head", "plain", "--hierarchy",
            str(fashion_tree_file(tmp / "tree.json")), "--dataset", "fashion-mnist", "--force", "--out", str(run)]


@case("train-force-over-user-logs", "ownership", "`hseval train --force` into a run holding the user's "
      "`tensorboard/` logs", "run: holds 'tensorboard', which hseval did not write there, so it will not replace the "
      "folder; move it out or choose another --out")
def _(tmp, good):
    run = copy_run(good, tmp)
    write(run / "tensorboard" / "events.out.tfevents.1", "my logs")
    return ["train", "--data-root", str(good.fashion), "--quiet", "--force", "--out", str(run)]


@case("report-over-user-report", "ownership", "`hseval report EVAL` where EVAL holds the user's `report.md`",
      "eval: holds 'report.md', which hseval did not write there, so it will not write over it; move it out or "
      "choose another DIR")
def _(tmp, good):
    evaluation = Path(shutil.copytree(good.evaluation, tmp / "eval"))
    write(evaluation / "report.md", "# my notes")
    return ["report", str(evaluation)]


@case("evaluate-name-of-report", "outputs", "`--predictions` with `--name report.html`",
      "--name 'report.html' is the name of one of the evaluation folder's own files (index.json, …); choose another "
      "--name")
def _(tmp, good):
    return predictions(tmp, good, npz(tmp), "--name", "report.html")


# ====================================================================== recorded values are used values (issue 24)
cli("predictions-with-run-options", "`--predictions` with `--data-root X --device cuda:7` (used to be ignored)",
    "--data-root applies only to run folders or --model; a prediction file holds the model's outputs already",
    lambda tmp, good: predictions(tmp, good, npz(tmp), "--data-root", "X", "--device", "cuda:7"))
cli("run-with-scores", "a run folder with `--scores probs`", "--scores applies only to --predictions; a run "
    "carries its own tree and names", lambda tmp, good: ["evaluate", str(good.run), "--scores", "probs", "--out",
                                                         str(tmp / "ev")])
cli("train-setting-twice", "`--hierarchy a.txt` and `--set data.hierarchy=b.txt`", "data.hierarchy: --hierarchy "
    "and --set both set it; give each setting once",
    lambda tmp, good: fashion_train(tmp, good, "--hierarchy", "a.txt", "--set", "data.hierarchy=b.txt"))
cli("sweep-overrides-set", "`train-all --set optim.lr=0.1 --sweep optim.lr=0.2,0.3`", "optim.lr: --set and --sweep "
    "both set it; give each setting once",
    lambda tmp, good: ["train-all", "--data-root", str(good.fashion), "--set", "optim.lr=0.1", "--sweep",
                       "optim.lr=0.2,0.3", "--out", str(tmp / "runs")])
cli("threads-2-to-the-70", "`--set engine.threads=1180591620717411303424` (used to crash: OverflowError)",
    "--set: engine.threads must be <= 1024, got 1180591620717411303424",
    lambda tmp, good: fashion_train(tmp, good, "--set", "engine.threads=1180591620717411303424"))
cli("seed-beyond-32-bits", "`--set engine.seed=4294967296`", "--set: engine.seed must be <= 4294967295, got "
    "4294967296", lambda tmp, good: fashion_train(tmp, good, "--set", "engine.seed=4294967296"))
cli("head-option-infinite", "`--set model.head_options.level_weight=.inf` (used to train, then fail)",
    "--set: model.head_options.level_weight must be a finite number of at most 3.4e+38 in size, got inf",
    lambda tmp, good: fashion_train(tmp, good, "--head", "multitask", "--set", "model.head_options.level_weight=.inf"))
cli("hxe-alpha-negative", "`--head hxe --set model.head_options.alpha=-0.5`", "head 'hxe': option 'alpha' must "
    "be >= 0, got -0.5 (set head options with --set model.head_options.NAME=VALUE)",
    lambda tmp, good: fashion_train(tmp, good, "--head", "hxe", "--set", "model.head_options.alpha=-0.5"))
cli("hxe-alpha-1e6", "`--head hxe --set model.head_options.alpha=1e6` (used to be refused as 'must be a number': "
    "YAML 1.1 reads 1e6 as text)", "head 'hxe': option 'alpha' must be <= 80, got 1000000.0 (set head options with "
    "--set model.head_options.NAME=VALUE)",
    lambda tmp, good: fashion_train(tmp, good, "--head", "hxe", "--set", "model.head_options.alpha=1e6"))
cli("max-points-10-to-the-30", "`evaluate --max-points 10**30` (used to evaluate, then fail writing the marker: "
    "internal error)", "argument --max-points: expected a positive integer of at most 9007199254740991, got "
    "1000000000000000000000000000000 (see 'hseval evaluate --help')",
    lambda tmp, good: [*evaluate(good.run, tmp, good), "--max-points", str(10**30)])
cli("soft-labels-beta-zero", "`--head soft-labels --set model.head_options.beta=0`", "head 'soft-labels': "
    "option 'beta' must be > 0, got 0 (set head options with --set model.head_options.NAME=VALUE)",
    lambda tmp, good: fashion_train(tmp, good, "--head", "soft-labels", "--set", "model.head_options.beta=0"))
cli("nbdt-weight-nan", "`--head nbdt --set model.head_options.tree_weight=.nan`", "--set: "
    "model.head_options.tree_weight must be a finite number of at most 3.4e+38 in size, got nan",
    lambda tmp, good: fashion_train(tmp, good, "--head", "nbdt", "--set", "model.head_options.tree_weight=.nan"))


@case("peer-one-class-tree", "cli", "`--head soft-labels` on an image folder of one class and its tree",
      "head 'soft-labels' needs a tree of two classes or more: its targets are scaled by the largest distance between "
      "two classes, which is 0 here")
def _(tmp, good):
    root, tree = image_folder(tmp, classes=("a",))
    return ["train", "--head", "soft-labels", "--dataset", "image-folder", "--data-root", str(root), "--hierarchy",
            str(tree), "--backbone", "small-cnn", "--set", "data.batch_size=2", "--quiet", "--out", str(tmp / "r")]


predictions_case("predictions-logits-that-are-probabilities", "`--predictions` .npz whose `logits` are softmax "
                 "outputs", "p.npz: 'logits' hold probabilities, not logits (every row in [0, 1] sums to 1); save "
                 "softmax outputs as 'probs'", lambda a: a.update(logits=np.full((12, 10), 0.1)))
predictions_case("predictions-scores-contradict", "`--predictions` .npz of `probs` with `--scores logits`",
                 "p.npz: holds 'probs', but logits were declared (--scores logits); the array's name says what it "
                 "holds", lambda a: a.update(probs=np.full((12, 10), 0.1)) or a.pop("logits"), "--scores", "logits")


@case("predictions-csv-undeclared-scores", "predictions", "prediction CSV of softmax scores rounded to 4 decimals in "
      "`score_<i>` columns (used to be read as logits)", "p.csv, line 1: score_<i> columns do not say whether they "
      "hold logits or probabilities; name them logit_<i> or prob_<i>, or pass --scores logits or --scores probs")
def _(tmp, good):
    return predictions(tmp, good, score_csv(tmp / "p.csv", "score", 10, 3, "0.1000"))


@case("predictions-csv-probs-not-probabilities", "predictions", "prediction CSV with `prob_<i>` columns of logits",
      "p.csv, line 2: holds values outside [0, 1], so the prob_<i> columns are not probabilities; name the columns "
      "logit_<i>")
def _(tmp, good):
    return predictions(tmp, good, score_csv(tmp / "p.csv", "prob", 10, 3, "2.5"))


@case("train-state-history-entry", "run", "a `history` entry that is a string in train_state.pt, then `--resume` "
      "(used to crash: AttributeError)", "run/train_state.pt: 'history[0]' must be an object, got \"x\"; remove it to "
      "restart training from the beginning")
def _(tmp, good):
    import torch

    run = hseval_run_folder(tmp / "run", good)
    torch.save({"epoch": 1, "history": ["x"], "config": {}, "model": {}, "optimizers": {}, "rng": {}},
               run / "train_state.pt")
    return resume(run, tmp, good)


# ====================================================== a reused run is checked against what made it (issue 36)
def _small_cnn_file(path: Path, seed: int) -> Path:
    """A small CNN's state dict, as another code base saves it (its layers and an ``fc``)."""
    import torch

    from hseval.nn.backbones import create_backbone

    torch.manual_seed(seed)
    body = create_backbone("small-cnn", in_channels=1).body
    weights = dict(body.named_parameters())
    state = {k: v + torch.randn_like(v) if k in weights else v for k, v in body.state_dict().items()}
    torch.save({**state, "fc.weight": torch.randn(7, 128), "fc.bias": torch.randn(7)}, path)
    return path


def _small_runs(tmp: Path, data: Path, *extra: str) -> list[str]:
    from hseval.cli.main import main

    argv = ["train-all", "--heads", "plain", "--data-root", str(data), "--backbone", "small-cnn", "--quiet", "--set",
            "optim.epochs=1", "--set", "data.train_subset=64", "--set", "data.batch_size=32", "--set",
            "data.test_subset=50", *extra]
    assert main(argv) == 0
    return [*argv, "--resume"]


@case("init-changed-under-resume", "run", "`train-all --init w.pt --set model.freeze_backbone=true --resume` after "
      "w.pt was overwritten with other weights (used to keep the run: 'reusing it')", "runs/plain: a finished run that "
      "--resume cannot reuse: it was trained from …w.pt with SHA-256 …, the file now has …; restore the file, train "
      "it again with --force, or choose another --out")
def _(tmp, good):
    init = _small_cnn_file(tmp / "w.pt", seed=0)
    argv = _small_runs(tmp, good.fashion, "--init", str(init), "--set", "model.freeze_backbone=true", "--out",
                       str(tmp / "runs"))
    _small_cnn_file(init, seed=1)
    return argv


@case("probe-images-changed-under-resume", "run", "`train-all --probe --resume` after the images under the same "
      "`--data-root` changed (used to keep the runs and reuse the cached features)", "probes/plain: a finished run "
      "that --resume cannot reuse: it was trained on other images: the data under …fashion had SHA-256 …, it now has "
      "…; restore the data, train it again with --force, or choose another --out")
def _(tmp, good):
    from tests.helpers import write_fashion_like

    data = write_fashion_like(tmp / "fashion")
    argv = _small_runs(tmp, data, "--probe", "--out", str(tmp / "probes"))
    write_fashion_like(data, seed=1)
    return argv


def _validated_run(tmp: Path, good: Good, change: str) -> list[str]:
    """`hseval evaluate RUN --split val` of a run that held out a validation split, on a copy of its
    data changed as ``change`` says (:data:`tests.helpers.DATA_CHANGES`): EVAL must not appear."""
    from hseval.cli.main import main
    from tests.helpers import changed_fashion_like

    assert main(["train", "--head", "plain", "--data-root", str(good.fashion), "--backbone", "small-cnn", "--quiet",
                 "--set", "optim.epochs=1", "--set", "data.batch_size=32", "--set", "data.val_fraction=0.2",
                 "--out", str(tmp / "run")]) == 0
    data = changed_fashion_like(good.fashion, tmp / "fashion", change)
    return ["evaluate", str(tmp / "run"), "--data-root", str(data), "--split", "val", "--out", str(tmp / "eval"),
            "--projections", "none", "--quiet"]


@case("val-pixels-changed", "run", "`evaluate RUN --split val --data-root D` where D holds the run's training images "
      "with other pixels, the same count and labels (used to report a 'validation' accuracy on images the run trained "
      "on, exit 0)", "run: --split val: the data under …fashion is not the data the run was trained on (its images "
      "or labels changed: SHA-256 … then, … now), so its validation images are not the ones the run held out; "
      "evaluate on the data it was trained on (--data-root)")
def _(tmp, good):
    return _validated_run(tmp, good, "pixels")


@case("val-label-changed", "run", "`evaluate RUN --split val --data-root D` where one training label differs in D",
      "run: --split val: the data under …fashion is not the data the run was trained on (its images or labels "
      "changed: …), so its validation images are not the ones the run held out; evaluate on the data it was trained "
      "on (--data-root)")
def _(tmp, good):
    return _validated_run(tmp, good, "a label")


# ================================================== numbers within range, messages that point right (issue 36)
run_case("run-seed-10-to-the-400", "run.json: `seed` 10^400, checksum updated (used to be evaluated, then `hseval "
         "report` died: OverflowError)", "run/run.json: 'seed' must be <= 9007199254740991, got "
         "1000000000000000000000000000000000000...", lambda p: edit_meta(p, lambda m: m.update(seed=10**400)))
run_case("run-nan-learning-rate", "run.json: `training.optim.lr` NaN, checksum updated (used to be recorded as None)",
         "run/run.json: 'training.optim.lr' must be a finite number, got NaN",
         lambda p: edit_meta(p, lambda m: m["training"]["optim"].update(lr=float("nan"))))


@case("report-samples-10-to-the-400", "dashboard", "`hseval report` with `samples: 10**400` in metrics.json, checksums "
      "updated (used to crash: OverflowError)", "eval: no readable evaluated run (…/eval/run/metrics.json: 'samples' "
      "must be <= 9007199254740991, got 1000000000000000000000000000000000000...; re-run 'hseval evaluate')")
def _(tmp, good):
    def edit(run: Path) -> None:
        (run / "metrics.json").write_text(json.dumps({**json.loads((run / "metrics.json").read_text()),
                                                      "samples": 10**400}))

    return ["report", str(_only_run_damaged(tmp, good, edit, sealed=True))]


@case("init-third-convolution-misshapen", "run", "`train --init` whose third convolution takes 48 channels where the "
      "small CNN's takes 64 (used to blame 'the file's first convolution' and the data's channels)",
      "cnn.pt: '8.weight' has shape (128, 48, 3, 3) but backbone 'small-cnn' (in_channels=1, small_stem=…) needs "
      "(128, 64, 3, 3) for body.8.weight")
def _(tmp, good):
    import torch

    from hseval.nn.backbones import create_backbone

    state = dict(create_backbone("small-cnn", in_channels=1).body.state_dict())
    state["8.weight"] = torch.zeros(128, 48, 3, 3)
    torch.save(state, tmp / "cnn.pt")
    return ["train", "--data-root", str(good.fashion), "--backbone", "small-cnn", "--init", str(tmp / "cnn.pt"),
            "--quiet", "--set", "optim.epochs=1", "--out", str(tmp / "run")]


@case("predictions-npz-damaged-stream", "predictions", "`--predictions` of np.savez_compressed with a byte changed in "
      "the compressed logits (used to blame the model's output after two numpy warnings)",
      "p.npz: is damaged: 'logits' does not read back as it was saved (…); copy the file again, or save it again")
def _(tmp, good):
    import zipfile

    rng = np.random.default_rng(0)
    np.savez_compressed(tmp / "p.npz", targets=rng.integers(0, 10, 2000), logits=rng.normal(size=(2000, 10)))
    data = bytearray((tmp / "p.npz").read_bytes())
    info = zipfile.ZipFile(tmp / "p.npz").getinfo("logits.npy")
    data[info.header_offset + 30 + len(info.filename) + 20 + info.compress_size // 2] ^= 0x5A
    (tmp / "p.npz").write_bytes(bytes(data))
    return predictions(tmp, good, tmp / "p.npz")


def _chain_pairs(levels: int, *, leaf_each: bool = False) -> str:
    """A pairs file: classes 0 and 1 under a chain of ``levels`` super-classes (each also over a
    class of its own where ``leaf_each``: merging single-child chains then leaves it as deep)."""
    leaves = 2 + (levels - 1) * leaf_each
    supers = [leaves + k for k in range(levels)]
    lines = [f"0 {supers[0]}", f"1 {supers[0]}"] + [f"{supers[k - 1]} {supers[k]}" for k in range(1, levels)]
    lines += [f"{1 + k} {supers[k]}" for k in range(1, levels)] if leaf_each else []
    return f"{len(lines)}\n" + "\n".join(lines) + "\n"


hierarchy("chain-2000-levels", "pairs: two classes under a chain of 2,000 super-classes (the advice to merge chains "
          "did not work: `convert --merge-chains` refused it with the same line)", "tree.txt: the tree is 2000 levels "
          "deep (limit 1000), 2 once its single-child chains are merged: merge them with hseval hierarchy convert "
          "--merge-chains", _chain_pairs(2000))
hierarchy("deep-after-merging-chains", "pairs: 1,500 levels of super-classes that each hold a class, `convert "
          "--merge-chains`", "tree.txt: the tree is 1500 levels deep with its single-child chains merged (limit 1000); "
          "check the parent links", _chain_pairs(1500, leaf_each=True), "tree.txt", "--merge-chains")


# ====================================================================== every output planned (issue 36)
@case("evaluate-user-file-in-last-evaluation", "ownership", "`evaluate base/runs --out eval` with the user's "
      "`notes.txt` in `eval/riemann`, the last run's evaluation (used to evaluate and replace the runs before it, "
      "then refuse)", "…eval/riemann: holds 'notes.txt', which hseval did not write there, so it will not replace the "
      "folder; move it out or choose another --out")
def _(tmp, good):
    from hseval.cli.main import main

    for name in ("plain", "riemann"):
        shutil.copytree(good.run, tmp / "base" / "runs" / name)
    argv = ["evaluate", str(tmp / "base" / "runs"), "--data-root", str(good.fashion), "--projections", "none",
            "--quiet", "--out", str(tmp / "eval")]
    assert main(argv) == 0
    write(tmp / "eval" / "riemann" / "notes.txt", "mine")
    return argv


# ============================================ values no one could mean, messages in the format (issue 36)
cli("slurm-mem-negative", "`train-all --launcher slurm --dry-run --slurm-mem -4` (used to print `--mem=-4GB`)",
    "argument --slurm-mem: expected a number of GB from 0.001 to 1000000, got -4 (see 'hseval train-all --help')",
    lambda tmp, good: ["train-all", "--heads", "plain", "--launcher", "slurm", "--dry-run", "--slurm-mem", "-4",
                       "--out", str(tmp / "runs")])
cli("slurm-mem-nan", "`train-all --launcher slurm --dry-run --slurm-mem nan` (used to print `--mem=nanGB`)",
    "argument --slurm-mem: expected a number of GB from 0.001 to 1000000, got nan (see 'hseval train-all --help')",
    lambda tmp, good: ["train-all", "--heads", "plain", "--launcher", "slurm", "--dry-run", "--slurm-mem", "nan",
                       "--out", str(tmp / "runs")])
cli("sweep-value-unchecked", "`train-all --heads plain --sweep model.head_options.radius_decay=0.5,abc` (used to "
    "train plain once, `abc` never checked)", "head 'manifold': option 'radius_decay' must be a number, got 'abc' "
    "(given by --sweep model.head_options.radius_decay)",
    lambda tmp, good: ["train-all", "--data-root", str(good.fashion), "--heads", "plain", "--sweep",
                       "model.head_options.radius_decay=0.5,abc", "--out", str(tmp / "runs")])
cli("sweep-value-advises-set", "`train-all --heads riemann --sweep model.head_options.radius_decay=0.5,abc` (the "
    "error advised --set)", "head 'riemann': option 'radius_decay' must be a number, got 'abc' (given by --sweep "
    "model.head_options.radius_decay)",
    lambda tmp, good: ["train-all", "--data-root", str(good.fashion), "--heads", "riemann", "--sweep",
                       "model.head_options.radius_decay=0.5,abc", "--out", str(tmp / "runs")])
hierarchy("nbdt-duplicate-id", "nbdt: one node id listed twice with two labels (used to read, one label dropped)",
          "tree.json: nodes[3] has the id 'm' of nodes[1]; list each node once",
          '{"nodes": [{"id": "r"}, {"id": "m", "label": "mammal"}, {"id": "a"}, {"id": "m", "label": "marine"}, '
          '{"id": "b"}], "links": [{"source": "r", "target": "m"}, {"source": "m", "target": "a"}, '
          '{"source": "r", "target": "b"}]}', "tree.json")


# ============================================ a frozen backbone stored once, by reference (issue 36, disk)
def _probe_run(tmp: Path, good: Good) -> tuple[Path, Path]:
    """A probe run (``train-all --probe``, frozen small CNN from ``w.pt``): its run.json refers to w.pt."""
    init = _small_cnn_file(tmp / "w.pt", seed=0)
    _small_runs(tmp, good.fashion, "--init", str(init), "--probe", "--out", str(tmp / "probes"))
    return tmp / "probes" / "plain", init


def _evaluate(run: Path, tmp: Path, good: Good) -> list[str]:
    return ["evaluate", str(run), "--out", str(tmp / "eval"), "--data-root", str(good.fashion), "--quiet"]


@case("referred-backbone-changed", "run", "`evaluate` a probe run after the `--init` file its frozen backbone is read "
      "from was overwritten with other weights", "…w.pt: changed since the run …probes/plain was trained from it "
      "(SHA-256 … then, … now), and the run reads its frozen backbone from it: put the file it was trained from back, "
      "or train the run again with 'hseval train --set engine.self_contained=true' to store the backbone in it")
def _(tmp, good):
    run, init = _probe_run(tmp, good)
    _small_cnn_file(init, seed=1)
    return _evaluate(run, tmp, good)


@case("referred-backbone-missing", "run", "`evaluate` a probe run whose `--init` file (its frozen backbone) is gone "
      "(a run folder moved to another machine without it)", "…w.pt: missing; the run …probes/plain reads its frozen "
      "backbone from this file (SHA-256 …): copy the file there, or train the run again with 'hseval train --set "
      "engine.self_contained=true' to store the backbone in it")
def _(tmp, good):
    run, init = _probe_run(tmp, good)
    init.unlink()
    return _evaluate(run, tmp, good)


def _predict(tmp: Path, weights: Path, model: str = "torchvision:resnet18", *extra: str) -> list[str]:
    root, tree = image_folder(tmp, classes=("a", "b", "c"), per_class=1)
    return ["predict", "--model", model, "--weights", str(weights), "--dataset", "image-folder", "--data-root",
            str(root), "--hierarchy", str(tree), "--device", "cpu", "--quiet", *extra, "--out", str(tmp / "p.npz")]


def _resnet18(path: Path, classes: int = 3) -> Path:
    import torch
    import torchvision

    torch.save(torchvision.models.resnet18(num_classes=classes).state_dict(), path)
    return path


@case("predict-weights-of-another-model", "pretrained", "`predict --model torchvision:resnet34` given the weights of "
      "a resnet18", "…r18.pt: has no tensor for layer1.2.conv1.weight of shape (64, 64, 3, 3); it is not a state dict "
      "of torchvision:resnet34 (torchvision and timm name their tensors differently)")
def _(tmp, good):
    return _predict(tmp, _resnet18(tmp / "r18.pt"), "torchvision:resnet34")


@case("predict-outputs-not-the-classes", "pretrained", "`predict` of a 1,000-way model on an image folder of 3 "
      "classes without `--classes`", "torchvision:resnet18 has 1,000 outputs but image-folder has 3 classes; pass "
      "--classes FILE, the model's class names (one per output, in its order)")
def _(tmp, good):
    return _predict(tmp, _resnet18(tmp / "r18.pt", classes=1000))


@case("predict-classes-missing-one", "pretrained", "`predict --classes` naming the model's 4 outputs, none of them "
      "class `c`", "torchvision:resnet18's outputs have no class 'c' of image-folder (1 of its 3 classes are missing); "
      "the model was not trained on these classes")
def _(tmp, good):
    names = write(tmp / "names.txt", "a\nb\nx\ny\n")
    return _predict(tmp, _resnet18(tmp / "r18.pt", classes=4), "torchvision:resnet18", "--classes", str(names))


@case("predict-pickled-weights", "pretrained", "`predict --weights` a `.pt` pickle that would run a command",
      "…w.pt: holds Python objects that a weights-only load refuses (it would call posix.system; a pickle can run "
      "code); hseval reads tensors only: save model.state_dict() with torch.save or as .safetensors")
def _(tmp, good):
    from tests.bad_inputs.builders import MARKER_NAME

    return _predict(tmp, write(tmp / "w.pt", planted_pickle(tmp / MARKER_NAME)))


# ====================================================================== one split per folder, choosing on it (issue 46)
def _evaluated(tmp: Path, good: Good, folder: str, *names_and_options: str, split: str = "val") -> Path:
    """Prediction files (each ``name`` or ``name:dataset``) evaluated on ``split`` into ``tmp / folder``."""
    from hseval.cli.main import main

    for spec in names_and_options:
        name, _, dataset = spec.partition(":")
        argv = predictions(tmp, good, npz(tmp, name=f"{name}.npz"), "--split", split, "--name", name,
                           *(["--dataset", dataset] if dataset else []))
        argv[argv.index("--out") + 1] = str(tmp / folder)
        assert main(argv) == 0, argv
    return tmp / folder


@case("evaluate-another-split", "outputs", "`evaluate --predictions p.npz --split val --out EVAL` where EVAL holds "
      "test evaluations (used to replace or sit beside them, unsaid)", "…eval: it holds evaluations of the test split "
      "(run), and this is of the validation split; an evaluation folder holds one split: choose another --out (e.g. "
      "eval-validation)")
def _(tmp, good):
    evaluation = Path(shutil.copytree(good.evaluation, tmp / "eval"))
    argv = predictions(tmp, good, npz(tmp), "--split", "val")
    argv[argv.index("--out") + 1] = str(evaluation)
    return argv


@case("select-on-test", "cli", "`select EVAL` of a test evaluation", "…eval: holds an evaluation of the test split; "
      "choose on a validation evaluation ('hseval evaluate RUNS --split val --out DIR'): a setting chosen on the test "
      "split makes its test numbers look better than they are")
def _(tmp, good):
    evaluation = Path(shutil.copytree(good.evaluation, tmp / "eval"))
    return ["select", str(evaluation), "--metric", "top1", "--out", str(tmp / "s.json")]


@case("select-unknown-metric", "cli", "`select VAL --metric accuracy`", "unknown metric 'accuracy'; choose top1, "
      "top5, level1_from_leaf, …")
def _(tmp, good):
    return ["select", str(_evaluated(tmp, good, "val", "a")), "--metric", "accuracy", "--out", str(tmp / "s.json")]


@case("select-metric-absent", "cli", "`select VAL --metric level1_own_scores` where no run has own scores",
      "metric 'level1_own_scores': none of the 1 run(s) has it (e.g. a head without own super-class scores, or a "
      "decoding rule "
      "its evaluation did not run)")
def _(tmp, good):
    return ["select", str(_evaluated(tmp, good, "val", "a")), "--metric", "level1_own_scores", "--out",
            str(tmp / "s.json")]


@case("select-two-datasets", "cli", "`select VAL` of runs of two datasets", "…val: holds runs of 2 datasets (x, y); "
      "choose among the runs of one dataset")
def _(tmp, good):
    return ["select", str(_evaluated(tmp, good, "val", "a:x", "b:y")), "--metric", "top1", "--out",
            str(tmp / "s.json")]


def _selection(tmp: Path, good: Good) -> Path:
    from hseval.cli.main import main

    assert main(["select", str(_evaluated(tmp, good, "val", "a")), "--metric", "top1", "--out",
                 str(tmp / "s.json")]) == 0
    return tmp / "s.json"


@case("report-selection-on-its-split", "cli", "`report VAL --selection s.json` on the split it chose on",
      "--selection …s.json: it was chosen on this evaluation's split (validation); report the chosen runs on the "
      "test split (an evaluation folder of the test split)")
def _(tmp, good):
    return ["report", str(tmp / "val"), "--selection", str(_selection(tmp, good))]


@case("report-selection-runs-absent", "cli", "`report TEST --selection s.json` whose runs TEST does not hold",
      "--selection …s.json: 1 chosen run(s) are not evaluated in …test (…a.npz); evaluate them there with 'hseval "
      "evaluate RUNS --out DIR'")
def _(tmp, good):
    selection = _selection(tmp, good)
    return ["report", str(_evaluated(tmp, good, "test", "b", split="test")), "--selection", str(selection)]


# ====================================================================== the README table
def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table() -> str:
    lines = ["| # | area | id | bad input | expected message (`hseval: error: …`, exit code 2, nothing written) |",
             "|---|---|---|---|---|"]
    for k, c in enumerate(CASES, start=1):
        lines.append(f"| {k} | {c.area} | `{c.id}` | {_cell(c.input)} | `{_cell(c.expect)}` |")
    return "\n".join(lines) + "\n"


def readme_table() -> str:
    return read_block("catalogue", README).strip("\n") + "\n"


def write_readme() -> None:
    """The table into this folder's README.md, and its number of rows into the project's README."""
    write_block("catalogue", table(), README)
    write_block("bad-inputs-count", f"{len(CASES)}")


if __name__ == "__main__":
    write_readme()
