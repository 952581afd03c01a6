"""Run every ``bench/bench_*.py`` module's ``main()`` in turn, as ``make bench`` does.

Each module is imported by path and its ``main()`` called with no arguments; a module fails
when importing it or calling ``main()`` raises, or when ``main()`` returns non-zero. Every
module runs even after a failure; the exit status is 1 when any failed.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parent


def _load(path: Path) -> ModuleType:
    name = f"_hookscope_bench_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before executing: dataclasses and pickling look the module up by name.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run(path: Path) -> int:
    try:
        module = _load(path)
        main = getattr(module, "main", None)
        if not callable(main):
            print(f"{path.name}: has no main()", file=sys.stderr)
            return 1
        status = main()
    except SystemExit as exit_:
        status = exit_.code
    except Exception:
        traceback.print_exc()
        return 1
    if status is None or status == 0:
        return 0
    return status if isinstance(status, int) else 1


def main() -> int:
    """Run the benchmarks; 0 when all succeed, 1 otherwise."""
    paths = sorted(BENCH_DIR.glob("bench_*.py"))
    if not paths:
        print(f"no bench_*.py in {BENCH_DIR}", file=sys.stderr)
        return 1
    failed: list[str] = []
    for path in paths:
        print(f"=== {path.name}", flush=True)
        status = _run(path)
        if status:
            failed.append(f"{path.name} (exit {status})")
        print(flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"all {len(paths)} benchmarks ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
