"""`python -m worker [flags]`: start a worker (worker/main.py; `fedgen-lab worker` runs the same)."""

import sys

from worker.main import main

sys.exit(main())
