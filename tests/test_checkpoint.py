"""The run format: save -> load gives the same model; every broken run gives a clear error."""

from __future__ import annotations

import json
import pickle

import pytest
import torch

from hseval.core.errors import RunFormatError
from hseval.io.run_format import (
    META_FILE,
    MODEL_FILE,
    SCHEMA_VERSION,
    STATE_FILE,
    load_run,
    load_train_state,
    meta_checksum,
    read_run_meta,
    save_run,
    save_train_state,
)
from hseval.nn.backbones import BACKBONES
from hseval.nn.heads import list_heads
from hseval.nn.model import build_model
from tests.helpers import by_weight, fashion_tree

SIZE = 16


def make_model(head="riemann", backbone="small-cnn", **head_config):
    spec = {"backbone": {"name": backbone, "config": {"in_channels": 1, "image_size": SIZE}},
            "head": {"name": head, "config": head_config}}
    return build_model(spec, fashion_tree())


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("runs") / "run"
    model = make_model()
    save_run(path, model, {"dataset": {"name": "fashion-mnist", "class_names": list(fashion_tree().leaf_names)}})
    return path


def copy_run(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


# every head on the small CNN, every backbone under the plain head and the head with the most state
# (a learnable radius per node): a head's tensors do not depend on the backbone under it
ROUND_TRIPS = [(head, "small-cnn") for head in list_heads()] + \
    [by_weight(head, backbone, backbone=backbone) for backbone in BACKBONES.names() if backbone != "small-cnn"
     for head in ("plain", "riemann-learnable-radius")]


@pytest.mark.parametrize(("head", "backbone"), ROUND_TRIPS)
def test_round_trip_gives_bit_identical_logits(tmp_path, head, backbone):
    model = make_model(head, backbone).eval()
    x = torch.randn(2, 1, SIZE, SIZE)
    model.train()
    loss, _ = model.head.loss(model.embed(x), torch.tensor([0, 9]))
    loss.backward()  # forward/backward on CPU
    model.eval()
    with torch.no_grad():
        before = model(x)
    save_run(tmp_path / "run", model, {"seed": 0})
    run = load_run(tmp_path / "run")
    assert run.head_name == head and not run.model.training
    with torch.no_grad():
        after = run.model(x)
    assert torch.equal(before, after)
    assert run.hierarchy == fashion_tree()


def test_run_json_is_self_contained(run_dir):
    meta = json.loads((run_dir / META_FILE).read_text())
    assert meta["schema_version"] == SCHEMA_VERSION
    assert meta["model"]["head"] == {"name": "riemann", "config": {"radius": 1.0, "radius_decay": 0.5}}
    assert meta["hierarchy"]["num_leaves"] == 10 and len(meta["hierarchy"]["names"]) == 13
    assert set(meta["versions"]) >= {"torch", "geoopt", "python"}
    assert len(meta["model_sha256"]) == 64
    assert sorted(p.name for p in run_dir.iterdir()) == [MODEL_FILE, META_FILE]


def test_load_on_another_device_string(run_dir):
    assert next(load_run(run_dir, device="cpu").model.parameters()).device.type == "cpu"


def _edit_meta(path, edit, *, reseal=True):
    """Edit run.json; ``reseal`` updates its metadata checksum, to reach the checks behind it."""
    meta = json.loads((path / META_FILE).read_text())
    edit(meta)
    if reseal and isinstance(meta, dict) and "meta_sha256" in meta:
        meta["meta_sha256"] = meta_checksum(meta)
    (path / META_FILE).write_text(json.dumps(meta))


def _swap_leaves(meta):
    names = meta["hierarchy"]["names"]
    names[0], names[1] = names[1], names[0]
    classes = meta["dataset"]["class_names"]
    classes[0], classes[1] = classes[1], classes[0]


def _move_class(meta):
    """Move class 0 under the parent of class 9 (a super-class with the same node count)."""
    meta["hierarchy"]["parents"][0] = meta["hierarchy"]["parents"][9]


def _resave_tensors(path, edit):
    """Change the tensors and keep the checksum valid, to reach the checks behind it."""
    import hashlib

    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path / MODEL_FILE))
    edit(tensors)
    save_file(tensors, str(path / MODEL_FILE))
    digest = hashlib.sha256((path / MODEL_FILE).read_bytes()).hexdigest()
    _edit_meta(path, lambda m: m.update(model_sha256=digest))


