"""`python -m env.lint`: `snakemake --lint`, less the lints that do not apply to this project.

Snakemake 9's command line ignores `--lint json`, so the text report is parsed: blocks headed
`Lints for rule R (line N, FILE):` or `Lints for snakefile FILE:`, each with items `    * TITLE:`.
Exit status 1 when any lint is left, with one line per lint (where, what); 0 otherwise.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
import subprocess
import sys
from dataclasses import dataclass
from typing import Sequence

# Lints that do not apply here, each with the reason. Everything else fails env/test.
IGNORED = {
    "Specify a conda environment or container for each rule.":
        "the toolchain of every rule comes from env/shell or `nix develop` (one pinned environment), "
        "not from per-rule conda environments or containers",
    "Mixed rules and functions in same snakefile.":
        "each stage keeps its rules and the small input functions they use in its one rules.smk "
        "(the layout of design.md); the stage's logic itself lives in importable Python modules",
}

_HEADER = re.compile(r"^Lints for (?P<kind>rule|snakefile) (?P<what>.+):$")
_ITEM = re.compile(r"^    \* (?P<title>.+?):?$")


@dataclass(frozen=True)
class Lint:
    where: str
    title: str

    def __str__(self) -> str:
        return f"{self.where}: {self.title}"


def parse(report: str) -> list[Lint]:
    """The lints of a `snakemake --lint` text report, in order."""
    lints: list[Lint] = []
    where = None
    for line in report.splitlines():
        header = _HEADER.match(line)
        if header:
            where = f"{header['kind']} {header['what']}"
            continue
        item = _ITEM.match(line)
        if item and where is not None:
            lints.append(Lint(where, item["title"]))
    return lints


def remaining(lints: Sequence[Lint]) -> list[Lint]:
    return [lint for lint in lints if lint.title not in IGNORED]


def main(argv: Sequence[str] | None = None) -> int:
    snakemake = shutil.which("snakemake")  # the shell's; the Nix shell has no snakemake module in its Python
    cmd = [*([snakemake] if snakemake else [sys.executable, "-m", "snakemake"]), "--lint", *(sys.argv[1:] if argv is None else argv)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    report = proc.stdout + proc.stderr
    lints = parse(report)
    if proc.returncode != 0 and not lints:
        # not a lint report: Snakemake itself failed (syntax error, config error, ...)
        sys.stderr.write(report)
        return proc.returncode or 1
    left = remaining(lints)
    ignored = len(lints) - len(left)
    for lint, count in Counter(left).items():  # Snakemake repeats a lint for each use
        print(f"lint: {lint}" + (f" ({count}x)" if count > 1 else ""))
    print(f"snakemake --lint: {len(left)} lints ({ignored} ignored as not applicable, see env/lint.py)")
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
