"""The `lab` testbed: hosts that are Linux network namespaces on this machine, each with its own sshd.

    python -m testbeds lab up --id ID [--servers 3] [--clients 1] [--subnet 10.77.0.0/24]
    python -m testbeds lab down --id ID
    python -m testbeds lab status --id ID
    python -m testbeds lab exec --id ID -- CMD...      # CMD in the controller namespace

Layout of lab ID (every name carries the id, so `down` removes exactly what `up` made):
  netns  sbl-ID-sw    the switch: holds the bridge brID; the root namespace gets no address, link or route
  netns  sbl-ID-ctl   the controller (ssh, ansible, scp, the clients of verification run here): veth
                      sblID-ctl <-> sblID-ctlb (on the bridge), address .1 of the subnet
  netns  sbl-ID-HOST  one per host (server-1.., client-1..): veth sblID-HOST <-> sblID-HOSTb, address .11..,
                      its own sshd (config, host key, pid file under the lab directory; key auth only),
                      started under `unshare --uts` with the host's name as hostname
With --ec2-like (`up(ec2_like=True)`) the lab is as unkind as a rented fleet's network (issue 30): the subnet's lower
half is the hosts' private network (bridge brID, addresses .11..), its upper half a "public" one (bridge bpID in the
switch namespace; veth sblID-HOSTp <-> sblID-HOSTq per host, addresses half+11..); the controller sits on the public
bridge only (address half+1), so it has no route to any private address; an nftables table `inet sblab_ID` in each
host's namespace drops everything the public interface receives but tcp/22 (and replies to what the host opened),
as a security group admitting ssh only; the inventory's `publicAddress` is what ssh uses, its known_hosts starts
empty (StrictHostKeyChecking=accept-new: the first contact learns each key, later ones insist on it), and
`sharedFilesystem` is false (distributions and logs are copied, not linked). Combine with --login-user for EC2's
non-root login. Everything the controller needs from a cluster must then go over ssh.
Files: $STREAMBENCH_CACHE/lab/ID/ holds state.json (written before anything is made), keys/ (the lab's
client key and host keys, never committed), sshd/, hosts/HOST/ (each host's root) and inventory.json.
`down` kills every process left in a host namespace, deletes the namespaces (their links and the bridge go
with them) and the lab directory; it works from state.json alone, so it also cleans up after a crash, and
`up` runs it first when it finds a stale lab of the same id.
"""
from __future__ import annotations

import ipaddress
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from . import inventory as inv_mod
from .util import TestbedError, atomic_write_json, cache_dir, netns_inode, now, run

PREFIX = "sbl"
SSHD = "/usr/sbin/sshd"
ID_PATTERN = r"^[a-z0-9]{1,6}$"  # veth names must fit IFNAMSIZ (15 characters): "sbl" + id + "-client-9b"...


def lab_dir(lab_id: str, base: Path | None = None) -> Path:
    return (base or cache_dir() / "lab") / lab_id


def _check_id(lab_id: str) -> None:
    import re
    if not re.match(ID_PATTERN, lab_id):
        raise TestbedError(f"lab id {lab_id!r}: must match {ID_PATTERN} (it goes into interface names)")


def host_names(servers: int, clients: int) -> list[tuple[str, list[str]]]:
    return ([(f"server-{i + 1}", ["server"]) for i in range(servers)]
            + [(f"client-{i + 1}", ["client"]) for i in range(clients)])


def _short(host: str) -> str:
    kind, n = host.split("-")
    return f"{kind[0]}{n}"  # server-1 -> s1, client-2 -> c2


SUDOERS_DIR = Path("/etc/sudoers.d")


def login_user_name(lab_id: str) -> str:
    """The login user of lab lab_id (lab up --login-user): made with the lab, removed with it."""
    return f"sbl{lab_id}"