def _set_head(meta, name):
    meta["model"]["head"] = {"name": name, "config": {}}


BROKEN = {
    "no folder": (lambda p: __import__("shutil").rmtree(p), r"no such run folder"),
    "no run.json": (lambda p: (p / META_FILE).unlink(), r"not a run folder \(no run.json\)"),
    "no tensors": (lambda p: (p / MODEL_FILE).unlink(), r"model.safetensors: missing; the run is incomplete"),
    "truncated tensors": (lambda p: (p / MODEL_FILE).write_bytes((p / MODEL_FILE).read_bytes()[:1000]),
                          r"does not match the checksum in run.json \(truncated, tampered"),
    "tampered tensors": (lambda p: (p / MODEL_FILE).write_bytes(
        (p / MODEL_FILE).read_bytes()[:-8] + b"\x00" * 8), r"does not match the checksum"),
    "pickle planted": (lambda p: (p / MODEL_FILE).write_bytes(pickle.dumps({"a": 1})), r"does not match the checksum"),
    "run.json not JSON": (lambda p: (p / META_FILE).write_text("{oops"),
                          r"run.json, line 1: run.json is not valid JSON"),
    "run.json a list": (lambda p: (p / META_FILE).write_text("[]"), r"expected a JSON object, got list"),
    "newer schema": (lambda p: _edit_meta(p, lambda m: m.update(schema_version=99)),
                     rf"run.json: 'schema_version': 99 is newer than this hseval understands \({SCHEMA_VERSION}\); "
                     r"upgrade hseval"),
    "old schema": (lambda p: _edit_meta(p, lambda m: m.update(schema_version=0)),
                   r"unknown schema version 0 \(this hseval reads 2\)"),
    "schema 1": (lambda p: _edit_meta(p, lambda m: m.update(schema_version=1)), r"unknown schema version 1"),
    "no schema": (lambda p: _edit_meta(p, lambda m: m.pop("schema_version")), r"run.json: no 'schema_version'"),
    "wrong type": (lambda p: _edit_meta(p, lambda m: m["model"]["head"].update(name=3)),
                   r"run.json: 'model.head.name' must be a string, got 3"),
    "missing key": (lambda p: _edit_meta(p, lambda m: m.pop("hierarchy")), r"run.json: no 'hierarchy'"),
    "unknown key": (lambda p: _edit_meta(p, lambda m: m.update(notes="x")), r"run.json: unknown key 'notes'"),
    "seed of the wrong type": (lambda p: _edit_meta(p, lambda m: m.update(seed="0")),
                               r"run.json: 'seed' must be an integer, got \"0\""),
    "bad hierarchy": (lambda p: _edit_meta(p, lambda m: m["hierarchy"].update(parents=[0] * 13)),
                      r"'hierarchy': .*cycle"),
    "unknown head": (lambda p: _edit_meta(p, lambda m: _set_head(m, "nope")),
                     r"cannot rebuild the model: unknown head 'nope'"),
    "head does not match tensors": (lambda p: _edit_meta(p, lambda m: _set_head(m, "multitask")),
                                    r"has no tensor 'head.classifier.weight' that head 'multitask'"),
    "unknown head option": (lambda p: _edit_meta(p, lambda m: m["model"]["head"]["config"].update(foo=1)),
                            r"head 'riemann' has no option 'foo'"),
    "wrong shape": (lambda p: _edit_meta(p, lambda m: m["model"]["backbone"]["config"].update(embedding_dim=4)),
                    r"has no tensor 'backbone.bottleneck.weight'"),
    "class list mismatch": (lambda p: _edit_meta(p, lambda m: m["dataset"].update(class_names=["a"])),
                            r"'dataset.class_names' must be the 10 leaves of 'hierarchy' in class order"),
    "class names swapped, hierarchy not": (
        lambda p: _edit_meta(p, lambda m: m["dataset"]["class_names"].reverse()),
        r"'dataset.class_names' must be the 10 leaves of 'hierarchy' in class order"),
    # edits that keep the file consistent are caught by the checksum of the metadata
    "two leaves swapped": (lambda p: _edit_meta(p, _swap_leaves, reseal=False),
                           r"run.json: was edited after training \(its checksum 'meta_sha256' no longer matches\)"),
    "class moved to another super-class": (lambda p: _edit_meta(p, _move_class, reseal=False),
                                           r"run.json: was edited after training"),
    "head option edited": (lambda p: _edit_meta(p, lambda m: m["model"]["head"]["config"].update(radius=2.0),
                                                reseal=False), r"run.json: was edited after training"),
    "history edited": (lambda p: _edit_meta(p, lambda m: m.update(seed=7), reseal=False),
                       r"run.json: was edited after training"),
    "checksum removed": (lambda p: _edit_meta(p, lambda m: m.pop("meta_sha256"), reseal=False),
                         r"run.json: no 'meta_sha256'"),
    "NaN weights": (lambda p: _resave_tensors(p, lambda t: t["head.delta"].fill_(float("nan"))),
                    r"tensor 'head.delta' holds NaN or infinite values"),
    "shape changed": (lambda p: _resave_tensors(p, lambda t: t.update({"head.delta": torch.zeros(13, 7)})),
                      r"tensor 'head.delta' has shape \(13, 7\) but run.json's model needs \(13, 128\)"),
    "extra tensor": (lambda p: _resave_tensors(p, lambda t: t.update({"evil": torch.zeros(1)})),
                     r"tensor 'evil' is not part of head 'riemann'"),
    "dtype changed": (lambda p: _resave_tensors(p, lambda t: t.update({"head.delta": t["head.delta"].double()})),
                      r"tensor 'head.delta' is torch.float64, expected torch.float32"),
    "garbage with valid checksum": (lambda p: _resave_garbage(p), r"not a valid safetensors file"),
}


