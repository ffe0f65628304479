"""Where the efficacy benches find `shared/efficacy/dev.jsonl` when no path is given.

The sample lies beside the project (`../shared/efficacy/dev.jsonl`). A git worktree elsewhere
(a checkout under /tmp to compare two heads) has no `../shared`: then the sample beside the main
checkout the worktree belongs to is used.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELATIVE = Path("shared") / "efficacy" / "dev.jsonl"


def default_cases() -> Path:
    """`../shared/efficacy/dev.jsonl` of this checkout, or of the main checkout of its worktree."""
    here = ROOT.parent / RELATIVE
    if here.exists():
        return here
    try:
        common = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
                                capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return here
    main = Path(common).parent  # <main checkout>/.git -> <main checkout>
    beside = main.parent / RELATIVE
    return beside if beside.exists() else here