def plan(lab_id: str, servers: int, clients: int, subnet: str, base: Path | None = None,
         login_user: bool = False, sudo: str = "nopasswd", ec2_like: bool = False,
         unbooted: bool = False) -> dict[str, Any]:
    """Every name and address lab lab_id will use; written to state.json before anything is made. With login_user
    the hosts are reached as a user of their own (not root) who escalates with sudo as on a rented machine: sudo
    `nopasswd` (as on EC2), or `none` (no sudo rights: what prepare must refuse in one line)."""
    _check_id(lab_id)
    if servers < inv_mod.MIN_SERVERS or clients < inv_mod.MIN_CLIENTS:
        raise TestbedError(f"lab: needs at least {inv_mod.MIN_SERVERS} servers and {inv_mod.MIN_CLIENTS} client")
    net = ipaddress.ip_network(subnet)
    if not net.is_private:
        raise TestbedError(f"lab: subnet {subnet} is not a private range")
    names = host_names(servers, clients)
    private, public = (tuple(net.subnets(1)) if ec2_like else (net, None))
    if private.num_addresses < 16 + len(names):
        raise TestbedError(f"lab: subnet {subnet} too small for {len(names)} hosts"
                           + (" (--ec2-like uses half of it for the public network)" if ec2_like else ""))
    d = lab_dir(lab_id, base)
    hosts = []
    for i, (name, roles) in enumerate(names):
        s = _short(name)
        hosts.append({"name": name, "roles": roles, "netns": f"{PREFIX}-{lab_id}-{s}",
                      "veth": f"{PREFIX}{lab_id}-{s}", "peer": f"{PREFIX}{lab_id}-{s}b",
                      "address": str(private.network_address + 11 + i), "root": str(d / "hosts" / name),
                      **({"publicVeth": f"{PREFIX}{lab_id}-{s}p", "publicPeer": f"{PREFIX}{lab_id}-{s}q",
                          "publicAddress": str(public.network_address + 11 + i)} if public else {})})
    ctl_net = public or private
    return {"id": lab_id, "dir": str(d), "subnet": str(private), "prefixlen": private.prefixlen,
            "switch": f"{PREFIX}-{lab_id}-sw", "bridge": f"br{lab_id}",
            "controller": {"netns": f"{PREFIX}-{lab_id}-ctl", "veth": f"{PREFIX}{lab_id}-ctl",
                           "peer": f"{PREFIX}{lab_id}-ctlb", "address": str(ctl_net.network_address + 1)},
            **({"ec2Like": {"publicSubnet": str(public), "publicBridge": f"bp{lab_id}",
                            "table": f"sblab_{lab_id}"}} if public else {}),
            "hosts": hosts, "createdAt": now(), "pid": os.getpid(), "unbooted": unbooted,
            **({"loginUser": {"name": login_user_name(lab_id), "home": str(d / "home"), "sudo": sudo,
                              "sudoers": str(SUDOERS_DIR / f"streambench-lab-{lab_id}")}} if login_user else {})}


# --- namespaces and processes -----------------------------------------------------------------------------
def netns_list() -> list[str]:
    res = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def netns_pids(*names: str) -> list[int]:
    """The pids of every process in any of the named namespaces: what `ip netns pids` prints for each, from one
    pass over /proc without a process of its own (the host sampler calls it once a second in a run)."""
    wanted = {netns_inode(n) for n in names} - {None}
    out = []
    if not wanted:
        return out
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.stat(f"/proc/{d}/ns/net").st_ino in wanted:
                    out.append(int(d))
            except OSError:
                pass
    return out


def _kill_all(ns: str, timeout: float = 15) -> list[int]:
    """TERM every process in namespace ns, KILL what is left after timeout; returns the pids found."""
    pids = netns_pids(ns)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + (timeout if sig == signal.SIGTERM else 10)
        while time.monotonic() < deadline and netns_pids(ns):
            _reap()
            time.sleep(0.2)
        if not netns_pids(ns):
            return pids
    left = netns_pids(ns)
    if left:
        raise TestbedError(f"lab: processes {left} in namespace {ns} survived SIGKILL")
    return pids


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _ip(*args: str, ns: str | None = None) -> None:
    run(["ip", *(["-n", ns] if ns else []), *args], what=f"ip {' '.join(args)}")


