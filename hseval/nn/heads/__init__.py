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

# registration order is the order of list_heads(): the paper's table, ablations and comparison, then the peers
from hseval.nn.heads import plain  # noqa: I001
from hseval.nn.heads import multitask
from hseval.nn.heads import delta
from hseval.nn.heads import manifold
from hseval.nn.heads import riemann
from hseval.nn.heads import hyperbolic
from hseval.nn.heads import hxe  # the peers: the hierarchy-aware methods of other papers
from hseval.nn.heads import soft_labels
from hseval.nn.heads import barz_denzler
from hseval.nn.heads import nbdt
from hseval.nn.heads.base import GROUPS, HEADS, Head, create_head, list_heads, register_head

__all__ = ["GROUPS", "HEADS", "Head", "create_head", "list_heads", "register_head",
           "plain", "multitask", "delta", "manifold", "riemann", "hyperbolic", "hxe", "soft_labels", "barz_denzler",
           "nbdt"]
