"""Stanford Dogs' tree by the paper's rule (Appendix C.3): a breed belongs to the family named at the
end of its name (English/Irish/Gordon setter → setter).

The precise rule used here: the family is the last ``_``-separated word of the breed (the folder
name after its ``<wnid>-`` prefix), lower-cased; a breed alone in its family (Chihuahua, beagle)
keeps a family of its own, as CUB's one-species groups do. This gives 78 families
(11 with several breeds: terrier 18, spaniel 7, dog 5, retriever 5, hound 3, poodle 3,
schnauzer 3, setter 3, collie 2, mastiff 2, sheepdog 2), so |L| = 120 and |P| = 198. The paper
reports |L| = 121 and |P| = 194, which its text does not let one reproduce.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hseval.core.errors import HierarchyError
from hseval.tree.builders.packaged import read_table
from hseval.tree.hierarchy import Hierarchy

__all__ = ["stanford_dogs_classes", "stanford_dogs_family", "stanford_dogs_hierarchy"]


def stanford_dogs_classes() -> list[str]:
    """The 120 official class folders (``<wnid>-<breed>``) in label order (sorted by wnid)."""
    return [name for _, name in read_table("stanford_dogs_classes.txt")]


def stanford_dogs_family(class_name: str) -> str:
    """``n02100735-English_setter`` → ``setter``; ``n02085620-Chihuahua`` → ``chihuahua``."""
    breed = re.sub(r"^n\d+-", "", class_name.strip())
    family = breed.split("_")[-1].lower() if breed else ""
    if not family:
        raise HierarchyError(f"Stanford Dogs class {class_name!r} has no breed name to group it by")
    return family


def stanford_dogs_hierarchy(class_names: Sequence[str] | None = None) -> Hierarchy:
    """Breeds (leaves, in the given order) under their families (in order of first appearance).

    Parameters
    ----------
    class_names : sequence of str, length |L|, optional
        Class folder names ``<wnid>-<breed>`` (default: the official 120).
    """
    names = stanford_dogs_classes() if class_names is None else list(class_names)
    return Hierarchy.from_groups(names, [(stanford_dogs_family(name),) for name in names],
                                 source="Stanford Dogs class names")
