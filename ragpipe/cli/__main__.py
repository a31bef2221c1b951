"""`python -m ragpipe.cli`: the `ragpipe` command."""

import sys

from ragpipe.cli import main

if __name__ == "__main__":
    sys.exit(main())
