"""``python -m autograph``: the same command line as the ``autograph`` script."""

from autograph.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
