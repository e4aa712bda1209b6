"""Fan-out runs (study 003: one topic, thousands of consumers): open-file budgets and runner processes.

A fan-out workload carries `x-streambench.fanOut` (the runner connects its consumers concurrently and records
per-consumer connection times, see runner/README.md). Here:

- `check(...)`: before any cluster starts, every fan-out run of a scale is checked against the hosts' open-file
  limit (`scales.<name>.fd_limit`; `this-host` = this machine's hard RLIMIT_NOFILE, to which the runner script and
  the cluster launcher raise their soft limit) and against the layouts a system has (Kafka has no shared
  subscription). A failure is one line naming the file and the field.
- `processes(...)`: how many runner processes a run needs so that each stays under the open-file limit and holds
  its consumers in the runner's heap (`runner/bin/jvm.options`' -Xmx, less a base for the producers and the
  histograms); more than `fanout_max_runner_processes` is an error. workloads/run.py passes the number on
  (`--processes`): on this machine `workloads/parts.py` starts that many runners with one shared barrier directory,
  on an inventory's hosts `testbeds/runner.py` spreads them over the client hosts (`spread`), and omb-merge joins the
  parts.
"""
from __future__ import annotations

import math
import re
import resource
from pathlib import Path

# file descriptors per consumer in the runner process (FanOut.java's numbers) and on the busiest broker: a Kafka
# consumer holds a selector (epoll + eventfd) and a socket to the bootstrap broker, its group coordinator and the
# partition leader (6.2 per consumer measured with 200); the leader holds each consumer's fetch connection plus
# the coordinator connections of the groups it coordinates. Pulsar multiplexes every consumer over the client's
# few connections.
RUNNER_FDS = {"kafka": 6, "pulsar": 0}
BROKER_FDS = {"kafka": 2, "pulsar": 0}
BASE_FDS = 1000  # JVM, jars, client threads, producers, admin client; the broker's log segments and sockets
# runner heap per connected consumer, in KB, after a GC, with every consumer connected and reading (1 msg/s of 10 KB).
# Pulsar: 13.0 KB each, 17.8 KB all-in with 5 000 consumers against 50 (`runner/bench/fanout.py --system pulsar`).
# Kafka: every consumer is a KafkaConsumer of its own (fetch buffers, metadata, metrics, a heartbeat thread): 418.5 KB
# each, 451.5 KB all-in with 1 000 against 50 (`runner/bench/fanout.py --system kafka --only heap --consumers 1000`,
# docs/measurements.yaml fanout-heap-kafka); planned at 512, a fifth above each consumer's figure and an eighth above
# the all-in one
HEAP_KB = {"kafka": 512, "pulsar": 18}
BASE_HEAP_MB = 512  # the producers, the histograms, the client's own pools
JVM_OPTIONS = Path(__file__).resolve().parent.parent / "runner" / "bin" / "jvm.options"

class FanOutError(ValueError):
    """A fan-out run this scale cannot hold; the message names the file and the field."""


def is_fanout(wl: dict) -> bool:
    return isinstance((wl.get("x-streambench") or {}).get("fanOut"), dict)


def consumers(wl: dict) -> int:
    return wl.get("topics", 1) * wl.get("subscriptionsPerTopic", 0) * wl.get("consumerPerSubscription", 0)


def fd_limit(scale: dict) -> int | None:
    v = scale.get("fd_limit")
    if v is None:
        return None
    if v == "this-host":
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        return None if hard == resource.RLIM_INFINITY else int(hard)
    return int(v)


def runner_heap_mb(options: Path = JVM_OPTIONS) -> int:
    """The runner's maximum heap in MB, from its JVM options file (the last -Xmx, as the JVM takes it)."""
    units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
    mb = None
    for line in options.read_text().splitlines():
        m = re.fullmatch(r"\s*-Xmx(\d+)([kKmMgGtT])\s*", line)
        if m:
            mb = int(int(m.group(1)) * units[m.group(2).lower()])
    if mb is None:
        raise FanOutError(f"{options}: -Xmx: no maximum heap set")
    return mb


