"""One lock per ecosystem, read by both env/shell and the flake: uv.lock (Python), env/maven-lock.json (Maven)."""

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from env import mavenlock
from env.tests.support import ROOT, run

FLAKE = (ROOT / "flake.nix").read_text()
# env/shell's own environment (Debian + .venv); the flake's check runs the other tests in the Nix sandbox
needs_env_shell = pytest.mark.skipif(not (ROOT / ".venv/bin/python").exists(), reason="no env/shell .venv here")


def locked_versions():
    return {p["name"]: p["version"] for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]}


# --- Python --------------------------------------------------------------------------------------------

@needs_env_shell
def test_env_shell_runs_the_versions_uv_lock_names():
    r = run([str(ROOT / "env/shell"), "python", "-c",
             "import altair, polars, snakemake, importlib.metadata as m; "
             "print(altair.__version__, polars.__version__, snakemake.__version__, m.version('polars-runtime-32'))"])
    assert r.returncode == 0, r.stderr
    lock = locked_versions()
    assert r.stdout.split() == [lock["altair"], lock["polars"], lock["snakemake"], lock["polars-runtime-32"]]


@needs_env_shell
def test_the_venv_is_exactly_uv_lock():
    # uv compares every installed distribution with the lock (and the lock with pyproject.toml)
    r = run([str(ROOT / "env/uv"), "sync", "--locked", "--check"])
    assert r.returncode == 0, r.stderr


def test_flake_and_env_shell_read_one_python_lock():
    # uv2nix loads the workspace at the repository root: ./uv.lock and ./pyproject.toml
    assert re.search(r"uv2nix\.lib\.workspace\.loadWorkspace \{ workspaceRoot = \./\.; \}", FLAKE)
    # env/uv (which env/shell and env/lock run) works on the repository root's project, the same files
    uv = (ROOT / "env/uv").read_text()
    assert 'export UV_PROJECT=${UV_PROJECT:-$ROOT}' in uv and 'UV_PROJECT_ENVIRONMENT:-$ROOT/.venv' in uv
    assert '"$ROOT/uv.lock"' in (ROOT / "env/shell").read_text()
    assert not (ROOT / "env/requirements.lock").exists() and not (ROOT / "env/requirements.in").exists()
    # and no Python package of nixpkgs beside the lock's: only the interpreter comes from nixpkgs
    assert "withPackages" not in FLAKE and "python3Packages" not in FLAKE
    assert "python = pkgs.python311;" in FLAKE


