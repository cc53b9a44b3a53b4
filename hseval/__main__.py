import sys

from hseval.cli import main

sys.exit(main())
