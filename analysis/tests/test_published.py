import shutil

import pytest

from analysis import InputError, published
from analysis.tests.paths import MANIFEST


def test_git_blob_sha1():
    # `printf hello | git hash-object --stdin`
    assert published.git_blob_sha1(b"hello") == "b6fc4c620b67d95f953a5c1c1230aaab5db5a1b0"


def test_fetch_from_mirror(mirror, tmp_path):
    out = tmp_path / "data" / "published" / "streamnative-2020"
    assert published.fetch(MANIFEST, out, mirror=mirror) == 124
    assert len(list((out / "results").rglob("*.json"))) == 124
    assert [p.name for p in out.parent.iterdir()] == ["streamnative-2020"]  # no staging left


def test_bad_checksum_leaves_nothing(mirror, tmp_path):
    bad = tmp_path / "mirror"
    shutil.copytree(mirror / "results", bad / "results")
    victim = bad / "results/latency/sync/kafka-100-partitions-1kb-batched-1ms-1mb-ack-1-sync.json"
    data = bytearray(victim.read_bytes())
    data[100] = ord("7") if data[100] != ord("7") else ord("8")
    victim.write_bytes(bytes(data))
    out = tmp_path / "out" / "streamnative-2020"
    with pytest.raises(InputError) as e:
        published.fetch(MANIFEST, out, mirror=bad)
    assert str(victim) in str(e.value) and "blob_sha1" in str(e.value)
    assert not out.exists() and list((tmp_path / "out").iterdir()) == []


def test_missing_file_named(mirror, tmp_path):
    bad = tmp_path / "mirror"
    shutil.copytree(mirror / "results", bad / "results")
    victim = bad / "results/single_partition/kafka-1-partitions-1kb-batched-1ms-1mb-ack-1-sync.json"
    victim.unlink()
    with pytest.raises(InputError, match="kafka-1-partitions-1kb-batched-1ms-1mb-ack-1-sync.json"):
        published.fetch(MANIFEST, tmp_path / "o" / "x", mirror=bad)


def test_cli_exit_code(mirror, tmp_path, capsys):
    assert published.main(["--manifest", str(MANIFEST), "--out", str(tmp_path / "x"), "--mirror", str(tmp_path / "nope")]) == 2
    assert "nope: mirror directory not found and no --url-base" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_cli_prefers_an_existing_mirror_and_falls_back_to_the_url(mirror, tmp_path, capsys):
    out = tmp_path / "a"
    assert published.main(["--manifest", str(MANIFEST), "--out", str(out), "--mirror", str(mirror),
                           "--url-base", "https://unreachable.invalid/"]) == 0
    assert capsys.readouterr().out.startswith(f"source: mirror {mirror}")
    out = tmp_path / "b"
    assert published.main(["--manifest", str(MANIFEST), "--out", str(out), "--mirror", str(tmp_path / "nope"),
                           "--url-base", mirror.as_uri() + "/"]) == 0
    assert "(mirror " + str(tmp_path / "nope") + " not found)" in capsys.readouterr().out
    assert len(list(out.rglob("*.json"))) == 124


def test_fetch_by_url(mirror, tmp_path):
    """The download path (url_base + source_path), exercised offline with a file:// base URL."""
    out = tmp_path / "dl" / "streamnative-2020"
    assert published.fetch(MANIFEST, out, url_base=mirror.as_uri() + "/") == 124
    assert (out / "results" / "latency" / "sync").is_dir()
