import sys

from hseval.cli.main import main

sys.exit(main())
