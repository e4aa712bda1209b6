"""Parsing of captured dd/fio outputs (numbers checked by hand against the raw text) and host facts."""

import json
from pathlib import Path

import pytest

from hwprobe import ProbeError, probes, sysinfo

FIX = Path(__file__).parent / "fixtures"


def test_dd_direct_rate_from_bytes_and_seconds():
    r = probes.parse_dd((FIX / "dd-direct.stderr").read_text())
    # "67108864 bytes (67 MB, 64 MiB) copied, 0.0708048 s, 948 MB/s": 67108864 / 0.0708048 / 1e6 = 947.801
    assert r["bytes"] == 67108864
    assert r["seconds"] == pytest.approx(0.0708048)
    assert r["writeMBps"] == pytest.approx(947.801, abs=1e-3)


def test_dd_fdatasync_rate():
    r = probes.parse_dd((FIX / "dd-fdatasync.stderr").read_text())
    # 67108864 / 0.148363 / 1e6 = 452.33 (dd itself printed 452 MB/s)
    assert r["writeMBps"] == pytest.approx(452.329, abs=1e-3)


def test_dd_other_unit_lines_and_exponent():
    text = "10+0 records in\n10+0 records out\n10485760 bytes (10 MB, 10 MiB) copied, 2.5e-02 s, 419 MB/s\n"
    assert probes.parse_dd(text)["writeMBps"] == pytest.approx(419.4304)


@pytest.mark.parametrize("text", ["", "dd: error writing 'x': No space left on device\n",
                                  "0 bytes copied, 0 s, 0 B/s\n"])
def test_dd_bad_output_is_an_error(text):
    with pytest.raises(ProbeError, match="dd"):
        probes.parse_dd(text, source="dd-direct.stderr")


def test_fio_seqwrite_bandwidth():
    doc = probes.load_fio_json((FIX / "fio-seqwrite-1m.json").read_text())
    r = probes.parse_fio_seq(doc)
    # jobs[0].write.bw_bytes = 972592231 B/s -> 972.592 MB/s; io_bytes 64 MiB in runtime 69 ms
    assert r == {"writeMBps": 972.592, "bytes": 67108864, "seconds": 0.069}


def test_fio_fsync_percentiles_come_from_the_sync_section():
    doc = probes.load_fio_json((FIX / "fio-fsync-4k.json").read_text())
    r = probes.parse_fio_fsync(doc)
    # jobs[0].sync.lat_ns: 50% 112128 ns, 99% 4079616, 99.9% 5144576, max 9227915, mean 315122.3; N 1023
    assert r["latencyUs"] == {"p50": 112.128, "p99": 4079.616, "p99.9": 5144.576,
                              "max": 9227.915, "mean": 315.122}
    assert r["syncs"] == 1023
    assert r["iops"] == pytest.approx(3084.337, abs=1e-3)
    # the write section's clat is not what we report: its p50 differs from the sync p50
    assert doc["jobs"][0]["write"]["clat_ns"]["percentile"]["50.000000"] != 112128


def test_fio_notes_before_json_are_skipped():
    text = "fio: note: both iodepth >= 1 and synchronous I/O engine are selected\n" + (FIX / "fio-seqwrite-1m.json").read_text()
    assert probes.parse_fio_seq(probes.load_fio_json(text))["writeMBps"] == 972.592


def test_fio_missing_sync_section_names_the_field():
    doc = json.loads((FIX / "fio-fsync-4k.json").read_text())
    del doc["jobs"][0]["sync"]
    with pytest.raises(ProbeError, match=r"jobs\.0\.sync\.lat_ns"):
        probes.parse_fio_fsync(doc, source="fio-fsync-4k.json")


def test_fio_no_syncs_is_an_error():
    doc = json.loads((FIX / "fio-seqwrite-1m.json").read_text())  # direct writes: sync N = 0
    with pytest.raises(ProbeError, match=r"no fdatasync calls .*jobs\.0\.sync\.lat_ns\.N"):
        probes.parse_fio_fsync(doc)


def test_fio_job_error_and_bad_json():
    doc = json.loads((FIX / "fio-seqwrite-1m.json").read_text())
    doc["jobs"][0]["error"] = 28
    with pytest.raises(ProbeError, match="error 28"):
        probes.load_fio_json(json.dumps(doc))
    with pytest.raises(ProbeError, match="not valid JSON"):
        probes.load_fio_json('{"jobs": [')
    with pytest.raises(ProbeError, match="no JSON"):
        probes.load_fio_json("fio: command not understood")


MOUNTINFO = """\
22 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
30 22 259:1 / /mnt/data-1 rw,noatime shared:5 - xfs /dev/nvme1n1 rw,attr2
31 22 259:2 / /mnt/data\\0402 rw,noatime shared:6 - xfs /dev/nvme2n1 rw
40 22 0:40 / /mnt/data-10 rw - tmpfs tmpfs rw
"""


@pytest.mark.parametrize("path,fs,dev,mnt", [
    ("/mnt/data-1/kafka", "xfs", "/dev/nvme1n1", "/mnt/data-1"),
    ("/mnt/data-10", "tmpfs", "tmpfs", "/mnt/data-10"),      # not confused with /mnt/data-1
    ("/mnt/data 2/journal", "xfs", "/dev/nvme2n1", "/mnt/data 2"),
    ("/home/x", "ext4", "/dev/vda", "/"),
])
def test_mountinfo_longest_prefix(path, fs, dev, mnt):
    assert sysinfo.parse_mountinfo(MOUNTINFO, path) == {"mountPoint": mnt, "filesystem": fs, "device": dev}


def test_cpuinfo_meminfo_osrelease():
    assert sysinfo.parse_cpuinfo("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8259CL\n") == \
        "Intel(R) Xeon(R) Platinum 8259CL"
    assert sysinfo.parse_meminfo("MemTotal:       65498412 kB\nMemFree: 1 kB\n") == 65498412 * 1024
    assert sysinfo.parse_os_release('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n') == \
        "Debian GNU/Linux 12 (bookworm)"
