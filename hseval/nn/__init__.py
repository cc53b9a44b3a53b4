"""The model: heads (a registry, one module per head), backbones, the classifier that joins them,
and the radius guard that checks a sphere head's logit scale."""