def _resave_garbage(path):
    import hashlib

    (path / MODEL_FILE).write_bytes(pickle.dumps([1, 2, 3]))
    digest = hashlib.sha256((path / MODEL_FILE).read_bytes()).hexdigest()
    _edit_meta(path, lambda m: m.update(model_sha256=digest))


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_runs_give_clear_errors(run_dir, tmp_path, case):
    breaker, message = BROKEN[case]
    path = copy_run(run_dir, tmp_path / "copy")
    breaker(path)
    with pytest.raises(RunFormatError, match=message):
        load_run(path)


def test_save_run_writes_every_file_with_the_same_permissions(run_dir):
    modes = {p.name: p.stat().st_mode & 0o777 for p in run_dir.iterdir() if not p.name.startswith(".")}
    assert len(set(modes.values())) == 1, modes


def test_read_run_meta_checks_without_tensors(run_dir, tmp_path):
    path = copy_run(run_dir, tmp_path / "copy")
    (path / MODEL_FILE).unlink()
    assert read_run_meta(path)["model"]["head"]["name"] == "riemann"


def test_train_state_round_trip_and_planted_pickle(tmp_path):
    state = {"epoch": 3, "history": [{"epoch": k, "train_loss": 1.0 / k} for k in (1, 2, 3)], "config": {},
             "model": {"w": torch.ones(2)}, "optimizers": {"sgd": {"lr": 0.1}}, "rng": {"torch": torch.get_rng_state()}}
    save_train_state(tmp_path, state)
    loaded = load_train_state(tmp_path)
    assert loaded["epoch"] == 3 and torch.equal(loaded["rng"]["torch"], state["rng"]["torch"])

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    torch.save({"x": Evil()}, tmp_path / STATE_FILE)
    with pytest.raises(RunFormatError, match=r"train_state.pt: cannot be read as a training state"):
        load_train_state(tmp_path)
    with pytest.raises(RunFormatError, match=r"nothing to resume"):
        load_train_state(tmp_path / "nowhere")
