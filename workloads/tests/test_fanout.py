"""Study 003's fan-out runs: scaling, runner processes, and the checks made before any cluster starts (pure logic)."""
import pytest
import yaml

from workloads import fanout, plan, scale

from .test_plan import CATALOG, doc_with

BASE = "1-topic-1-partition-10kb-1p-1c-20ksub-1"
SHARED = "1-topic-1-partition-10kb-1p-20kc-shared-1"


def load(name):
    return yaml.safe_load((plan.OMB_DIR / f"{name}.yaml").read_text())


def test_local_scale_maps_the_study_sizes_onto_the_ladder_and_keeps_rate_and_layout():
    doc = plan.load()
    local = doc["scales"]["local"]
    for study, mine in ((20, 100), (30, 250), (40, 500), (100, 1000)):
        wl, changes = scale.scale_workload(load(f"1-topic-1-partition-10kb-1p-1c-{study}ksub-1"), local)
        assert wl["subscriptionsPerTopic"] == mine and wl["consumerPerSubscription"] == 1
        assert wl["producerRate"] == 1, "not floored to min_rate nor capped to max_subscriptions"
        assert wl["x-streambench"]["fanOut"] == {"connectConcurrency": local["fanout_connect_concurrency"],
                                                 "connectDeadlineSeconds": local["fanout_connect_deadline_seconds"]}
        assert any(c.startswith("subscriptionsPerTopic") for c in changes)
    wl, _ = scale.scale_workload(load(SHARED), local)
    assert wl["subscriptionsPerTopic"] == 1 and wl["consumerPerSubscription"] == 100
    aws, _ = scale.scale_workload(load(BASE), doc["scales"]["aws"])
    assert aws["subscriptionsPerTopic"] == 20000


def test_runner_processes_follow_the_open_file_limit():
    wl = scale.scale_workload(load("1-topic-1-partition-10kb-1p-1c-100ksub-1"), {"fanout_map": {100000: 5000}})[0]
    sc = {"fd_limit": 20000}
    assert fanout.consumers(wl) == 5000
    assert fanout.processes_for_files("kafka", wl, sc) == 2  # 5 000 x 6 = 30 000 open files over two of 20 000
    assert fanout.processes_for_files("pulsar", wl, sc) == 1
    assert fanout.processes_for_files("kafka", wl, {}) == 1
    # a heap big enough for every consumer leaves the open files to decide
    assert fanout.processes("kafka", wl, sc, heap_mb=64 * 1024) == 2
    big = {"fd_limit": 20000, "fanout_max_runner_processes": 1}
    with pytest.raises(fanout.FanOutError, match="subscriptionsPerTopic: 5000 kafka consumers need about 31000 open "
                                                 "files .*fanout_max_runner_processes is 1"):
        fanout.check_run("kafka", wl, big, "W", "S")
    with pytest.raises(fanout.FanOutError, match="busiest broker"):
        fanout.check_run("kafka", wl, {"fd_limit": 8000, "fanout_max_runner_processes": 100}, "W", "S")


def test_runner_processes_follow_the_heap_per_consumer():
    wl = scale.scale_workload(load("1-topic-1-partition-10kb-1p-1c-100ksub-1"), {"fanout_map": {100000: 5000}})[0]
    room_kb = (2048 - fanout.BASE_HEAP_MB) * 1024
    kafka = -(-5000 * fanout.HEAP_KB["kafka"] // room_kb)
    assert kafka > 1, "5 000 Kafka consumers do not fit one 2 GB runner"
    assert fanout.processes_for_heap("kafka", wl, heap_mb=2048) == kafka
    assert fanout.processes_for_heap("pulsar", wl, heap_mb=2048) == 1  # 18 KB each: 88 MB
    assert fanout.processes("kafka", wl, {}, heap_mb=2048) == kafka  # no open-file limit: the heap decides
    assert fanout.processes("kafka", wl, {"fd_limit": 20000}, heap_mb=2048) == max(kafka, 2)
    with pytest.raises(fanout.FanOutError, match=r"W: subscriptionsPerTopic: 5000 kafka consumers need about \d+ MB "
                                                 r"of runner heap .* but S\.fanout_max_runner_processes is 1"):
        fanout.check_run("kafka", wl, {}, "W", "S")
    fanout.check_run("kafka", wl, {"fanout_max_runner_processes": kafka}, "W", "S")
    # any other workload is one process whatever its consumers
    plain = load("1-topic-100-partitions-1kb-4p-4c-500k")
    assert fanout.processes("kafka", plain, {"fd_limit": 10}, heap_mb=600) == 1


def test_the_runner_heap_is_the_last_xmx_of_its_jvm_options(tmp_path):
    f = tmp_path / "jvm.options"
    f.write_text("# comment -Xmx9g\n-Xms1g\n-Xmx2g\n-XX:+UseG1GC\n-Xmx3072m\n")
    assert fanout.runner_heap_mb(f) == 3072
    f.write_text("-Xmx1048576k\n")
    assert fanout.runner_heap_mb(f) == 1024
    f.write_text("-Xms1g\n")
    with pytest.raises(fanout.FanOutError, match=r"jvm\.options: -Xmx: no maximum heap set"):
        fanout.runner_heap_mb(f)
    assert fanout.runner_heap_mb() == 2048, "runner/bin/jvm.options sets -Xmx2g (the runner's test numbers assume it)"


@pytest.mark.parametrize("n, hosts, want", [(1, 1, [1]), (1, 2, [1, 1]), (4, 2, [2, 2]), (5, 2, [3, 2]),
                                            (7, 3, [3, 2, 2])])
def test_processes_are_spread_evenly_over_the_client_hosts_at_least_one_each(n, hosts, want):
    assert fanout.spread(n, hosts) == want
    assert sum(want) == max(n, hosts)


def test_fd_limit_this_host_is_the_hard_limit():
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert fanout.fd_limit({"fd_limit": "this-host"}) == (None if hard == resource.RLIM_INFINITY else hard)


def test_shared_subscription_on_kafka_fails_when_the_dag_is_built(tmp_path):
    p = doc_with(tmp_path, lambda d: d["experiments"]["E003-SHARED"].update(systems=["kafka", "pulsar"]))
    with pytest.raises(plan.PlanError, match=r"experiments\.E003-SHARED\.systems: kafka with omb/.*shared-1\.yaml: "
                                             r"consumerPerSubscription: 20000 consumers share one subscription"):
        plan.check(plan.load(p), CATALOG, p)


def test_too_many_consumers_for_the_fd_limit_fail_when_the_dag_is_built(tmp_path):
    def mutate(d):
        d["scales"]["local"]["fd_limit"] = 4096
    p = doc_with(tmp_path, mutate)
    with pytest.raises(plan.PlanError, match=r"scaled for 'local', kafka\): subscriptionsPerTopic: .* scales\.local\.fd_limit"):
        plan.expand(plan.load(p), CATALOG, "local", p)
