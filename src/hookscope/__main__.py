"""``python -m hookscope``: the ``hookscope`` command."""

from __future__ import annotations

from hookscope.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