@needs_env_shell
def test_uv_enforces_the_locks_hashes(tmp_path):
    """A wheel whose bytes differ from the lock's sha256 is refused (one small package, a changed hash)."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "hashcheck"\nversion = "0"\nrequires-python = ">=3.11"\ndependencies = ["iniconfig"]\n'
        '[tool.uv]\npackage = false\n')
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    ini = next(p for p in lock["package"] if p["name"] == "iniconfig")
    wheel = ini["wheels"][0]
    bad = "sha256:" + hashlib.sha256(b"not the wheel").hexdigest()
    (project / "uv.lock").write_text(
        f'version = 1\nrevision = {lock["revision"]}\nrequires-python = ">=3.11"\n\n'
        f'[[package]]\nname = "hashcheck"\nversion = "0"\nsource = {{ virtual = "." }}\n'
        f'dependencies = [\n    {{ name = "iniconfig" }},\n]\n\n[package.metadata]\n'
        f'requires-dist = [{{ name = "iniconfig" }}]\n\n'
        f'[[package]]\nname = "iniconfig"\nversion = "{ini["version"]}"\nsource = {{ registry = "https://pypi.org/simple" }}\n'
        f'wheels = [\n    {{ url = "{wheel["url"]}", hash = "{bad}", size = {wheel["size"]} }},\n]\n')
    env = {"UV_PROJECT": str(project), "UV_PROJECT_ENVIRONMENT": str(tmp_path / "venv"),
           "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    r = run([str(ROOT / "env/uv"), "sync", "--frozen", "--python", sys.executable], env=env)
    assert r.returncode != 0
    assert "hash mismatch" in r.stderr.lower() and "iniconfig" in r.stderr, r.stderr


# --- Maven ---------------------------------------------------------------------------------------------

def test_no_placeholder_hash_in_the_flake():
    assert "fakeHash" not in FLAKE and "mvnHash" not in FLAKE


def test_flake_and_env_shell_read_one_maven_lock():
    assert "builtins.fromJSON (builtins.readFile ./env/maven-lock.json)" in FLAKE
    assert re.search(r"pkgs\.fetchurl \{ inherit \(a\) url sha256; \}", FLAKE)
    assert mavenlock.LOCK == ROOT / "env" / "maven-lock.json"
    shell = (ROOT / "env/shell").read_text()
    assert '"$ROOT/env/maven-lock.json"' in shell and 'env/mavenlock.py" check' in shell


def test_maven_lock_entries_are_complete_and_consistent():
    doc = json.loads(mavenlock.LOCK.read_text())
    paths = [a["path"] for a in doc["artifacts"]]
    assert paths == sorted(paths) and len(paths) == len(set(paths))
    for a in doc["artifacts"]:
        assert a["url"] == f"{mavenlock.CENTRAL}/{a['path']}"
        assert re.fullmatch(r"[0-9a-f]{64}", a["sha256"]), a
        assert a["coordinates"] == mavenlock.coordinates(a["path"])
    coords = {a["coordinates"] for a in doc["artifacts"]}
    versions = dict(re.findall(r"<(kafka|pulsar)\.version>([^<]+)<", (ROOT / "pom.xml").read_text()))
    assert f"org.apache.kafka:kafka_2.13:jar:{versions['kafka']}" in coords
    assert f"org.apache.pulsar:pulsar-server-distribution:tar.gz:bin:{versions['pulsar']}" in coords
    assert f"org.apache.pulsar:pulsar-client:jar:{versions['pulsar']}" in coords


@pytest.mark.parametrize("path,coords", [
    ("org/apache/kafka/kafka_2.13/4.3.1/kafka_2.13-4.3.1.jar", "org.apache.kafka:kafka_2.13:jar:4.3.1"),
    ("org/apache/pulsar/pulsar-server-distribution/4.0.8/pulsar-server-distribution-4.0.8-bin.tar.gz",
     "org.apache.pulsar:pulsar-server-distribution:tar.gz:bin:4.0.8"),
    ("io/netty/netty-transport-native-epoll/4.1.1/netty-transport-native-epoll-4.1.1-linux-x86_64.jar",
     "io.netty:netty-transport-native-epoll:jar:linux-x86_64:4.1.1"),
])
def test_coordinates_of_a_repository_path(path, coords):
    assert mavenlock.coordinates(path) == coords


def fake_repo(tmp_path):
    repo = tmp_path / "m2"
    files = {"org/x/a/1.0/a-1.0.jar": b"jar a", "org/x/a/1.0/a-1.0.pom": b"pom a", "org/x/b/2.0/b-2.0.jar": b"jar b"}
    for rel, data in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    (repo / "org/x/a/1.0/_remote.repositories").write_text("bookkeeping")
    lock = tmp_path / "lock.json"
    lock.write_text(json.dumps(mavenlock.lock_entries(repo)))
    return repo, lock


def test_check_names_the_artifact_whose_bytes_differ(tmp_path):
    repo, lock = fake_repo(tmp_path)
    assert mavenlock.check(repo, lock) == 3
    (repo / "org/x/b/2.0/b-2.0.jar").write_bytes(b"another jar")
    with pytest.raises(mavenlock.LockError, match=r"^org\.x:b:jar:2\.0: sha256 of .*b-2\.0\.jar is "):
        mavenlock.check(repo, lock)


def test_remove_bad_removes_only_the_files_that_differ_and_the_strict_check_then_passes(tmp_path, capsys):
    repo, lock = fake_repo(tmp_path)
    (repo / "org/x/a/1.0/a-1.0.jar").write_bytes(b"")  # a download left empty
    (repo / "org/x/a/1.0/a-1.0.jar.sha1").write_text("0" * 40)
    assert mavenlock.check(repo, lock, remove_bad=True) == 2
    assert not (repo / "org/x/a/1.0/a-1.0.jar").exists() and not (repo / "org/x/a/1.0/a-1.0.jar.sha1").exists()
    assert (repo / "org/x/a/1.0/a-1.0.pom").read_bytes() == b"pom a" and (repo / "org/x/b/2.0/b-2.0.jar").exists()
    assert capsys.readouterr().err.startswith(f"removed {repo}/org/x/a/1.0/a-1.0.jar (sha256 e3b0c442")
    assert mavenlock.check(repo, lock) == 2  # the rest as locked; the removed file is the next resolve's


def test_covers_names_an_artifact_the_build_read_that_the_lock_lacks(tmp_path):
    repo, lock = fake_repo(tmp_path)
    (repo / "org/x/c/3.0").mkdir(parents=True)
    (repo / "org/x/c/3.0/c-3.0.jar").write_bytes(b"jar c")
    trace = tmp_path / "build.trace"
    trace.write_text(
        f'101   openat(AT_FDCWD, "{repo}/org/x/a/1.0/a-1.0.jar", O_RDONLY) = 5\n'
        f'101   newfstatat(AT_FDCWD, "{repo}/org/x/a/1.0/_remote.repositories",  <unfinished ...>\n'
        f'102   openat(AT_FDCWD, "{repo}/org/x/missing/1/missing-1.jar", O_RDONLY) = -1 ENOENT (No such file)\n')
    assert mavenlock.covers([trace], repo, lock) == 1
    with open(trace, "a") as f:
        f.write(f'103   newfstatat(AT_FDCWD, "{repo}/org/x/c/3.0/c-3.0.jar", {{st_mode=S_IFREG|0644}}, 0) = 0\n')
    with pytest.raises(mavenlock.LockError, match=r"^org\.x:c:jar:3\.0 \(org/x/c/3\.0/c-3\.0\.jar\): read by the build"):
        mavenlock.covers([trace], repo, lock)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (env/apt-packages.txt)")
def test_trace_records_what_a_command_reads(tmp_path):
    repo, lock = fake_repo(tmp_path)
    trace = tmp_path / "cat.trace"
    r = subprocess.run([sys.executable, str(ROOT / "env/mavenlock.py"), "trace", str(trace),
                        "cat", str(repo / "org/x/b/2.0/b-2.0.jar")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "jar b", r.stderr
    assert mavenlock.opened_artifacts([trace], repo) == {"org/x/b/2.0/b-2.0.jar"}


def test_the_maven_repository_matches_the_lock():
    """Every locked file env/shell resolved into $STREAMBENCH_CACHE/m2 has the locked sha256."""
    repo = mavenlock.default_repo()
    if not repo.is_dir():
        pytest.skip(f"{repo}: no Maven repository yet (env/shell makes it)")
    assert mavenlock.check(repo) > 0
