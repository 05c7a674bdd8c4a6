"""python -m nvte_doctor ARGS: the same as the nvte-doctor command."""
import sys

from nvte_doctor import main

sys.exit(main())
