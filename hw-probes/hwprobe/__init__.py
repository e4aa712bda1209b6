"""Hardware probes: dd and fio on a data directory, plus host facts.

Each probe writes one JSON document (format in CONTRIBUTING.md, "hw-probes/ -> analysis").
"""

__version__ = "0.1.0"

PROBES = ("host", "dd", "dd-fdatasync", "fio-seqwrite", "fio-fsync")


class ProbeError(Exception):
    """A probe could not run or its tool's output could not be read; the message is one line."""
