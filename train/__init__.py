"""The training layer (installed as ``hseval.train``): typed configs and YAML recipes, the engine
(CPU, GPU, DDP, resume) and many runs into one folder; the commands are :mod:`hseval.cli.train`'s."""
