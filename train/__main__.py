"""``python -m hseval.train train|train-all ...``: the hseval training commands, e.g. under
``torchrun --nproc_per_node N -m hseval.train train ...``."""

import sys

from hseval.cli.main import main

sys.exit(main(sys.argv[1:]))
