"""Every Python block of README.md runs, in order and in one namespace, as a reader would run them
one after the other. The names a block takes from the reader's own code (their class names,
features, model and test loader, each named in README's text) are given here, small and real: the
model is torchvision's resnet18, as README's prediction-file example says."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
TREE = "animal/dog/husky\nanimal/dog/beagle\nanimal/cat\nvehicle/car\n"


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 3 and all("import" in block for block in BLOCKS)


def test_every_python_block_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tree.txt").write_text(TREE, encoding="utf-8")
    images, labels = torch.randn(20, 3, 32, 32), torch.tensor([0, 1, 2, 3] * 5)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=4)
    namespace = {"my_class_names": ["husky", "beagle", "cat", "car"], "features": torch.randn(6, 512),
                 "model": model, "test_loader": torch.utils.data.DataLoader(
                     torch.utils.data.TensorDataset(images, labels), batch_size=8)}
    for number, block in enumerate(BLOCKS, start=1):
        try:
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
        except Exception as exc:  # the block and the reason, not this test's frame
            pytest.fail(f"README's python block {number} fails: {type(exc).__name__}: {exc}")
    assert namespace["logits"].shape == (6, 4) and set(namespace["superclass_logits"]) == {1, 2}
    saved = np.load(tmp_path / "preds.npz")
    assert saved["logits"].shape == (20, 4) and saved["embeddings"].shape == (20, 512)
    with torch.no_grad():  # the snippet's logits are the model's own: its body is everything but fc
        np.testing.assert_allclose(saved["logits"], model(images).numpy(), rtol=1e-5, atol=1e-5)
    result = namespace["result"]
    assert result["samples"] == 20 and 0 <= result["top1"] <= 1
    assert capsys.readouterr().out.strip()  # the last block prints its metrics
