"""`python -m working_memory.bench`: the core benchmark (`make bench`)."""

from working_memory.bench.core import main

raise SystemExit(main())
