"""python -m hwprobe {host,dd,fio-seq,fio-fsync} --dir DIR --out FILE [sizes/durations]"""

from __future__ import annotations

import argparse
import sys

from hwprobe import ProbeError, probes, sysinfo


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hwprobe", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p, scratch=True):
        p.add_argument("--dir", required=True, help="data directory to probe (test files go in a scratch sub-folder)")
        p.add_argument("--out", required=True, help="probe JSON to write (atomically)")
        p.add_argument("--host", default=None, help="host label recorded in the JSON (default: hostname)")
        if scratch:
            p.add_argument("--create", action="store_true", help="create --dir if it does not exist")
            p.add_argument("--timeout-s", type=float, default=900, help="give up after this many seconds")

    common(sub.add_parser("host", help="CPU model, cores, RAM, kernel, OS; device and filesystem of --dir"),
           scratch=False)

    p = sub.add_parser("dd", help="sequential write with dd: oflag=direct, or conv=fdatasync with --fdatasync")
    common(p)
    p.add_argument("--size-mb", type=int, default=64)
    p.add_argument("--bs-kb", type=int, default=1024)
    p.add_argument("--fdatasync", action="store_true", help="buffered write + one fdatasync (probe 'dd-fdatasync')")

    for name, helptext, size, bs in (("fio-seq", "sequential direct write throughput (fio)", 64, "1M"),
                                     ("fio-fsync", "small writes each followed by fdatasync: latency percentiles (fio)", 4, "4k")):
        p = sub.add_parser(name, help=helptext)
        common(p)
        p.add_argument("--size-mb", type=int, default=size, help="bytes written at most (MB)")
        p.add_argument("--bs", default=bs, help="block size, fio syntax")
        p.add_argument("--runtime-s", type=int, default=10, help="stop after this many seconds at most")
    return ap


def run(args: argparse.Namespace) -> dict:
    host = args.host or sysinfo.hostname()
    if args.cmd == "host":
        return probes.probe_host(host, probes.check_dir(args.dir) if args.dir else None)
    directory = probes.check_dir(args.dir, create=args.create, need_mb=args.size_mb)
    if args.cmd == "dd":
        return probes.probe_dd(host, directory, args.size_mb, args.bs_kb, args.fdatasync, args.timeout_s)
    if args.cmd == "fio-seq":
        return probes.probe_fio_seq(host, directory, args.size_mb, args.bs, args.runtime_s, args.timeout_s)
    return probes.probe_fio_fsync(host, directory, args.size_mb, args.bs, args.runtime_s, args.timeout_s)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        doc = run(args)
        probes.write_json_atomic(args.out, doc)
    except ProbeError as e:
        print(f"hwprobe {args.cmd}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"hwprobe {args.cmd}: error: {e.filename or args.out}: {e.strerror}", file=sys.stderr)
        return 2
    return 0
