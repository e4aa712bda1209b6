import pytest

from analysis.tests.paths import MANIFEST, MIRROR


@pytest.fixture(scope="session")
def mirror():
    if not (MIRROR / "results").is_dir():
        pytest.fail(f"study 000 mirror not found at {MIRROR} (../shared/published/streamnative-2020)")
    return MIRROR


@pytest.fixture(scope="session")
def published_tables(mirror):
    """Ingest of the 124 published files (no local runs), in memory."""
    from analysis import ingest
    return ingest.build(mirror, MANIFEST, None)