# --- down ----------------------------------------------------------------------------------------------
def down(lab_id: str, base: Path | None = None, log=print, keep_dir: bool = False) -> dict[str, Any]:
    """Remove every namespace (with its links and processes) and sshd of lab lab_id; idempotent."""
    _check_id(lab_id)
    d = lab_dir(lab_id, base)
    state = None
    try:
        state = json.loads((d / "state.json").read_text())
    except (OSError, ValueError):
        pass
    wanted = []
    if state:
        wanted = [h["netns"] for h in state["hosts"]] + [state["controller"]["netns"], state["switch"]]
    # also what carries this lab's prefix without being recorded (a state file lost or hand-edited)
    mine = f"{PREFIX}-{lab_id}-"
    existing = netns_list()
    wanted += [n for n in existing if n.startswith(mine) and n not in wanted]
    # faultfs mounts a power-loss cell made on a host live in that host's mount namespace (its sshd's: `ip netns
    # exec` makes one), never in this one; they end with the processes killed below
    killed = {}
    for ns in wanted:
        if ns in existing:
            pids = _kill_all(ns)
            if pids:
                killed[ns] = pids
    for ns in wanted:
        if ns in existing:
            _ip("netns", "delete", ns)
    # the loop devices of booted hosts (their xfs mounts ended with the hosts' mount namespaces above)
    for rec in sorted((d / "boot").glob("*.json")):
        _release_disks(rec, log)
    left = [n for n in netns_list() if n.startswith(mine)]
    if left:
        raise TestbedError(f"lab {lab_id}: namespaces still present after down: {', '.join(left)}")
    _remove_login_user(lab_id, log)
    # the ssh control sockets Ansible kept for this lab's inventories (its own and any copy, e.g. the workflow's):
    # their masters ran in the controller's namespace (killed above), their directories stay in /tmp
    from .remote import remove_control_dirs
    remove_control_dirs("lab", lab_id)
    if d.exists() and not keep_dir:
        shutil.rmtree(d)
    if killed:
        log(f"lab {lab_id}: stopped {sum(len(v) for v in killed.values())} process(es) left in "
            f"{', '.join(sorted(killed))}")
    log(f"lab {lab_id}: down")
    return {"namespaces": [n for n in wanted if n in existing], "killed": killed}


def _user_exists(name: str) -> bool:
    return subprocess.run(["getent", "passwd", name], capture_output=True).returncode == 0


def _remove_login_user(lab_id: str, log) -> None:
    """The lab's login user and its sudoers file, by the lab's own names (never another user)."""
    name = login_user_name(lab_id)
    sudoers = SUDOERS_DIR / f"streambench-lab-{lab_id}"
    sudoers.unlink(missing_ok=True)
    if _user_exists(name):
        uid = pwd.getpwnam(name).pw_uid
        _fuse_access(name, grant=False)
        subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
        res = subprocess.run(["userdel", name], capture_output=True, text=True)
        if res.returncode != 0 and _user_exists(name):
            raise TestbedError(f"lab {lab_id}: cannot remove its login user {name}: {res.stderr.strip()}")
        # a JVM the user ran and the kill above (or a fault) ended keeps its perf-data file in /tmp (the hosts share
        # this machine's /tmp): the directory of the user's name, only if the removed user owned it
        perf = Path("/tmp") / f"hsperfdata_{name}"
        try:
            if perf.is_dir() and not perf.is_symlink() and perf.stat().st_uid == uid:
                shutil.rmtree(perf)
        except OSError as e:
            log(f"lab {lab_id}: could not remove {perf}: {e}")
        log(f"lab {lab_id}: login user {name} removed")


FUSE_DEV = Path("/dev/fuse")


def _fuse_access(name: str, grant: bool) -> None:
    """The login user may open /dev/fuse, as any user may on an Ubuntu host (mode 0666 there, 0600 here): an ACL
    entry for that user alone (setfacl, Debian package acl), removed with the user. faultfs's power-loss mounts on
    the hosts go through fusermount3 as that user."""
    if not FUSE_DEV.exists():
        return
    if shutil.which("setfacl") is None:
        if grant:
            raise TestbedError("lab: --login-user needs setfacl for the user's access to /dev/fuse (Debian package acl, "
                               "env/apt-packages.txt)")
        return
    args = ["-m", f"u:{name}:rw"] if grant else ["-x", f"u:{name}"]
    res = subprocess.run(["setfacl", *args, str(FUSE_DEV)], capture_output=True, text=True)
    if grant and res.returncode != 0:
        raise TestbedError(f"lab: setfacl {' '.join(args)} {FUSE_DEV}: {res.stderr.strip()}")


