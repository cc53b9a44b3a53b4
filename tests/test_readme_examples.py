"""Every Python block of README.md runs, in order and in one namespace, as a reader would run them
one after the other. The names a block takes from the reader's own code (their class names,
features, model and test loader, each named in README's text) are given here, small and real."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
TREE = "animal/dog/husky\nanimal/dog/beagle\nanimal/cat\nvehicle/car\n"


class Model(nn.Module):
    """A reader's model: ``features`` then ``fc``, as README's prediction-file example assumes."""

    def __init__(self, classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3), nn.AdaptiveAvgPool2d(2))
        self.fc = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x).flatten(1))


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 3 and all("import" in block for block in BLOCKS)


def test_every_python_block_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tree.txt").write_text(TREE, encoding="utf-8")
    images, labels = torch.randn(20, 1, 8, 8), torch.tensor([0, 1, 2, 3] * 5)
    namespace = {"my_class_names": ["husky", "beagle", "cat", "car"], "features": torch.randn(6, 512),
                 "model": Model(4), "test_loader": torch.utils.data.DataLoader(
                     torch.utils.data.TensorDataset(images, labels), batch_size=8)}
    for number, block in enumerate(BLOCKS, start=1):
        try:
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
        except Exception as exc:  # the block and the reason, not this test's frame
            pytest.fail(f"README's python block {number} fails: {type(exc).__name__}: {exc}")
    assert namespace["logits"].shape == (6, 4) and set(namespace["superclass_logits"]) == {1, 2}
    assert np.load(tmp_path / "preds.npz")["logits"].shape == (20, 4)
    result = namespace["result"]
    assert result["samples"] == 20 and 0 <= result["top1"] <= 1
    assert capsys.readouterr().out.strip()  # the last block prints its metrics
