"""The training package: typed configs and YAML recipes, the training engine (CPU, GPU, DDP,
resume) and the ``train`` / ``train-all`` commands. It depends on :mod:`hseval`, never the reverse."""