def _make_login_user(p: dict[str, Any], d: Path) -> None:
    u = p["loginUser"]
    if _user_exists(u["name"]):
        raise TestbedError(f"lab {p['id']}: a user {u['name']} exists already (not made by this lab run); remove it first")
    home = Path(u["home"])
    run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/bash", u["name"]],
        what=f"lab: login user {u['name']}")
    run(["usermod", "-p", "*", u["name"]], what="lab: login user unlocked for key login")  # '!' would refuse ssh
    _fuse_access(u["name"], grant=True)
    home.mkdir(parents=True, exist_ok=True)
    shutil.chown(home, u["name"], u["name"])
    if u["sudo"] == "nopasswd":
        if not Path("/usr/bin/sudo").exists():
            raise TestbedError("lab: --login-user needs sudo (Debian package sudo, env/apt-packages.txt)")
        SUDOERS_DIR.mkdir(mode=0o755, exist_ok=True)
        tmp = Path(u["sudoers"] + ".tmp")
        tmp.write_text(f"# lab {p['id']} of streambench (testbeds/lab.py); removed by lab down\n"
                       f"{u['name']} ALL=(ALL:ALL) NOPASSWD: ALL\n")
        tmp.chmod(0o440)
        os.replace(tmp, u["sudoers"])


# --- up --------------------------------------------------------------------------------------------------
SSHD_CONFIG = """\
# sshd of lab host {name} (made by testbeds/lab.py; key authentication only)
Port 22
{listen}
HostKey {hostkey}
PidFile {pidfile}
AuthorizedKeysFile {authorized}
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
PrintMotd no
UseDNS no
MaxStartups 100:30:200
MaxSessions 50
Subsystem sftp internal-sftp
"""


def _sshd_config(d: Path, h: dict[str, Any], hostkey: Path, authorized: Path) -> Path:
    """Write host h's sshd config (listening on its private and, on an EC2-like lab, its public address); its path."""
    conf = d / "sshd" / f"{h['name']}.conf"
    listen = "\n".join(f"ListenAddress {a}" for a in (h["address"], h.get("publicAddress")) if a)
    conf.write_text(SSHD_CONFIG.format(name=h["name"], listen=listen, hostkey=hostkey,
                                       pidfile=d / "sshd" / f"{h['name']}.pid", authorized=authorized))
    return conf


def _keygen(path: Path, comment: str) -> None:
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])


