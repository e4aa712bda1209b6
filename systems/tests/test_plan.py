"""One plan per system (issue 29): the plan for this machine and the plan for three server hosts are the same plan,
node by node, once the placement (addresses, ports, directories) is taken out; and every system has one."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from systems import durability as dur
from systems import plan as splan
from systems.util import SystemsError, load_config, resolve

LEVELS = {"kafka": "L1", "pulsar": "L4-bypass", "pravega": "L1"}


@pytest.fixture(scope="module")
def cfg():
    return load_config()


@pytest.fixture(scope="module")
def durability(cfg):
    return dur.load(resolve(cfg["durability_file"]))


@pytest.fixture()
def conf_dir(tmp_path):
    """Pulsar's shipped templates, empty: render_conf appends every key it sets, so the texts hold only ours."""
    d = tmp_path / "pulsar-conf"
    d.mkdir()
    for f in ("zookeeper.conf", "bookkeeper.conf", "broker.conf"):
        (d / f).write_text("")
    return d


def three_hosts(system: str) -> splan.Placement:
    hosts = [splan.Host(f"server-{i}", f"10.9.0.{10 + i}", "/srv/sb/runs/c1", f"/srv/sb/dist/{system}-x", "java",
                        {"log": f"/data{i}/log/c1", "journal": f"/data{i}/journal/c1", "ledger": f"/data{i}/ledger/c1"})
             for i in (1, 2, 3)]
    return splan.Placement(hosts, splan.fixed_ports)


def build(system, placement, cfg, durability, conf_dir, faults=False):
    return splan.build(system, LEVELS[system], "stock", placement, cfg, durability, faults=faults, conf_dir=conf_dir)


