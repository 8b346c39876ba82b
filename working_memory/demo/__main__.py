"""`python -m working_memory.demo`: run the delivery demo."""

import sys

from working_memory.demo.demo import main

sys.exit(main())