def up(lab_id: str, servers: int = 3, clients: int = 1, subnet: str = "10.77.0.0/24", base: Path | None = None,
       log=print, timeout: float = 30, login_user: bool = False, sudo: str = "nopasswd",
       ec2_like: bool = False, unbooted: bool = False) -> Path:
    """Make the lab and write its inventory; returns the inventory's path. A stale lab of the same id is
    removed first; a failure removes everything made so far. With login_user and ec2_like, see plan() and the
    module's docstring. With unbooted (an EC2-like lab only) the hosts' networks are made but nothing runs on
    them: each host starts, as an instance does, when boot() is called for it (the AWS rehearsal)."""
    if unbooted and not ec2_like:
        raise TestbedError("lab: unbooted hosts are for an EC2-like lab (--ec2-like) only")
    if not Path(SSHD).exists():
        raise TestbedError(f"lab: {SSHD} not found (Debian package openssh-server, env/apt-packages.txt)")
    p = plan(lab_id, servers, clients, subnet, base, login_user=login_user, sudo=sudo, ec2_like=ec2_like,
             unbooted=unbooted)
    d = Path(p["dir"])
    if (d / "state.json").exists() or any(n.startswith(f"{PREFIX}-{lab_id}-") for n in netns_list()) \
            or (SUDOERS_DIR / f"streambench-lab-{lab_id}").exists():
        log(f"lab {lab_id}: stale lab found; removing it first")
        down(lab_id, base, log=log)
    for sub in ("keys", "sshd", "hosts"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    atomic_write_json(d / "state.json", p)  # before anything is made: `down` finds all of it
    t0 = time.monotonic()
    try:
        _make(p, d, log, timeout)
    except BaseException:
        log(f"lab {lab_id}: up failed; removing what was made")
        try:
            down(lab_id, base, log=log)
        except Exception as e:  # keep the original error
            log(f"lab {lab_id}: cleanup after failed up: {e}")
        raise
    log(f"lab {lab_id}: {servers} server(s) + {clients} client(s) up in {time.monotonic() - t0:.1f} s: "
        f"{d / 'inventory.json'}")
    return d / "inventory.json"


def _make(p: dict[str, Any], d: Path, log, timeout: float) -> None:
    sw, br, ctl = p["switch"], p["bridge"], p["controller"]
    keys = d / "keys"
    _keygen(keys / "id_ed25519", f"streambench-lab-{p['id']}")
    (keys / "authorized_keys").write_text((keys / "id_ed25519.pub").read_text())
    if p.get("loginUser"):
        _make_login_user(p, d)
    _ip("netns", "add", sw)
    _ip("link", "set", "lo", "up", ns=sw)
    _ip("link", "add", br, "type", "bridge", ns=sw)
    _ip("link", "set", br, "up", ns=sw)
    ec2 = p.get("ec2Like")
    if ec2:
        _ip("link", "add", ec2["publicBridge"], "type", "bridge", ns=sw)
        _ip("link", "set", ec2["publicBridge"], "up", ns=sw)
        pub_len = ipaddress.ip_network(ec2["publicSubnet"]).prefixlen
    known = []
    for node in [ctl, *p["hosts"]]:
        ns = node["netns"]
        _ip("netns", "add", ns)
        _ip("link", "set", "lo", "up", ns=ns)
        # the controller of an EC2-like lab is on the public bridge only; a host is on both
        links = ([(node["veth"], node["peer"], ec2["publicBridge"], node["address"], pub_len)] if ec2 and node is ctl
                 else [(node["veth"], node["peer"], br, node["address"], p["prefixlen"])])
        if ec2 and node is not ctl:
            links.append((node["publicVeth"], node["publicPeer"], ec2["publicBridge"], node["publicAddress"], pub_len))
        for veth, peer, bridge, addr, plen in links:
            # both ends are created inside the namespaces: nothing ever appears in the root namespace
            _ip("link", "add", veth, "type", "veth", "peer", "name", peer, "netns", sw, ns=ns)
            _ip("link", "set", peer, "master", bridge, ns=sw)
            _ip("link", "set", peer, "up", ns=sw)
            _ip("addr", "add", f"{addr}/{plen}", "dev", veth, ns=ns)
            _ip("link", "set", veth, "up", ns=ns)
        if ec2 and node is not ctl:
            _public_firewall(ns, ec2["table"], node["publicVeth"])
    for h in p["hosts"]:
        name = h["name"]
        root = Path(h["root"])
        # as root, the lab makes the hosts' directories; a login user's hosts get their root alone (owned by root,
        # as / is): prepare makes the rest with sudo, as on a rented machine
        for sub in (("",) if p.get("loginUser") else ("opt/streambench", "data/journal", "data/ledger", "data/log")):
            (root / sub).mkdir(parents=True, exist_ok=True)
        if p.get("unbooted"):
            continue  # sshd, host key and root come with boot()
        hostkey = keys / f"host-{name}"
        _keygen(hostkey, f"{name}.lab-{p['id']}")
        if not ec2:  # an EC2-like lab's controller learns the keys on first contact (accept-new)
            known.append(f"{h['address']} {(keys / f'host-{name}.pub').read_text().split(' ')[0]} "
                         f"{(keys / f'host-{name}.pub').read_text().split(' ')[1]}")
        conf = _sshd_config(d, h, hostkey, keys / "authorized_keys")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        run(["ip", "netns", "exec", h["netns"], "unshare", "--uts", "sh", "-c",
             'hostname "$1" && exec "$2" -f "$3" -E "$4"', "sh", name, SSHD, str(conf),
             str(d / "sshd" / f"{name}.log")], what=f"lab: sshd of {name}")
    (keys / "known_hosts").write_text("".join(f"{k}\n" for k in known))
    # wait until every sshd accepts connections (from the controller namespace, at the address ssh will use)
    deadline = time.monotonic() + timeout
    for h in ([] if p.get("unbooted") else p["hosts"]):
        addr = h.get("publicAddress") or h["address"]
        while not _port_open(ctl["netns"], addr, 22):
            if time.monotonic() > deadline:
                raise TestbedError(f"lab: sshd of {h['name']} ({addr}:22) not answering after "
                                   f"{timeout:.0f} s; see {d / 'sshd' / (h['name'] + '.log')}")
            time.sleep(0.2)
    atomic_write_json(d / "inventory.json", inventory_doc(p, d))
    inv_mod.load(d / "inventory.json")  # what we wrote must pass our own checks


# --- late boot (an unbooted EC2-like lab's hosts: the AWS rehearsal) ---------------------------------------
# An instance of the rehearsal is a lab host that boots when the emulator's instance is bound to it: after a delay
# its sshd starts with a new host key and the key pair's public key, then its user data (testbeds/aws/userdata.sh,
# unchanged) runs as root, as cloud-init runs it. The host gets its own /etc, /var and /opt (overlays on this
# machine's, upper layers under the host's directory) and /mnt, in its mount namespace only (the one `ip netns exec`
# makes for the boot process, which sshd and everything started over ssh inherit), so the user data's absolute
# paths (/mnt/data-N, /etc/fstab, /etc/security/limits.d, /var/lib/streambench) are the host's own. Its
# instance-store disks are loop devices over sparse files, described by a made-up sysfs tree (the script's
# SB_SYSFS: model "Amazon EC2 NVMe Instance Storage", PCI addresses, sizes, beside an EBS root disk it must skip)
# and device links (SB_DEV); the user data formats them xfs and mounts them. Its power-off timer is recorded by a
# stand-in systemd-run, not set. power_off() ends the host: every process in its namespace (the mount namespace and
# its mounts go with them), its loop devices (by the device and file recorded in boot/HOST.json), its directory.
BOOT_SCRIPT = """\
#!/bin/bash
# boot of lab host {name} (testbeds/lab.py boot): power-on to the end of the user data
set -u
hostname {name}
sleep {delay}
H={hostdir}
for d in etc var opt; do
  mkdir -p "$H/overlay/$d.up" "$H/overlay/$d.work"
  mount -t overlay sblab -o "lowerdir=/$d,upperdir=$H/overlay/$d.up,workdir=$H/overlay/$d.work" "/$d" || exit 1
done
mkdir -p "$H/mnt" && mount --bind "$H/mnt" /mnt || exit 1
{sshd} -f {conf} -E {sshdlog} || exit 1
mkdir -p /var/log
SB_SYSFS="$H/sys" SB_DEV="$H/dev" PATH="$H/stub:$PATH" bash {userdata} > /var/log/cloud-init-output.log 2>&1
echo "user data ended: $?"
"""
STUB_SYSTEMD_RUN = """\
#!/bin/sh
# the lab's systemd-run (testbeds/lab.py boot): the user data's power-off timer is recorded here, never set
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $*" >> {record}
"""
EBS_MODEL = "Amazon Elastic Block Store"
INSTANCE_STORE_MODEL = "Amazon EC2 NVMe Instance Storage"


def _host_of(p: dict[str, Any], name: str) -> dict[str, Any]:
    for h in p["hosts"]:
        if h["name"] == name:
            return h
    raise TestbedError(f"lab {p['id']}: no host {name}")


def booted(lab_id: str, base: Path | None = None) -> list[str]:
    """The hosts of lab lab_id that boot() started and power_off() has not ended."""
    return sorted(f.stem for f in (lab_dir(lab_id, base) / "boot").glob("*.json"))


def _release_disks(rec_path: Path, log=print) -> None:
    """Detach the loop devices a boot record names (each only while it still maps the recorded file) and delete
    their files, then the record."""
    try:
        rec = json.loads(rec_path.read_text())
    except (OSError, ValueError):
        rec_path.unlink(missing_ok=True)
        return
    for disk in rec.get("disks", []):
        dev, f = disk.get("device"), disk["file"]
        if dev:
            res = subprocess.run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE", dev],
                                 capture_output=True, text=True)
            fields = res.stdout.split()
            if res.returncode == 0 and len(fields) >= 2 and Path(fields[1]).resolve() == Path(f).resolve():
                # busy (an xfs mount not yet gone with its namespace): the kernel detaches it when released
                subprocess.run(["losetup", "--detach", dev], capture_output=True)
        Path(f).unlink(missing_ok=True)
    rec_path.unlink(missing_ok=True)
    log(f"lab: host {rec.get('host')}: powered off ({len(rec.get('disks', []))} disk(s) released)")