def normaliser(pl: splan.ClusterPlan):
    """norm(x, owner): x with this plan's placement taken out: data directories, the hosts' directories and
    addresses, and every port, each replaced by a name that says what it was. A port after an address is named by
    that pair; a bare port number by the owner's ports first (the node whose file or command it is: on hosts every
    bookie has port 3181), then by the plan's (a port only one node has)."""
    subs: list[tuple[str, str]] = []
    for n in pl.nodes:
        for d in n.data_dirs:
            subs.append((d, f"<data:{n.name}/{Path(d).name}>"))
    for h in pl.placement.hosts:
        subs += [(h.root, "<root>"), (h.dist, "<dist>")]
    subs += [(str(v), f"<{k}>") for k, v in pl.extra.items()]  # Kafka's random cluster id
    subs.sort(key=lambda s: -len(s[0]))
    pairs = {(n.host.address, p): f"<port:{n.name}.{k}>" for n in pl.nodes for k, p in n.ports.items()}
    by_node = {n.name: {p: f"<port:{n.name}.{k}>" for k, p in n.ports.items()} for n in pl.nodes}
    unique: dict[int, str] = {}
    for n in pl.nodes:
        for k, p in n.ports.items():
            unique[p] = f"<port:{n.name}.{k}>" if p not in unique else "<port:ambiguous>"
    addresses = sorted({h.address for h in pl.placement.hosts}, key=len, reverse=True)

    def bare(p: int, owner: str | None) -> str | None:
        return (by_node.get(owner) or {}).get(p) or unique.get(p)

    def norm(x, owner: str | None = None):
        if isinstance(x, dict):
            if "address" in x and "port" in x:
                x = {**x, "port": pairs.get((x["address"], x["port"]), x["port"])}
            return {k: norm(v, x.get("node", owner)) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [norm(v, owner) for v in x]
        if isinstance(x, int) and not isinstance(x, bool):
            return bare(x, owner) or x
        if not isinstance(x, str):
            return x
        for a, b in subs:
            x = x.replace(a, b)
        x = re.sub(r"(\d+\.\d+\.\d+\.\d+):(\d+)",
                   lambda m: "<address>:" + pairs.get((m.group(1), int(m.group(2))), m.group(2)), x)
        for a in addresses:
            x = x.replace(a, "<address>")
        x = re.sub(r"(?<![\d.])(\d{4,5})(?![\d.])", lambda m: bare(int(m.group(1)), owner) or m.group(1), x)
        return x
    return norm


def owner_of(path: str) -> str | None:
    m = re.search(r"/nodes/([^/]+)/", path)
    return m.group(1) if m else None


# keys that differ by design between loopback and a host's address: a bookie on 127.0.0.1 listens on `lo`
LOOPBACK_ONLY = re.compile(r"^(listeningInterface|allowLoopback)=.*\n", re.M)


def shape(pl: splan.ClusterPlan) -> dict:
    norm = normaliser(pl)
    files = {}
    for _h, path, text in pl.files:
        files[norm(path)] = LOOPBACK_ONLY.sub("", norm(text, owner_of(path)))
    return {
        "nodes": [{"name": n.name, "role": n.role, "id": n.id, "stop": n.stop_stage, "ports": sorted(n.ports),
                   "data": norm(n.data_dirs), "conf": norm(n.conf), "cmd": norm(n.cmd, n.name),
                   "env": norm(n.env, n.name), "log": norm(n.log)} for n in pl.nodes],
        "stages": [{"once": [(o.name, norm(o.cmd), norm(o.cwd), norm(o.log), norm(o.env)) for o in s.once],
                    "start": s.start, "wait": norm(s.wait)} for s in pl.stages],
        "files": files,
        "endpoints": norm(pl.endpoints),
    }


@pytest.mark.parametrize("system", ["kafka", "pulsar", "pravega"])
def test_the_local_plan_and_the_three_host_plan_are_the_same_node_by_node(system, cfg, durability, conf_dir, tmp_path):
    # the java command is the host's too (JAVA_HOME follows from it): the same on both sides here
    local = build(system, splan.local_placement(tmp_path / "run", tmp_path / "dist", "java"),
                  cfg, durability, conf_dir)
    hosts = build(system, three_hosts(system), cfg, durability, conf_dir)
    a, b = shape(local), shape(hosts)
    assert [n["name"] for n in a["nodes"]] == [n["name"] for n in b["nodes"]]
    for na, nb in zip(a["nodes"], b["nodes"]):
        assert na == nb, na["name"]
    assert a["stages"] == b["stages"]
    assert a["files"] == b["files"]
    assert a["endpoints"] == b["endpoints"]
    # the placement itself: on this machine one host and distinct free ports; on hosts the study's layout
    assert {n.host.name for n in local.nodes} == {"local"}
    ports = [p for n in local.nodes for p in n.ports.values()]
    assert len(ports) == len(set(ports))
    where = {n.name: n.host.name for n in hosts.nodes}
    assert [where[f"{p}-{i}"] for p, i in ((("kafka" if system == "kafka" else "bookie"), i) for i in (1, 2, 3))] == \
        ["server-1", "server-2", "server-3"]
    assert all(h == "server-1" for n, h in where.items() if not re.match(r"(kafka|bookie)-\d", n))


def test_every_stage_condition_names_a_node_of_the_plan_and_every_started_node_is_awaited(cfg, durability, conf_dir):
    for system in splan.SYSTEMS:
        pl = build(system, three_hosts(system), cfg, durability, conf_dir)
        names = {n.name for n in pl.nodes}
        started = [x for s in pl.stages for x in s.start]
        assert sorted(started) == sorted(names), system  # each node starts once
        awaited = {c["node"] for s in pl.stages for c in s.wait}
        assert awaited <= names and awaited == names, (system, names - awaited)
        for n in pl.nodes:  # RocksDB's JNI library goes to the node's own directory, not the host's /tmp
            assert n.env["ROCKSDB_SHAREDLIB_DIR"] == f"{n.dir}/tmp", (system, n.name)
            # and so does everything else the JVM extracts, with no hsperfdata file in /tmp
            flags = [f"-Djava.io.tmpdir={n.dir}/tmp", "-XX:-UsePerfData"]
            if system == "pulsar":
                opts = n.env["PULSAR_EXTRA_OPTS"].split()
                assert opts[-2:] == flags and "-Dpulsar.allocator.exit_on_oom=true" in opts, (n.name, opts)
            else:
                assert n.cmd[1:3] == flags, (system, n.name, n.cmd[:4])
        for s in pl.stages:
            for c in s.wait:  # a condition is checked on its node's host: it names that host's address
                addr = pl.host_of(c["node"]).address
                assert addr in (c.get("url") or c.get("address") or addr), (system, c)


def test_a_pulsar_fault_cluster_gets_the_fault_bookie_settings_on_every_placement(cfg, durability, conf_dir, tmp_path):
    fb = cfg["pulsar"].get("fault_bookie") or {}
    assert fb, "config systems.pulsar.fault_bookie is empty: nothing to check"
    for placement in (three_hosts("pulsar"), splan.local_placement(tmp_path, tmp_path / "d", "java")):
        pl = build("pulsar", placement, cfg, durability, conf_dir, faults=True)
        for h, path, text in pl.files:
            if path.endswith("bookkeeper.conf"):
                for k, v in fb.items():
                    assert re.search(rf"^{re.escape(k)}={re.escape(str(v).lower() if isinstance(v, bool) else str(v))}$",
                                     text, re.M), (path, k)
        bookie = next(n for n in pl.nodes if n.role == "bookie")
        assert f"MaxDirectMemorySize={cfg['pulsar']['fault_bookie_direct']}" in bookie.env["PULSAR_MEM"]


def test_an_unknown_system_or_level_is_one_line(cfg, durability, conf_dir):
    with pytest.raises(SystemsError, match=r"^unknown system 'kafak' \(known: kafka, pulsar, pravega\)$"):
        splan.build("kafak", "L1", "stock", three_hosts("kafka"), cfg, durability)
    with pytest.raises(SystemsError) as e:
        splan.build("kafka", "L9", "stock", three_hosts("kafka"), cfg, durability)
    assert "L9" in str(e.value) and "\n" not in str(e.value)


def test_one_host_takes_every_node_and_the_plan_still_has_distinct_ports_per_role(cfg, durability, conf_dir):
    """An inventory with one server host (a laptop as the lab): every node on it; the fixed ports of the roles
    that share it never clash (Pravega's zookeeper, controller, segment store and a bookie)."""
    one = splan.Placement([three_hosts("pravega").hosts[0]], splan.fixed_ports)
    pl = build("pravega", one, cfg, durability, conf_dir)
    assert {n.host.name for n in pl.nodes} == {"server-1"}
    roles = {}
    for n in pl.nodes:
        roles.setdefault(n.role, set()).update(n.ports.values())
    seen: set[int] = set()
    for r, ps in roles.items():
        assert not (ps & seen), r
        seen |= ps


@pytest.mark.parametrize("system", sorted(LEVELS))
def test_extra_jvm_options_reach_every_jvm_of_the_plan_nodes_and_one_off_commands(system, cfg, durability, conf_dir,
                                                                                   monkeypatch):
    """env/test's STREAMBENCH_JVM_EXTRA_OPTS: every node and every one-off JVM of the plan gets them, on either
    placement; unset, no command or environment holds them."""
    flag = "-XX:TieredStopAtLevel=1"

    def jvm_args(pl):
        out = {}
        for n in pl.nodes:
            out[n.name] = n.cmd if n.cmd and n.cmd[0] == n.host.java else n.env.get("PULSAR_EXTRA_OPTS", "").split()
        for st in pl.stages:
            for o in st.once:
                out[o.name] = o.cmd if o.cmd and o.cmd[0] == o.host.java else o.env.get("PULSAR_EXTRA_OPTS", "").split()
        return out

    monkeypatch.delenv(splan.JVM_EXTRA_ENV, raising=False)
    plain = jvm_args(build(system, three_hosts(system), cfg, durability, conf_dir))
    assert not any(flag in a for a in plain.values())
    monkeypatch.setenv(splan.JVM_EXTRA_ENV, flag)
    with_flag = jvm_args(build(system, three_hosts(system), cfg, durability, conf_dir))
    assert with_flag.keys() == plain.keys() and with_flag
    missing = [name for name, a in with_flag.items() if flag not in a]
    assert not missing, f"JVMs without {flag}: {missing}"


def test_extra_jvm_options_that_are_not_jvm_options_are_one_line_naming_the_variable(cfg, durability, conf_dir,
                                                                                      monkeypatch):
    monkeypatch.setenv(splan.JVM_EXTRA_ENV, "-XX:TieredStopAtLevel=1 rm")
    with pytest.raises(SystemsError, match=r"^STREAMBENCH_JVM_EXTRA_OPTS: 'rm' is not a JVM option"):
        build("kafka", three_hosts("kafka"), cfg, durability, conf_dir)
    monkeypatch.setenv(splan.JVM_EXTRA_ENV, "-Dx='unclosed")
    with pytest.raises(SystemsError, match=r"^STREAMBENCH_JVM_EXTRA_OPTS: "):
        splan.jvm_extra_opts()


def test_the_remote_runner_gets_the_extra_jvm_options_after_its_own(monkeypatch):
    from testbeds import runner

    monkeypatch.delenv(splan.JVM_EXTRA_ENV, raising=False)
    own = runner.java_opts()
    monkeypatch.setenv(splan.JVM_EXTRA_ENV, "-XX:TieredStopAtLevel=1")
    assert runner.java_opts() == [*own, "-XX:TieredStopAtLevel=1"]
