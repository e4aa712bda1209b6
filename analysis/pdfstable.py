"""Byte-stable figure PDFs.

vl-convert (its svg2pdf writer) numbers a figure's PDF objects (fonts, images, their dictionaries) in the
iteration order of a hash map that is seeded anew in every process, so the same chart gives PDFs with the same
content but other bytes on each run. qpdf, through pikepdf, rewrites the file in one canonical form: objects
renumbered in the order it reaches them from the trailer, dictionary keys sorted, and a /ID computed from the
content (deterministic_id) instead of from the clock.
"""

from __future__ import annotations

import io

import pikepdf


def stable_pdf(data: bytes) -> bytes:
    """The same PDF, written in qpdf's canonical object order (equal inputs up to that order give equal bytes)."""
    with pikepdf.open(io.BytesIO(data)) as pdf:
        out = io.BytesIO()
        pdf.save(out, deterministic_id=True, linearize=False, object_stream_mode=pikepdf.ObjectStreamMode.disable)
        return out.getvalue()