def processes_for_files(system: str, wl: dict, scale: dict) -> int:
    limit = fd_limit(scale)
    per = RUNNER_FDS[system]
    if limit is None or per == 0:
        return 1
    return max(1, math.ceil(consumers(wl) * per / max(1, limit - BASE_FDS)))


def processes_for_heap(system: str, wl: dict, heap_mb: int | None = None) -> int:
    heap_mb = runner_heap_mb() if heap_mb is None else heap_mb
    room_kb = max(1, heap_mb - BASE_HEAP_MB) * 1024
    return max(1, math.ceil(consumers(wl) * HEAP_KB[system] / room_kb))


def processes(system: str, wl: dict, scale: dict, heap_mb: int | None = None) -> int:
    """Runner processes a fan-out run needs so that each one's consumers fit under the fd limit and in its heap
    (1 for any other run)."""
    if not is_fanout(wl):
        return 1
    return max(processes_for_files(system, wl, scale), processes_for_heap(system, wl, heap_mb))


def spread(n: int, hosts: int) -> list[int]:
    """n runner processes (at least one per host) over `hosts` client hosts, as evenly as they go: the first hosts
    take one more when n is not a multiple."""
    if hosts < 1:
        raise ValueError("no client host")
    n = max(n, hosts)
    return [n // hosts + (1 if i < n % hosts else 0) for i in range(hosts)]


def check_layout(system: str, wl: dict, where: str) -> None:
    if system == "kafka" and is_fanout(wl) and wl.get("consumerPerSubscription", 0) > wl.get("partitionsPerTopic", 1):
        raise FanOutError(f"{where}: consumerPerSubscription: {wl['consumerPerSubscription']} consumers share one "
                          f"subscription of {wl.get('partitionsPerTopic', 1)} partition(s), but Kafka has no shared "
                          "subscription (a consumer group gives each partition to one consumer); run it on pulsar only")


def check_run(system: str, wl: dict, scale: dict, where: str, scale_where: str) -> None:
    """Layout, open-file and heap budget of one scaled fan-out run (no-op for other workloads)."""
    if not is_fanout(wl):
        return
    check_layout(system, wl, where)
    n = consumers(wl)
    max_k = scale.get("fanout_max_runner_processes", 1)
    field = "consumerPerSubscription" if wl.get("consumerPerSubscription", 0) > 1 else "subscriptionsPerTopic"
    limit = fd_limit(scale)
    k_files = processes_for_files(system, wl, scale)
    if k_files > max_k:
        raise FanOutError(f"{where}: {field}: {n} {system} consumers need about {BASE_FDS + n * RUNNER_FDS[system]} "
                          f"open files in the runner ({RUNNER_FDS[system]} per consumer), {k_files} processes under the "
                          f"limit of {limit} ({scale_where}.fd_limit), but {scale_where}.fanout_max_runner_processes "
                          f"is {max_k}")
    heap = runner_heap_mb()
    k_heap = processes_for_heap(system, wl, heap)
    if k_heap > max_k:
        raise FanOutError(f"{where}: {field}: {n} {system} consumers need about {n * HEAP_KB[system] // 1024} MB of "
                          f"runner heap ({HEAP_KB[system]} KB per consumer), {k_heap} processes of {heap} MB "
                          f"({JVM_OPTIONS.name} -Xmx, {BASE_HEAP_MB} MB of each kept for the rest), but "
                          f"{scale_where}.fanout_max_runner_processes is {max_k}")
    if limit is None:
        return
    broker = BASE_FDS + n * BROKER_FDS[system]
    if broker > limit:
        raise FanOutError(f"{where}: {field}: {n} {system} consumers need about {broker} open files on the busiest "
                          f"broker ({BROKER_FDS[system]} per consumer), over the limit of {limit} ({scale_where}.fd_limit)")
