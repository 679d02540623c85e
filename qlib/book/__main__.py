import sys

from .cli import main

if __name__ == "__main__":  # guarded: Dask's worker processes re-import the main module when they start
    sys.exit(main())
