"""python -m kasoku: the command line (kasoku.cli)."""

import sys

from kasoku.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
