"""One sample of a split as a picture to show: uint8 pixels as the dataset holds them, before any
normalisation or augmentation (what the dashboard puts beside a selected point)."""

from __future__ import annotations

import numpy as np
from PIL import Image

from hseval.core.errors import ConfigError
from hseval.data.base import ImageFiles, LoadedDataset, TensorImages

__all__ = ["sample_image"]


def sample_image(data: LoadedDataset, split: str, index: int) -> np.ndarray:
    """Image ``index`` of ``data``'s ``split`` as uint8, (H, W) for grey images, (H, W, 3) for colour.

    An in-memory split gives its stored pixels, a split of files the decoded file; any other split
    gives its (normalised) tensor mapped back through the dataset's mean and std."""
    part = data.split(split)
    if not 0 <= index < len(part):
        raise ConfigError(f"sample {index} is outside the {split} split of {data.name} (0..{len(part) - 1})")
    if isinstance(part, TensorImages):
        pixels = part.images[index].numpy()
    elif isinstance(part, ImageFiles):
        with Image.open(part.paths[index]) as image:
            return np.asarray(image.convert(part.mode), dtype=np.uint8)
    else:
        tensor = part[index][0].detach().cpu().numpy().astype(np.float64)
        mean = np.asarray(data.mean, dtype=np.float64).reshape(-1, 1, 1)
        std = np.asarray(data.std, dtype=np.float64).reshape(-1, 1, 1)
        pixels = np.clip(np.rint((tensor * std + mean) * 255), 0, 255).astype(np.uint8)
    return pixels[0] if pixels.shape[0] == 1 else np.moveaxis(pixels, 0, -1)
