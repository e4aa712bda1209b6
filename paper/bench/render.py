"""Time the paper render (target: <= 60 s on the 2-core machine); prints each run and the median.

    .venv/bin/python paper/bench/render.py [--runs 3] [--renderer pandoc] [--fake]

Uses the real analysis outputs in paper/{figures,tables,_variables.yml} when they exist (else, or with
--fake, the test fixture's fake outputs), copied to a temp folder so the repository's paper/_build is
left alone. Each run is the whole step the `paper` rule runs: prepare + expand + HTML + typst PDF.
"""

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "hw-probes")]

from paper import render  # noqa: E402
from paper.ids import FIGURE_IDS, TABLE_IDS  # noqa: E402
from paper.tests.conftest import copy_sources, make_paper  # noqa: E402

TARGET_S = 60.0


def real_outputs_exist(paper: Path) -> bool:
    need = [paper / "_variables.yml", *(paper / "tables" / f"{t}.md" for t in TABLE_IDS)]
    need += [paper / "figures" / f"{i}.{ext}" for i in FIGURE_IDS for ext in ("svg", "json")]
    return all(p.exists() for p in need)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--renderer", default="pandoc", choices=["auto", "quarto", "pandoc"])
    ap.add_argument("--fake", action="store_true", help="use fake figures/tables even if real ones exist")
    args = ap.parse_args()
    src = ROOT / "paper"
    use_real = not args.fake and real_outputs_exist(src)
    times = []
    with tempfile.TemporaryDirectory(prefix="paper-bench-") as tmp:
        if use_real:
            paper = Path(tmp) / "paper"
            paper.mkdir()
            copy_sources(src, paper)
            for sub in ("figures", "tables"):
                shutil.copytree(src / sub, paper / sub)
            shutil.copy(src / "_variables.yml", paper / "_variables.yml")
        else:
            paper = make_paper(Path(tmp))
        durability = ROOT / "systems" / "durability.yaml"
        for i in range(args.runs):
            t0 = time.perf_counter()
            outs = render.render(paper, renderer=args.renderer, durability=durability)
            dt = time.perf_counter() - t0
            times.append(dt)
            size = outs["pdf"].stat().st_size / 1e6
            print(f"run {i + 1}: {dt:.2f} s (pdf {size:.1f} MB)", flush=True)
    med = statistics.median(times)
    print(f"paper render ({'real analysis outputs' if use_real else 'fake outputs'}, {args.renderer}): "
          f"median {med:.2f} s over {len(times)} runs; target <= {TARGET_S:.0f} s: "
          f"{'met' if med <= TARGET_S else 'MISSED'} ({med / TARGET_S:.2f} of target)")
    return 0 if med <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
