from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MIRROR = (REPO / ".." / "shared" / "published" / "streamnative-2020").resolve()
MANIFEST = REPO / "analysis" / "published" / "streamnative-2020.tsv"
REFERENCE = REPO / "data" / "reference" / "studies.csv"
STUDY_TABLES = REPO / "analysis" / "published" / "study000-tables.csv"
