"""`python -m admin ...`: the `fedgen-lab` command (admin/cli.py)."""

import sys

from admin.cli import main

sys.exit(main())
