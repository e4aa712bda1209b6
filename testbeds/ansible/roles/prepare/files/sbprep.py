"""prepare's host-side steps in one call each (run by the host's python3 -c, standard library only).

    dirs SPEC   (with sudo for a login user other than root) make the work directories and, on a server, the data
                directories; every directory it makes, parents included, and each named one is the owner's, mode
                0755 on the named ones (as Ansible's file module with owner and mode). A work directory that cannot
                be made fails the call; a data directory that cannot be made is a problem in the output
    check SPEC  (as the login user) each data directory writable, the hard open-file limit, and which of java, nft,
                fusermount3 and fio this user's PATH finds

SPEC is JSON: {owner, work: [dir], data: {kind: dir}, inventory, index, fields: {kind: field}, minNofile}. Output is
one JSON object: {changed, problems: [one line each, naming the inventory file and field], ...}.
"""
import errno
import json
import os
import pwd
import resource
import shutil
import sys


def _make(path, uid, gid):
    """Make path and its missing parents, each new one uid's; the path itself uid's with mode 0755 in any case.
    Returns whether anything changed."""
    path = os.path.abspath(path)
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        p = os.path.dirname(p)
    if not os.path.isdir(p) and not missing:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), p)
    for d in reversed(missing):
        os.mkdir(d, 0o755)
        os.chown(d, uid, gid)
    st = os.stat(path)
    changed = bool(missing)
    if (st.st_uid, st.st_gid) != (uid, gid):
        os.chown(path, uid, gid)
        changed = True
    if st.st_mode & 0o7777 != 0o755:
        os.chmod(path, 0o755)
        changed = True
    return changed


def dirs(spec):
    pw = pwd.getpwnam(spec["owner"])
    changed = False
    for d in spec["work"]:
        try:
            changed |= _make(d, pw.pw_uid, pw.pw_gid)
        except OSError as e:
            sys.exit(f"work directory {d} cannot be created: {e.strerror}")
    problems = []
    for kind, d in spec.get("data", {}).items():
        try:
            changed |= _make(d, pw.pw_uid, pw.pw_gid)
        except OSError as e:
            problems.append(f"{spec['inventory']}: hosts[{spec['index']}].{spec['fields'][kind]}: {kind} directory {d} "
                            f"cannot be created: {e.strerror}")
    return {"changed": changed, "problems": problems}


def check(spec):
    problems = []
    for kind, d in spec.get("data", {}).items():
        f = os.path.join(d, f".sb-writable-{os.getpid()}")
        try:
            with open(f, "w") as fh:
                fh.write("ok\n")
            os.remove(f)
        except OSError as e:
            problems.append(f"{spec['inventory']}: hosts[{spec['index']}].{spec['fields'][kind]}: {d} is not writable: "
                            f"{e.strerror}")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    if nofile != "unlimited" and hard < int(spec["minNofile"]):
        problems.append(f"hard open-file limit {nofile} is below {spec['minNofile']} "
                        "(raise it in /etc/security/limits.conf)")
    found = {t: shutil.which(t) is not None for t in ("java", "fusermount3", "fio")}
    found["nft"] = shutil.which("nft") is not None or any(os.access(p, os.X_OK) for p in ("/usr/sbin/nft", "/sbin/nft"))
    return {"changed": False, "problems": problems, "nofile": nofile, "found": found}


if __name__ == "__main__":
    step, spec = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps({"dirs": dirs, "check": check}[step](spec)))
