"""Fan-out runs (study 003: one topic, thousands of consumers): open-file budgets and runner processes.

A fan-out workload carries `x-streambench.fanOut` (the runner connects its consumers concurrently and records
per-consumer connection times, see runner/README.md). Here:

- `check(...)`: before any cluster starts, every fan-out run of a scale is checked against the hosts' open-file
  limit (`scales.<name>.fd_limit`; `this-host` = this machine's hard RLIMIT_NOFILE, to which the runner script and
  the cluster launcher raise their soft limit) and against the layouts a system has (Kafka has no shared
  subscription). A failure is one line naming the file and the field.
- `processes(...)`: how many runner processes a run needs so each stays under the limit; more than
  `fanout_max_runner_processes` (default 1) is an error. The runner can share a run's consumers among processes
  (`--process-count`, `--fanout-barrier`, then omb-merge), but workloads/run.py starts one runner per cell, so every
  scale keeps the default of 1 until run.py starts several.
"""
from __future__ import annotations

import math
import resource

# file descriptors per consumer in the runner process (FanOut.java's numbers) and on the busiest broker: a Kafka
# consumer holds a selector (epoll + eventfd) and a socket to the bootstrap broker, its group coordinator and the
# partition leader (6.2 per consumer measured with 200); the leader holds each consumer's fetch connection plus
# the coordinator connections of the groups it coordinates. Pulsar multiplexes every consumer over the client's
# few connections.
RUNNER_FDS = {"kafka": 6, "pulsar": 0}
BROKER_FDS = {"kafka": 2, "pulsar": 0}
BASE_FDS = 1000  # JVM, jars, client threads, producers, admin client; the broker's log segments and sockets

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


def processes(system: str, wl: dict, scale: dict) -> int:
    """Runner processes a fan-out run needs so that each one's consumers fit under the fd limit (1 if no limit)."""
    limit = fd_limit(scale)
    per = RUNNER_FDS[system]
    if limit is None or per == 0 or not is_fanout(wl):
        return 1
    return max(1, math.ceil(consumers(wl) * per / max(1, limit - BASE_FDS)))


def check_layout(system: str, wl: dict, where: str) -> None:
    if system == "kafka" and is_fanout(wl) and wl.get("consumerPerSubscription", 0) > wl.get("partitionsPerTopic", 1):
        raise FanOutError(f"{where}: consumerPerSubscription: {wl['consumerPerSubscription']} consumers share one "
                          f"subscription of {wl.get('partitionsPerTopic', 1)} partition(s), but Kafka has no shared "
                          "subscription (a consumer group gives each partition to one consumer); run it on pulsar only")


def check_run(system: str, wl: dict, scale: dict, where: str, scale_where: str) -> None:
    """Layout and open-file budget of one scaled fan-out run (no-op for other workloads)."""
    if not is_fanout(wl):
        return
    check_layout(system, wl, where)
    limit = fd_limit(scale)
    if limit is None:
        return
    n = consumers(wl)
    k = processes(system, wl, scale)
    max_k = scale.get("fanout_max_runner_processes", 1)
    field = "consumerPerSubscription" if wl.get("consumerPerSubscription", 0) > 1 else "subscriptionsPerTopic"
    if k > max_k:
        raise FanOutError(f"{where}: {field}: {n} {system} consumers need about {BASE_FDS + n * RUNNER_FDS[system]} "
                          f"open files in the runner ({RUNNER_FDS[system]} per consumer), {k} processes under the "
                          f"limit of {limit} ({scale_where}.fd_limit), but {scale_where}.fanout_max_runner_processes "
                          f"is {max_k}")
    broker = BASE_FDS + n * BROKER_FDS[system]
    if broker > limit:
        raise FanOutError(f"{where}: {field}: {n} {system} consumers need about {broker} open files on the busiest "
                          f"broker ({BROKER_FDS[system]} per consumer), over the limit of {limit} ({scale_where}.fd_limit)")