def boot(lab_id: str, name: str, *, authorized_key: str, user_data: str, disks: int = 0, disk_gb: float = 2,
         delay_s: float = 0, base: Path | None = None) -> dict[str, Any]:
    """Start host `name` of an unbooted lab as an instance boots (see above); returns its boot record. The host
    answers ssh after delay_s; the user data writes its completion marker when it ends."""
    d = lab_dir(lab_id, base)
    p = json.loads((d / "state.json").read_text())
    if not p.get("unbooted"):
        raise TestbedError(f"lab {lab_id}: its hosts booted with the lab (not made with unbooted)")
    h = _host_of(p, name)
    rec_path = d / "boot" / f"{name}.json"
    if rec_path.exists():
        raise TestbedError(f"lab {lab_id}: host {name} is running already")
    (d / "boot").mkdir(exist_ok=True)
    hd = d / "hosts" / name
    if hd.exists():
        shutil.rmtree(hd)
    for sub in ("sys/block", "dev", "stub", "overlay", "mnt"):
        (hd / sub).mkdir(parents=True, exist_ok=True)
    rec: dict[str, Any] = {"host": name, "netns": h["netns"], "disks": [], "bootedAt": now()}
    atomic_write_json(rec_path, rec)  # before any device exists: power_off and down find everything from here
    try:
        # the made-up sysfs: an EBS root disk first (the user data must skip it), then the instance-store disks
        size = int(disk_gb * 1024 ** 3)
        for i in range(disks + 1):
            model = EBS_MODEL if i == 0 else INSTANCE_STORE_MODEL
            ctrl = hd / "sys" / "devices" / "pci0000:00" / f"0000:00:{0x04 + i:02x}.0" / "nvme" / f"nvme{i}"
            ctrl.mkdir(parents=True)
            (ctrl / "model").write_text(f"{model:<40}\n")
            blk = hd / "sys" / "block" / f"nvme{i}n1"
            blk.mkdir()
            (blk / "device").symlink_to(ctrl)
            (blk / "size").write_text(f"{size // 512}\n")
            if i == 0:
                continue
            img = d / "disks" / f"{name}-{i}.img"
            img.parent.mkdir(exist_ok=True)
            with open(img, "wb") as fh:
                fh.truncate(size)
            rec["disks"].append({"file": str(img), "device": None})
            atomic_write_json(rec_path, rec)
            dev = run(["losetup", "--find", "--show", str(img)], what=f"lab: loop device for {name}").stdout.strip()
            rec["disks"][-1]["device"] = dev
            atomic_write_json(rec_path, rec)
            (hd / "dev" / f"nvme{i}n1").symlink_to(dev)
        stub = hd / "stub" / "systemd-run"
        stub.write_text(STUB_SYSTEMD_RUN.format(record=hd / "poweroff-timer"))
        stub.chmod(0o755)
        keys = d / "keys"
        hostkey = keys / f"host-{name}"
        for f in (hostkey, hostkey.with_suffix(".pub")):
            f.unlink(missing_ok=True)
        _keygen(hostkey, f"{name}.lab-{lab_id}")  # a new instance, a new host key
        authorized = keys / f"authorized-{name}"
        authorized.write_text(authorized_key.strip() + "\n")
        conf = _sshd_config(d, h, hostkey, authorized)
        ud = d / "boot" / f"{name}.userdata"
        ud.write_text(user_data)
        script = d / "boot" / f"{name}.sh"
        script.write_text(BOOT_SCRIPT.format(name=name, delay=max(0.0, delay_s), hostdir=hd, sshd=SSHD, conf=conf,
                                             sshdlog=d / "sshd" / f"{name}.log", userdata=ud))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        with open(d / "boot" / f"{name}.log", "ab") as out:
            proc = subprocess.Popen(["ip", "netns", "exec", h["netns"], "unshare", "--uts", "bash", str(script)],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        rec["bootPid"] = proc.pid
        atomic_write_json(rec_path, rec)
    except BaseException:
        power_off(lab_id, name, base, log=lambda m: None)
        raise
    return rec


def power_off(lab_id: str, name: str, base: Path | None = None, log=print) -> bool:
    """End host `name` of an unbooted lab (as terminating its instance): its processes, mounts, loop devices and
    directory; it can boot() again. False when it was not running."""
    d = lab_dir(lab_id, base)
    p = json.loads((d / "state.json").read_text())
    h = _host_of(p, name)
    rec_path = d / "boot" / f"{name}.json"
    if h["netns"] in netns_list():
        _kill_all(h["netns"])
    _reap()
    was = rec_path.exists()
    if was:
        _release_disks(rec_path, log)
    hd = d / "hosts" / name
    if hd.exists():
        shutil.rmtree(hd)
    hd.mkdir(parents=True)
    for f in (d / "keys" / f"host-{name}", d / "keys" / f"host-{name}.pub", d / "keys" / f"authorized-{name}",
              d / "sshd" / f"{name}.pid"):
        f.unlink(missing_ok=True)
    return was


def _public_firewall(ns: str, table: str, public_if: str) -> None:
    """As a security group admitting ssh only: what the public interface receives is dropped unless it is tcp/22
    or a reply to a connection the host opened. The table lives in the host's namespace and goes with it."""
    from systems.faulthook import nft_path
    nft = nft_path()
    if not nft:
        raise TestbedError("lab: --ec2-like needs nft (Debian package nftables, env/apt-packages.txt)")
    rules = (f"table inet {table} {{\n  chain input {{\n    type filter hook input priority 0; policy accept;\n"
             f"    iifname \"{public_if}\" ct state established,related accept\n"
             f"    iifname \"{public_if}\" tcp dport 22 accept\n"
             f"    iifname \"{public_if}\" drop\n  }}\n}}\n")
    res = subprocess.run(["ip", "netns", "exec", ns, nft, "-f", "-"], input=rules, capture_output=True, text=True,
                         timeout=30)
    if res.returncode != 0:
        raise TestbedError(f"lab: nftables rules in {ns}: {res.stderr.strip()}")


def _port_open(ns: str, addr: str, port: int, within: float = 10) -> bool:
    """A TCP connection from namespace ns to addr:port opens within `within` seconds (a dropped SYN never does:
    false then, as for a refused one)."""
    res = subprocess.run(["ip", "netns", "exec", ns, "timeout", str(within), "bash", "-c",
                          f"exec 3<>/dev/tcp/{addr}/{port}"], capture_output=True, timeout=within + 10)
    return res.returncode == 0


def inventory_doc(p: dict[str, Any], d: Path) -> dict[str, Any]:
    keys = d / "keys"
    hosts = []
    ec2 = p.get("ec2Like")
    for h in p["hosts"]:
        root = h["root"]
        hosts.append({"name": h["name"], "roles": h["roles"], "address": h["address"], "root": root,
                      **({"publicAddress": h["publicAddress"]} if ec2 else {}),
                      "workDir": f"{root}/opt/streambench",
                      "dataDirs": {"journal": f"{root}/data/journal", "ledger": f"{root}/data/ledger",
                                   "log": f"{root}/data/log"},
                      "facts": None})
    return {"schemaVersion": 1, "testbed": "lab", "id": p["id"], "createdAt": now(),
            "ssh": {"user": (p.get("loginUser") or {}).get("name", "root"), "port": 22,
                    "privateKey": str(keys / "id_ed25519"),
                    "knownHosts": str(keys / "known_hosts"),
                    "options": [f"StrictHostKeyChecking={'accept-new' if ec2 else 'yes'}", "PasswordAuthentication=no",
                                "BatchMode=yes"]},
            "hosts": hosts,
            "network": {"subnet": p["subnet"], "bridge": p["bridge"], "switchNetns": p["switch"],
                        "controllerAddress": p["controller"]["address"], "interHostDelay": False,
                        **({"publicSubnet": ec2["publicSubnet"]} if ec2 else {})},
            "provider": {"kind": "lab", "dir": str(d), "controllerNetns": p["controller"]["netns"],
                         "sharedFilesystem": not ec2, "ec2Like": bool(ec2),
                         "netns": {h["name"]: h["netns"] for h in p["hosts"]},
                         "sshdPidFiles": {h["name"]: str(d / "sshd" / f"{h['name']}.pid") for h in p["hosts"]}}}


def status(lab_id: str, base: Path | None = None) -> dict[str, Any]:
    d = lab_dir(lab_id, base)
    mine = [n for n in netns_list() if n.startswith(f"{PREFIX}-{lab_id}-")]
    sshd = {}
    for f in sorted((d / "sshd").glob("*.pid")) if (d / "sshd").is_dir() else []:
        try:
            pid = int(f.read_text().split()[0])
            sshd[f.stem] = pid if Path(f"/proc/{pid}").exists() else None
        except (OSError, ValueError, IndexError):
            sshd[f.stem] = None
    procs = {n: len(netns_pids(n)) for n in mine}
    return {"id": lab_id, "dir": str(d), "state": "up" if mine else "down", "namespaces": mine,
            "processes": procs, "sshd": sshd,
            "inventory": str(d / "inventory.json") if (d / "inventory.json").exists() else None}


def exec_in_controller(lab_id: str, cmd: list[str], base: Path | None = None) -> int:
    p = json.loads((lab_dir(lab_id, base) / "state.json").read_text())
    return subprocess.call(["ip", "netns", "exec", p["controller"]["netns"], *cmd])


def port_reachable(addr: str, port: int, timeout: float = 2) -> bool:
    try:
        with socket.create_connection((addr, port), timeout=timeout):
            return True
    except OSError:
        return False
