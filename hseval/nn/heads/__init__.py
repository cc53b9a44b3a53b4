"""Last layers (heads): a registry and one module per head.

Example
-------
>>> import torch
>>> from hseval.nn.heads import create_head, list_heads
>>> from hseval.tree.hierarchy import Hierarchy
>>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["car"]])
>>> list_heads()[:5]
['plain', 'multitask', 'hierarchy', 'manifold', 'manifold-learnable-radius']
>>> head = create_head("riemann", tree, in_features=16, radius=1.0, radius_decay=0.5)
>>> head(torch.randn(4, 16)).shape  # one logit per class (leaf)
torch.Size([4, 3])
>>> create_head("riemann", tree, in_features=16, radius_decay=0.5, decay=0.5)
Traceback (most recent call last):
    ...
hseval.core.errors.ConfigError: head 'riemann' has no option 'decay'; its options are: radius, radius_decay
"""

import warnings

# geoopt compiles helpers with torch.jit.script at import, which torch now warns about
warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*deprecated", category=FutureWarning)

# registration order is the order of list_heads(): the paper's table, then ablations, then comparison
from hseval.nn.heads import plain  # noqa: E402, I001
from hseval.nn.heads import multitask  # noqa: E402
from hseval.nn.heads import delta  # noqa: E402
from hseval.nn.heads import manifold  # noqa: E402
from hseval.nn.heads import riemann  # noqa: E402
from hseval.nn.heads import hyperbolic  # noqa: E402
from hseval.nn.heads.base import Head, create_head, head_class, head_options, list_heads, register_head  # noqa: E402

__all__ = ["Head", "create_head", "head_class", "head_options", "list_heads", "register_head",
           "plain", "multitask", "delta", "manifold", "riemann", "hyperbolic"]
