"""prepare's host-side steps (testbeds/ansible/roles/prepare/files/sbprep.py), run as the role runs them: the host's
python3 -c with the script and a JSON spec. The lab tests run them on real hosts through Ansible; these pin the
messages and the ownership rules on this machine."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = (Path(__file__).resolve().parents[1] / "ansible" / "roles" / "prepare" / "files" / "sbprep.py").read_text()
PY = shutil.which("python3", path="/usr/bin:/bin")
pytestmark = pytest.mark.skipif(PY is None, reason="no system python3")


def sbprep(step, spec):
    r = subprocess.run([PY, "-c", SCRIPT, step, json.dumps(spec)], capture_output=True, text=True, timeout=60)
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 else None), r.stderr


def spec(tmp_path, **kw):
    base = {"owner": pwd.getpwuid(os.getuid()).pw_name, "work": [str(tmp_path / "w"), str(tmp_path / "w" / "lib")],
            "data": {k: str(tmp_path / "d" / k) for k in ("journal", "ledger", "log")}, "inventory": "inv.json",
            "index": 2, "fields": {"journal": "dataDirs.journal", "ledger": "dataDirs.ledger", "log": "dataDirs.log"},
            "minNofile": 16}
    return {**base, **kw}


def test_dirs_makes_every_directory_with_mode_0755_and_a_second_call_changes_nothing(tmp_path):
    s = spec(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "log").mkdir(mode=0o700)
    rc, out, err = sbprep("dirs", s)
    assert rc == 0, err
    assert out == {"changed": True, "problems": []}
    for d in [*s["work"], *s["data"].values()]:
        assert Path(d).is_dir() and Path(d).stat().st_mode & 0o777 == 0o755, d
    assert sbprep("dirs", s)[1] == {"changed": False, "problems": []}


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_dirs_gives_the_owner_the_new_parents_and_the_named_directories(tmp_path):
    owner = "nobody"
    pw = pwd.getpwnam(owner)
    s = spec(tmp_path, owner=owner, work=[str(tmp_path / "w" / "a" / "b")], data={})
    (tmp_path / "w").mkdir()
    rc, out, err = sbprep("dirs", s)
    assert rc == 0, err
    assert (tmp_path / "w").stat().st_uid == 0  # there before: not ours to give
    assert [(tmp_path / "w" / p).stat().st_uid for p in ("a", "a/b")] == [pw.pw_uid, pw.pw_uid]


def test_a_data_directory_that_cannot_be_made_is_a_problem_naming_the_file_and_field_and_a_work_one_fails(tmp_path):
    (tmp_path / "a-file").write_text("")
    s = spec(tmp_path, data={"log": str(tmp_path / "a-file" / "log")})
    rc, out, err = sbprep("dirs", s)
    assert rc == 0, err
    assert out["problems"] == [f"inv.json: hosts[2].dataDirs.log: log directory {tmp_path}/a-file/log cannot be "
                               "created: Not a directory"]
    rc, out, err = sbprep("dirs", spec(tmp_path, work=[str(tmp_path / "a-file" / "w")]))
    assert rc == 1 and err.strip() == f"work directory {tmp_path}/a-file/w cannot be created: Not a directory"


def test_check_reports_unwritable_data_directories_the_open_file_limit_and_the_tools(tmp_path):
    s = spec(tmp_path)
    assert sbprep("dirs", s)[0] == 0
    rc, out, err = sbprep("check", s)
    assert rc == 0, err
    assert out["problems"] == [] and set(out["found"]) == {"java", "nft", "fusermount3", "fio"}
    assert out["found"]["java"] == (shutil.which("java") is not None)
    assert not list(Path(s["data"]["journal"]).iterdir())  # the probe file is gone
    # a data directory that is a file is not writable; a limit above the host's is one line
    (tmp_path / "w" / "f").write_text("")
    rc, out, err = sbprep("check", spec(tmp_path, data={"ledger": str(tmp_path / "w" / "f")}, minNofile=2**40))
    assert rc == 0, err
    assert out["problems"][0] == f"inv.json: hosts[2].dataDirs.ledger: {tmp_path}/w/f is not writable: Not a directory"
    if out["nofile"] != "unlimited":
        assert out["problems"][1] == (f"hard open-file limit {out['nofile']} is below {2**40} "
                                      "(raise it in /etc/security/limits.conf)")
