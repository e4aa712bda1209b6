"""Reaching the hosts of an inventory: ssh/scp command lines, the Ansible inventory, ansible-playbook.

Everything here runs on the controller; for the lab that is its controller namespace (the CLI re-enters it,
see testbeds/util.reexec_in). Nothing assumes loopback: every host is reached at its inventory address.
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .inventory import Host, Inventory
from .util import TestbedError, atomic_write_json, cache_dir, in_controller

HERE = Path(__file__).resolve().parent
ANSIBLE_DIR = HERE / "ansible"


# OpenSSH keeps the FIRST value it is given for an option, so the host-key options the inventory chooses come
# before every default here (and each appears once): an aws inventory asks for StrictHostKeyChecking=accept-new
# with its fleet's own, initially empty known_hosts (first contact adds each host's key there, a changed key is
# refused afterwards); the lab pre-writes its known_hosts and asks for yes. The user's ~/.ssh/known_hosts is
# used only when an inventory names no knownHosts file, and then only strictly (inventory.check refuses
# accept-new without knownHosts).
def _option_name(opt: str) -> str:
    return opt.replace("=", " ", 1).split(None, 1)[0].lower() if opt.strip() else ""


def host_key_options(h: Host) -> list[str]:
    """The host-key options of h as `Name=value` strings, in the order ssh must see them (first wins)."""
    s = h.ssh
    own = {_option_name(o): o for o in reversed(s.get("options", []))}  # the first of each name
    strict = own.get("stricthostkeychecking", "StrictHostKeyChecking=yes")
    out = [strict.strip()]
    if s.get("knownHosts"):
        out.append(f"UserKnownHostsFile={s['knownHosts']}")
    elif "userknownhostsfile" in own:
        out.append(own["userknownhostsfile"].strip())
    return out


def _other_options(h: Host) -> list[str]:
    """The inventory's options other than the host-key ones (placed by host_key_options)."""
    return [o for o in h.ssh.get("options", []) if _option_name(o) not in ("stricthostkeychecking", "userknownhostsfile")]


def ssh_options(h: Host) -> list[str]:
    s = h.ssh
    opts: list[str] = []
    for o in host_key_options(h):
        opts += ["-o", o]
    opts += ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
             "-o", "ServerAliveCountMax=3", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR",
             "-i", s["privateKey"], "-p", str(s.get("port", 22))]
    for o in _other_options(h):
        opts += ["-o", o]
    return opts


def via(h: Host) -> list[str]:
    """The prefix that runs a command where the host is reachable: a lab's hosts exist only inside its controller's
    network namespace (a testbeds command re-executes itself there; a caller such as workloads/run.py does not)."""
    return ["ip", "netns", "exec", h.via_netns] if h.via_netns and not in_controller(h.via_netns) else []


def ssh_cmd(h: Host, command: str, control_dir: Path | None = None) -> list[str]:
    mux = []
    if control_dir is not None:  # one connection kept for many short commands (closed 30 s after the last)
        control_dir.mkdir(mode=0o700, exist_ok=True)
        mux = ["-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir}/sb-%C", "-o", "ControlPersist=30"]
    return [*via(h), "ssh", *ssh_options(h), *mux, f"{h.ssh['user']}@{h.ssh_address}", command]


