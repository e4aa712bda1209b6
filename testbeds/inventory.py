"""Load and check a testbed inventory (testbeds/inventory.schema.json).

One file per testbed instance; everything after `testbed up` (probes, deploy, the runner, collect, down)
reads only this file. `load(path)` returns an `Inventory` or raises `InventoryError` with one line
`<file>: <field path>: <problem>`.

Checks beyond the JSON Schema: host names unique, at least 3 `server` and 1 `client` hosts, every path of a
host (workDir, dataDirs) under that host's `root`.
"""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).resolve().parent / "inventory.schema.json"
MIN_SERVERS = 3
MIN_CLIENTS = 1
DISK_ROLES = ("journal", "ledger", "log")


class InventoryError(ValueError):
    """A bad inventory: one line naming the file and the field."""


@lru_cache(maxsize=1)
def _validator():
    import jsonschema
    schema = json.loads(SCHEMA.read_text())
    return jsonschema.Draft202012Validator(schema)


def _field(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def under(path: str, root: str) -> bool:
    """True when the absolute POSIX path lies under root (or is root), after normalising '..' and '//'."""
    p, r = posixpath.normpath(path), posixpath.normpath(root)
    return r == "/" or p == r or p.startswith(r.rstrip("/") + "/")


@dataclass(frozen=True)
class Host:
    name: str
    roles: tuple[str, ...]
    address: str
    root: str
    work_dir: str
    data_dirs: dict[str, str]
    ssh: dict[str, Any]
    ssh_address: str
    facts: dict[str, Any] | None
    raw: dict[str, Any]
    # the network namespace the host is reached from (a lab's controller namespace; None: this one)
    via_netns: str | None = None

    def data_dir(self, role: str) -> str:
        """The directory of a disk role; journal and ledger fall back to log (a one-disk host)."""
        return self.data_dirs.get(role) or self.data_dirs["log"]


@dataclass(frozen=True)
class Inventory:
    path: Path
    doc: dict[str, Any]
    hosts: tuple[Host, ...]

    @property
    def id(self) -> str:
        return self.doc["id"]

    @property
    def testbed(self) -> str:
        return self.doc["testbed"]

    @property
    def provider(self) -> dict[str, Any]:
        return self.doc.get("provider") or {}

    def with_role(self, role: str) -> list[Host]:
        return [h for h in self.hosts if role in h.roles]

    @property
    def servers(self) -> list[Host]:
        return self.with_role("server")

    @property
    def clients(self) -> list[Host]:
        return self.with_role("client")

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise InventoryError(f"{self.path}: hosts: no host named {name!r}")

    def summary(self) -> dict[str, Any]:
        """What a result file records about the inventory it ran on."""
        return {"file": str(self.path), "testbed": self.testbed, "id": self.id,
                "createdAt": self.doc.get("createdAt"),
                "hosts": [{"name": h.name, "roles": list(h.roles), "address": h.address} for h in self.hosts]}


HOST_KEY_CHECKING = ("yes", "accept-new")


def _check_host_keys(h: dict, ssh: dict, where: str, path: Path) -> None:
    """StrictHostKeyChecking is yes (the default) or accept-new; accept-new adds first-contact keys to the
    inventory's own knownHosts file, never to the user's ~/.ssh/known_hosts, so it needs that file named."""
    own = "options" in (h.get("ssh") or {})
    strict = "yes"
    for j, o in enumerate(ssh.get("options", [])):
        name, _, value = o.replace("=", " ", 1).partition(" ")
        if name.lower() != "stricthostkeychecking":
            continue
        value = value.strip().lower()
        if value not in HOST_KEY_CHECKING:
            field = f"{where}.ssh.options[{j}]" if own else f"{path}: ssh.options[{j}]"
            raise InventoryError(f"{field}: StrictHostKeyChecking={value}: only yes or accept-new (a host's key is"
                                 " always checked)")
        strict = value
        break  # ssh keeps the first value
    if strict == "accept-new" and not ssh.get("knownHosts"):
        field = f"{where}.ssh.knownHosts" if own else f"{path}: ssh.knownHosts"
        raise InventoryError(f"{field}: missing; StrictHostKeyChecking=accept-new needs the testbed's own"
                             " known_hosts file (never the user's ~/.ssh/known_hosts)")


def _controller_paths(ssh: dict[str, Any], path: Path) -> dict[str, Any]:
    """privateKey and knownHosts as the controller opens them: `~` expanded, a relative path taken from the
    inventory file's directory (a hand-written inventory beside its key)."""
    out = dict(ssh)
    for k in ("privateKey", "knownHosts"):
        if out.get(k):
            p = Path(out[k]).expanduser()
            out[k] = str(p if p.is_absolute() else (Path(path).resolve().parent / p))
    return out


def check(doc: Any, path: Path | str) -> Inventory:
    """Validate an inventory document; path is only used in messages (and kept on the result)."""
    path = Path(path)
    errors = sorted(_validator().iter_errors(doc), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        e = errors[0]
        raise InventoryError(f"{path}: {_field(e.absolute_path)}: {e.message}")
    defaults = doc["ssh"]
    hosts = []
    seen: dict[str, int] = {}
    for i, h in enumerate(doc["hosts"]):
        where = f"{path}: hosts[{i}]"
        if h["name"] in seen:
            raise InventoryError(f"{where}.name: {h['name']!r} is also hosts[{seen[h['name']]}]")
        seen[h["name"]] = i
        root = h.get("root") or "/"
        work = h.get("workDir") or posixpath.join(root, "opt/streambench")
        if not under(work, root):
            raise InventoryError(f"{where}.workDir: {work} is not under the host's root {root}")
        data_dirs = h.get("dataDirs")
        if not data_dirs:
            if "server" in h["roles"]:
                raise InventoryError(f"{where}.dataDirs: missing (a server host needs at least its 'log' directory)")
            data_dirs = {"log": posixpath.join(work, "data")}
        for role, d in data_dirs.items():
            if not under(d, root):
                raise InventoryError(f"{where}.dataDirs.{role}: {d} is not under the host's root {root}")
        ssh = {**defaults, **(h.get("ssh") or {})}
        for k in ("user", "privateKey"):
            if not ssh.get(k):
                raise InventoryError(f"{where}.ssh.{k}: missing (neither the host nor the top-level ssh sets it)")
        ssh = _controller_paths(ssh, path)
        _check_host_keys(h, ssh, where, path)
        hosts.append(Host(name=h["name"], roles=tuple(h["roles"]), address=h["address"], root=root,
                          work_dir=posixpath.normpath(work), data_dirs=dict(data_dirs), ssh=ssh,
                          ssh_address=h.get("publicAddress") or h["address"], facts=h.get("facts"), raw=h,
                          via_netns=(doc.get("provider") or {}).get("controllerNetns")))
    inv = Inventory(path=path, doc=doc, hosts=tuple(hosts))
    for role, need in (("server", MIN_SERVERS), ("client", MIN_CLIENTS)):
        have = len(inv.with_role(role))
        if have < need:
            raise InventoryError(f"{path}: hosts: {have} host(s) with role {role!r}, at least {need} needed")
    return inv


def working_copy(inv: Inventory) -> dict[str, Any]:
    """The document of a checked inventory as the workflow keeps it elsewhere (`python -m testbeds adopt`): the
    controller's key and known_hosts paths absolute (they were relative to the original file), the original's
    path recorded under provider.adoptedFrom; everything else as written."""
    doc = json.loads(json.dumps(inv.doc))
    doc["ssh"] = _controller_paths(doc["ssh"], inv.path)
    for h in doc["hosts"]:
        if h.get("ssh"):
            h["ssh"] = _controller_paths(h["ssh"], inv.path)
    doc["provider"] = {**(doc.get("provider") or {}), "adoptedFrom": str(Path(inv.path).resolve())}
    return doc


def load(path: Path | str) -> Inventory:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise InventoryError(f"{path}: cannot read the inventory ({e.strerror})") from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise InventoryError(f"{path}: not valid JSON ({e})") from None
    return check(doc, path)
