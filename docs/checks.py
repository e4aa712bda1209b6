"""`python -m docs.checks [--readme PATH]`: README.md stays a guide, and the docs' relative links resolve.

README rules (`readme_problems`):
- at most MAX_README_BYTES bytes;
- tables only with the headers in ALLOWED_TABLES (the profiles, the folder map, and the AWS estimate that
  testbeds/aws/plan.py computes and testbeds/aws/tests/test_plan.py compares with the README);
- no measured quantity typed by hand: outside code, the AWS estimate table and the values quoted from
  docs/measurements.yaml (`<!-- m:ID.KEY -->…<!-- /m -->`), no number followed by a unit of time, size or rate,
  no percentage and no dollar amount.
Links (`link_problems`): every relative link in the given markdown files names an existing file, and its
`#anchor` (or a same-page `#anchor`) names a heading of the target markdown file (GitHub's slugs).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_README_BYTES = 12 * 1024
PROFILES_HEADER = "| profile | what it runs | on what | how long |"
FOLDERS_HEADER = "| path | what |"
AWS_ESTIMATE_HEADER = "| fleet | study | servers | clients | runs | hours | instance-hours | on-demand cost |"
ALLOWED_TABLES = (PROFILES_HEADER, FOLDERS_HEADER, AWS_ESTIMATE_HEADER)

FENCE_RE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
CODE_RE = re.compile(r"`[^`\n]*`")
QUOTED_RE = re.compile(r"<!-- m:[a-z0-9-]+\.\w+ -->.*?<!-- /m -->")
UNITS = r"(?:ms|s|sec|seconds?|min|minutes?|h|hours?|days?|[KMGT]i?B|msg/s|e/s|MB/s)"
QUANTITY_RE = re.compile(rf"(?<![\w.+-])[+−-]?\d[\d.,  ]*\s?(?:{UNITS}\b|%)|\$\s?\d")
LINK_RE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def tables(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of every markdown table outside fenced code."""
    text = FENCE_RE.sub(lambda m: "\n" * m[0].count("\n"), text)
    out, cur = [], None
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("|"):
            if cur is None:
                cur = (n, [])
                out.append(cur)
            cur[1].append(line.strip())
        else:
            cur = None
    return out


def readme_problems(text: str, name: str = "README.md") -> list[str]:
    out = []
    size = len(text.encode("utf-8"))
    if size > MAX_README_BYTES:
        out.append(f"{name}: {size} bytes, more than {MAX_README_BYTES}; move detail to a page under docs/")
    exempt = set()
    for n, rows in tables(text):
        if rows[0] not in ALLOWED_TABLES:
            out.append(f"{name}:{n}: a table with the header {rows[0][:80]!r}; README.md holds only the profiles, "
                       f"the folder map and the AWS estimate (measurements: docs/measurements.yaml)")
        if rows[0] == AWS_ESTIMATE_HEADER:
            exempt.update(range(n, n + len(rows)))
    scan = FENCE_RE.sub(lambda m: "\n" * m[0].count("\n"), text)
    for n, line in enumerate(scan.splitlines(), 1):
        if n in exempt:
            continue
        bare = CODE_RE.sub("", QUOTED_RE.sub("", line))
        m = QUANTITY_RE.search(bare)
        if m:
            out.append(f"{name}:{n}: measured quantity {m[0].strip()!r} typed by hand; quote it from "
                       f"docs/measurements.yaml (<!-- m:ID.KEY -->…<!-- /m -->) or move it to a docs page")
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (word characters, hyphens and spaces
    kept), spaces to hyphens."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    text = FENCE_RE.sub("", text)
    seen: dict[str, int] = {}
    out = set()
    for m in HEADING_RE.finditer(text):
        s = slug(m[2])
        k = seen.get(s, 0)
        seen[s] = k + 1
        out.add(s if k == 0 else f"{s}-{k}")
    return out


def link_problems(files: list[Path], root: Path = ROOT, texts: dict | None = None) -> list[str]:
    """`texts` may give a file's text in place of what is on disk (the same links, checked from that place)."""
    out = []
    for f in files:
        raw = (texts or {}).get(f)
        raw = f.read_text(encoding="utf-8") if raw is None else raw
        text = CODE_RE.sub("", FENCE_RE.sub("", raw))
        name = f.relative_to(root) if f.is_relative_to(root) else f
        for target in LINK_RE.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (f.parent / path).resolve() if path else f
            if not dest.exists():
                out.append(f"{name}: link ({target}): no such file {path}")
                continue
            if anchor and dest.suffix == ".md":
                dest_text = raw if dest == f else dest.read_text(encoding="utf-8")
                if anchor not in anchors(dest_text):
                    out.append(f"{name}: link ({target}): no heading #{anchor} in {path or name}")
    return out


def doc_files(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def main(argv: list[str]) -> int:
    """Check README.md (or, with --readme PATH, that file as if it were README.md) and the docs pages."""
    readme = ROOT / "README.md"
    path = Path(argv[argv.index("--readme") + 1]) if "--readme" in argv else readme
    text = path.read_text(encoding="utf-8")
    out = readme_problems(text, str(path))
    out += link_problems(doc_files(), texts={readme: text})
    print("\n".join(out) if out else f"{path}: a guide; links resolve")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
