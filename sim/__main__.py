"""`python -m sim SCENARIO`: the same as `dispatch simulate SCENARIO`."""

import sys

from sim.cli import main

main(sys.argv[1:])
