import random

import pytest

from analysis import hdr


def hist(values, digits=3):
    h = hdr.Histogram(1, 3_600_000_000, digits)
    for v in values:
        h.record(v)
    return h


def test_exact_values_below_bucket_resolution():
    h = hist(range(1, 101))  # 1..100, exact with 3 digits
    assert h.total == 100
    assert [h.value_at_percentile(p) for p in (1, 50, 90, 99, 100)] == [1, 50, 90, 99, 100]
    assert h.mean() == pytest.approx(50.5)
    assert h.max() == 100


def test_large_values_within_precision():
    h = hist([1_000_000, 2_000_000, 3_000_000])
    assert h.value_at_percentile(50) == pytest.approx(2_000_000, rel=1e-3)
    assert h.value_at_percentile(100) >= 3_000_000


def test_roundtrip_encode_decode():
    r = random.Random(7)
    h = hist([r.randint(1, 10_000_000) for _ in range(5000)])
    h2 = hdr.decode(hdr.encode(h))
    assert h2.counts == h.counts and h2.digits == 3


def test_merge_is_a_sum_not_an_average():
    a, b = hist([10] * 99), hist([1000])
    m = a.add(b)
    assert m.total == 100 and m.value_at_percentile(99) == 10 and m.value_at_percentile(100) == 1000
    with pytest.raises(hdr.HdrError):
        a.add(hist([1], digits=2))


def test_garbage_rejected():
    with pytest.raises(hdr.HdrError):
        hdr.decode(b"\x00\x01\x02\x03\x00\x00\x00\x00")


# Made with Java HdrHistogram 2.2.2 (the runner's library): Recorder(3), values 1000, 2000, … 100000 µs and one
# 5 000 000 µs, getIntervalHistogram().encodeIntoCompressedByteBuffer(buf, 9), Base64. Java printed
# getValueAtPercentile(50/90/99/99.9/100) = 51007, 91007, 100031, 5001215, 5001215; mean 99500.29702970297.
JAVA_B64 = ("HISTFAAAAFh42pNpmSzMwMBwhwECmKE0I5is///f/gNE4Dw/01l+pqkcTE/ZmRayMH1khqLlTEzfGbGglYxM1UyVeHA2kzUQ2oJJ8mhd"
            "JmkmWSBEkOTwL0YxAQBeaimW")


def test_decodes_the_java_encoding_like_java():
    h = hdr.decode(JAVA_B64)
    assert h.total == 101
    assert [h.value_at_percentile(p) for p in (50, 90, 99, 99.9, 100)] == [51007, 91007, 100031, 5001215, 5001215]
    assert h.mean() == pytest.approx(99500.29702970297)
    assert h.max() == 5001215
