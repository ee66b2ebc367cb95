"""`python -m fedgen ...` is the `fedgen` command."""

import sys

from fedgen.cli import main

sys.exit(main())
