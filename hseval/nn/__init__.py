"""The model: heads (a registry, one module per head), backbones, the classifier that joins them,
and the radius guard that checks a sphere head's logit scale. The heads are the public part:
``from hseval.nn import create_head``."""

from hseval.nn.heads import Head, create_head, head_options, list_heads

__all__ = ["Head", "create_head", "head_options", "list_heads"]