def ssh(h: Host, command: str, *, timeout: float = 120, check: bool = True,
        control_dir: Path | None = None) -> subprocess.CompletedProcess:
    """Run a shell command on host h; a connection or auth failure is a one-line error naming the host. With
    control_dir (an instance's control_path_dir, which the lab's down removes) the connection is shared."""
    try:
        res = subprocess.run(ssh_cmd(h, command, control_dir), capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise TestbedError(f"host {h.name} ({h.ssh_address}): no answer over ssh within {timeout:.0f} s") from None
    if res.returncode == 255:
        why = (res.stderr.strip().splitlines() or ["ssh failed"])[-1]
        raise TestbedError(f"host {h.name} ({h.ssh_address}): unreachable over ssh: {why}")
    if check and res.returncode != 0:
        why = (res.stderr.strip() or res.stdout.strip()).splitlines()
        raise TestbedError(f"host {h.name}: `{command[:80]}` exited {res.returncode}: {why[-1] if why else ''}")
    return res


def scp_from(h: Host, remote: str, local: Path, timeout: float = 300) -> None:
    opts = [o.replace("-p", "-P") if o == "-p" else o for o in ssh_options(h)]
    local.parent.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([*via(h), "scp", "-q", *opts, f"{h.ssh['user']}@{h.ssh_address}:{remote}", str(local)],
                         capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        why = (res.stderr.strip().splitlines() or ["scp failed"])[-1]
        raise TestbedError(f"host {h.name}: cannot fetch {remote}: {why}")


def scp_to(h: Host, local: Path, remote: str, timeout: float = 300) -> None:
    opts = [o.replace("-p", "-P") if o == "-p" else o for o in ssh_options(h)]
    res = subprocess.run([*via(h), "scp", "-q", *opts, str(local), f"{h.ssh['user']}@{h.ssh_address}:{remote}"],
                         capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        why = (res.stderr.strip().splitlines() or ["scp failed"])[-1]
        raise TestbedError(f"host {h.name}: cannot copy {local} to {remote}: {why}")


# --- waiting for hosts that are still booting ---------------------------------------------------------------
# The user data (testbeds/aws/userdata.sh) writes this file, under the host's root, when it ends: "<exit status>
# <time>". A host is ready when its SSH port answers, the login works and the file says 0.
USERDATA_MARKER = "var/lib/streambench/userdata-done"


def port_open(addr: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((addr, port), timeout=max(timeout, 0.1)):
            return True
    except OSError:
        return False


def wait_for_hosts(inv: Inventory, deadline_s: float, *, marker: str | None = USERDATA_MARKER,
                   poll_s: float = 2.0, log=None) -> dict[str, float]:
    """Wait, up to deadline_s in all, until every host's SSH port answers, the login works and (unless marker
    is None) the user data's completion marker is there with status 0. Returns the seconds each host took.
    A host that is not ready by then is one line naming it and what it did not do; a user data that ended
    with an error is one line at once."""
    t0 = time.monotonic()
    end = t0 + deadline_s
    waiting = {h.name: "its ssh port never answered" for h in inv.hosts}
    took: dict[str, float] = {}
    while True:
        for h in inv.hosts:
            if h.name in took:
                continue
            port = int(h.ssh.get("port", 22))
            left = end - time.monotonic()
            if left <= 0:
                break
            if not port_open(h.ssh_address, port, min(3.0, left)):
                waiting[h.name] = f"its ssh port ({h.ssh_address}:{port}) never answered"
                continue
            path = posixpath.join(h.root, marker) if marker else None
            command = f"cat {shlex.quote(path)} 2>/dev/null || true" if path else "true"
            try:
                res = ssh(h, command, timeout=max(1.0, min(30.0, end - time.monotonic())), check=False)
            except TestbedError as e:
                waiting[h.name] = f"ssh did not let us in: {str(e).split(': ', 1)[-1]}"
                continue
            status = res.stdout.split()
            if path and not status:
                waiting[h.name] = f"its user data did not finish (no {path})"
                continue
            if path and status[0] != "0":
                raise TestbedError(f"host {h.name} ({h.ssh_address}): its user data failed (exit {status[0]},"
                                   f" {path}); see /var/log/cloud-init-output.log on the host")
            took[h.name] = round(time.monotonic() - t0, 1)
            if log:
                log(f"host {h.name}: ready after {took[h.name]:.0f} s")
        if len(took) == len(inv.hosts):
            return took
        if time.monotonic() >= end:
            name = next(h.name for h in inv.hosts if h.name not in took)
            more = len(inv.hosts) - len(took) - 1
            raise TestbedError(f"host {name}: not ready within {deadline_s:.0f} s: {waiting[name]}"
                               + (f" (and {more} more host(s) not ready)" if more else ""))
        time.sleep(min(poll_s, max(0.0, end - time.monotonic())))


# --- Ansible ---------------------------------------------------------------------------------------------
def ansible_inventory(inv: Inventory) -> dict[str, Any]:
    """The Ansible inventory (YAML/JSON form) of an inventory: groups `server` and `client`, per-host vars."""
    hosts = {}
    for h in inv.hosts:
        s = h.ssh
        # the same host-key options as ssh_options, first (ansible.cfg's ssh_args set none of them, and its
        # host_key_checking = True only keeps Ansible from adding StrictHostKeyChecking=no)
        common = [f"-o {shlex.quote(o)}" for o in host_key_options(h)]
        common += ["-o IdentitiesOnly=yes", "-o ServerAliveInterval=5", "-o ConnectTimeout=10"]
        common += [f"-o {shlex.quote(o)}" for o in _other_options(h)]
        hosts[h.name] = {
            "ansible_host": h.ssh_address, "ansible_user": s["user"], "ansible_port": s.get("port", 22),
            "ansible_ssh_private_key_file": s["privateKey"], "ansible_ssh_common_args": " ".join(common),
            "ansible_python_interpreter": "/usr/bin/python3",
            "sb_address": h.address, "sb_root": h.root, "sb_work": h.work_dir,
            "sb_data": {r: h.data_dir(r) for r in ("journal", "ledger", "log")},
            "sb_data_fields": {r: (f"dataDirs.{r}" if r in h.data_dirs else "dataDirs.log")
                               for r in ("journal", "ledger", "log")},
            "sb_index": inv.hosts.index(h),
        }
    groups = {}
    for role in ("server", "client"):
        groups[role] = {"hosts": {h.name: None for h in inv.with_role(role)}}
    return {"all": {"hosts": hosts, "children": groups,
                    "vars": {"sb_inventory_file": str(inv.path), "sb_testbed": inv.testbed, "sb_id": inv.id}}}


def ansible_env(inv: Inventory) -> dict[str, str]:
    home = cache_dir() / "ansible"
    home.mkdir(parents=True, exist_ok=True)
    e = dict(os.environ)
    e.update({"ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"), "ANSIBLE_HOME": str(home),
              "ANSIBLE_LOCAL_TEMP": str(home / "tmp"), "ANSIBLE_NOCOLOR": "1",
              "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
              # one directory of ssh control sockets per testbed instance (short: unix socket paths are limited)
              "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control_path_dir(inv.testbed, inv.id, inv.path))})
    return e


def control_path_dir(testbed: str, tid: str, inv_path: Path) -> Path:
    """The directory of Ansible's ssh control sockets for one testbed instance (its inventory file)."""
    return Path(f"/tmp/sb-cp-{testbed}-{tid}-{hashlib.sha1(str(Path(inv_path).resolve()).encode()).hexdigest()[:8]}")


def control_path_dirs(testbed: str, tid: str) -> list[Path]:
    """Every control-socket directory of the instance `tid`, whichever copy of its inventory Ansible was given (the
    lab's own, the workflow's data/runs/<testbed>/testbed/inventory.json, a test's): by its exact id, never a
    broader name."""
    pat = re.compile(rf"sb-cp-{re.escape(testbed)}-{re.escape(tid)}-[0-9a-f]{{8}}")
    return sorted(p for p in Path("/tmp").glob(f"sb-cp-{testbed}-{tid}-*") if pat.fullmatch(p.name))


def remove_control_dirs(testbed: str, tid: str) -> None:
    """Remove what control_path_dirs finds (the masters that used them are gone with the instance's hosts)."""
    for d in control_path_dirs(testbed, tid):
        shutil.rmtree(d, ignore_errors=True)


def playbook(inv: Inventory, name: str, extra: dict[str, Any] | None = None, *, log: Path,
             limit: str | None = None, timeout: float = 900) -> None:
    """Run testbeds/ansible/<name>.yml on the inventory's hosts; output to log. On failure: one line naming
    the failed host(s) and the task's message (the inventory file and field when a check says so)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sb-ansible-", dir=log.parent) as tmp:
        hosts_file = Path(tmp) / "hosts.json"
        atomic_write_json(hosts_file, ansible_inventory(inv))
        vars_file = Path(tmp) / "vars.json"
        atomic_write_json(vars_file, extra or {})
        result_file = Path(tmp) / "failures.json"
        cmd = ["ansible-playbook", "-i", str(hosts_file), "-e", f"@{vars_file}", str(ANSIBLE_DIR / f"{name}.yml")]
        if limit:
            cmd += ["--limit", limit]
        env = ansible_env(inv)
        env["SB_FAILURES_FILE"] = str(result_file)
        env["ANSIBLE_CALLBACKS_ENABLED"] = "sb_failures"
        env["ANSIBLE_CALLBACK_PLUGINS"] = str(ANSIBLE_DIR / "callback_plugins")
        t0 = time.monotonic()
        with open(log, "a") as fh:
            fh.write(f"$ {shlex.join(cmd)}\n")
            fh.flush()
            try:
                res = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=timeout,
                                     stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                raise TestbedError(f"ansible {name}: not finished within {timeout:.0f} s (log {log})") from None
            fh.write(f"# {name}: exit {res.returncode} in {time.monotonic() - t0:.1f} s\n")
        if res.returncode != 0:
            fails = []
            try:
                fails = json.loads(result_file.read_text())
            except (OSError, ValueError):
                pass
            if fails:
                # the first failed host in the inventory's order, whatever order Ansible's workers finished in: a
                # failure every host shares is reported the same way each time
                order = {h.name: i for i, h in enumerate(inv.hosts)}
                fails.sort(key=lambda x: order.get(x.get("host"), len(order)))
                f = fails[0]
                more = f" (and {len(fails) - 1} more)" if len(fails) > 1 else ""
                raise TestbedError(f"host {f['host']}: {name}: {f['task']}: {f['msg']}{more} (log {log})")
            raise TestbedError(f"ansible {name}: exit {res.returncode} (log {log})")
