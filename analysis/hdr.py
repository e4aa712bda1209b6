"""HdrHistogram V2 (compressed) codec in pure Python, merge and percentiles.

Encoding (HdrHistogram's `encodeIntoCompressedByteBuffer`): 4-byte cookie 0x1c849304, 4-byte length, then a
zlib stream holding the V2 record: cookie 0x1c849303, payload length, normalizing index offset, significant
digits (int32 each), lowest / highest trackable value (int64), int-to-double ratio (float64), then the counts as
ZigZag LEB128 varints where a negative number -n means n empty buckets. All big-endian.
"""
from __future__ import annotations

import base64
import math
import struct
import zlib
from dataclasses import dataclass, field

V2_COOKIE = 0x1C849303
V2_COMPRESSED_COOKIE = 0x1C849304


class HdrError(ValueError):
    pass


@dataclass
class Histogram:
    lowest: int = 1
    highest: int = 3_600_000_000
    digits: int = 3
    counts: dict[int, int] = field(default_factory=dict)  # bucket index -> count

    # --- bucket geometry -------------------------------------------------------------------------
    @property
    def unit_magnitude(self) -> int:
        return int(math.floor(math.log2(self.lowest)))

    @property
    def sub_half_mag(self) -> int:
        largest = 2 * 10 ** self.digits
        return max(int(math.ceil(math.log2(largest))), 1) - 1

    def value_from_index(self, i: int) -> int:
        shm = self.sub_half_mag
        half = 1 << shm
        bucket = (i >> shm) - 1
        sub = (i & (half - 1)) + half
        if bucket < 0:
            sub -= half
            bucket = 0
        return sub << (bucket + self.unit_magnitude)

    def index_of(self, value: int) -> int:
        um, shm = self.unit_magnitude, self.sub_half_mag
        sub_count_mag = shm + 1
        mask = ((1 << sub_count_mag) - 1) << um
        leading = 64 - (value | mask).bit_length()
        bucket = 64 - um - leading - sub_count_mag
        # bucket may be 0 and value small: sub index within [0, subBucketCount)
        sub = value >> (bucket + um)
        half = 1 << shm
        return ((bucket + 1) << shm) + (sub - half)

    def range_size(self, i: int) -> int:
        v = self.value_from_index(i)
        j = self.index_of(v)
        bucket = (j >> self.sub_half_mag) - 1
        return 1 << (max(bucket, 0) + self.unit_magnitude)

    def highest_equivalent(self, i: int) -> int:
        return self.value_from_index(i) + self.range_size(i) - 1

    def median_equivalent(self, i: int) -> float:
        return self.value_from_index(i) + (self.range_size(i) >> 1)

    # --- recording, merging, statistics ----------------------------------------------------------
    def record(self, value: int, count: int = 1) -> None:
        if value < 0:
            raise HdrError(f"negative value {value}")
        i = self.index_of(int(value))
        self.counts[i] = self.counts.get(i, 0) + count

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def add(self, other: "Histogram") -> "Histogram":
        """Merge (sum counts); both must share the bucket geometry."""
        if (self.lowest, self.digits) != (other.lowest, other.digits):
            raise HdrError("cannot merge histograms with different lowest value or significant digits")
        out = Histogram(self.lowest, max(self.highest, other.highest), self.digits, dict(self.counts))
        for i, c in other.counts.items():
            out.counts[i] = out.counts.get(i, 0) + c
        return out

    def value_at_percentile(self, p: float) -> int:
        total = self.total
        if total == 0:
            raise HdrError("empty histogram")
        p = min(max(p, 0.0), 100.0)
        target = max(1, int(math.ceil(p / 100.0 * total - 1e-9)))
        run = 0
        for i in sorted(self.counts):
            run += self.counts[i]
            if run >= target:
                return self.value_from_index(i) if p == 0 else self.highest_equivalent(i)
        raise AssertionError("unreachable")

    def mean(self) -> float:
        total = self.total
        if total == 0:
            raise HdrError("empty histogram")
        return sum(self.median_equivalent(i) * c for i, c in self.counts.items()) / total

    def max(self) -> int:
        return self.highest_equivalent(max(i for i, c in self.counts.items() if c))


def _zigzag_decode(buf: bytes, pos: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise HdrError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80 or shift >= 56:
            if shift >= 56 and b & 0x80:
                pass
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


def _zigzag_encode(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    z &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def decode(data: str | bytes) -> Histogram:
    """Decode a base64 string (or raw bytes) of a compressed V2 HdrHistogram."""
    raw = base64.b64decode(data, validate=True) if isinstance(data, str) else data
    if len(raw) < 8:
        raise HdrError("too short for a compressed histogram")
    cookie, length = struct.unpack(">ii", raw[:8])
    if cookie & ~0xF0 != V2_COMPRESSED_COOKIE & ~0xF0:
        raise HdrError(f"bad compressed cookie {cookie:#x}")
    try:
        body = zlib.decompress(raw[8:8 + length])
    except zlib.error as e:
        raise HdrError(f"bad deflate stream: {e}") from None
    if len(body) < 40:
        raise HdrError("truncated histogram header")
    cookie, payload_len, norm, digits, lowest, highest, _ratio = struct.unpack(">iiiiqqd", body[:40])
    if cookie & ~0xF0 != V2_COOKIE & ~0xF0:
        raise HdrError(f"bad V2 cookie {cookie:#x}")
    if norm != 0:
        raise HdrError("normalizing index offset is not supported")
    payload = body[40:40 + payload_len]
    if len(payload) != payload_len:
        raise HdrError("truncated payload")
    h = Histogram(max(lowest, 1), highest, digits)
    pos, idx = 0, 0
    while pos < len(payload):
        n, pos = _zigzag_decode(payload, pos)
        if n < 0:
            idx += -n
        else:
            if n:
                h.counts[idx] = n
            idx += 1
    return h


def encode(h: Histogram) -> str:
    """Encode to base64 of the compressed V2 form (used to build test fixtures)."""
    payload = bytearray()
    last = max(h.counts) if h.counts else -1
    zeros, i = 0, 0
    while i <= last:
        c = h.counts.get(i, 0)
        if c == 0:
            zeros += 1
        else:
            if zeros:
                payload += _zigzag_encode(-zeros) if zeros > 1 else _zigzag_encode(0)
                zeros = 0
            payload += _zigzag_encode(c)
        i += 1
    body = struct.pack(">iiiiqqd", V2_COOKIE, len(payload), 0, h.digits, h.lowest, h.highest, 1.0) + bytes(payload)
    comp = zlib.compress(body)
    return base64.b64encode(struct.pack(">ii", V2_COMPRESSED_COOKIE, len(comp)) + comp).decode()
