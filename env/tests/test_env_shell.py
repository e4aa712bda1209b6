"""env/shell: idempotent set-up (judged by its stamps, not by time), the exported environment, OS check."""

import glob
import os

import pytest

from env.tests.support import ROOT, run

SHELL = str(ROOT / "env/shell")
CACHE = os.environ.get("STREAMBENCH_CACHE", str(ROOT / ".cache"))


def stamp_state():
    """mtime of every file the set-up writes when it does work."""
    paths = [ROOT / ".venv/.streambench-lock", ROOT / ".venv/bin/python",
             *glob.glob(os.path.join(CACHE, "stamps/maven-*")), os.path.join(CACHE, "cargo/.crates.toml")]
    return {str(p): os.stat(p).st_mtime_ns for p in paths if os.path.exists(p)}


@pytest.mark.slow
def test_second_call_does_no_install_work_and_prints_nothing():
    first = run([SHELL, "true"], timeout=3000)
    assert first.returncode == 0, first.stderr[-3000:]
    before = stamp_state()
    assert str(ROOT / ".venv/.streambench-lock") in before
    second = run([SHELL, "true"])
    assert second.returncode == 0, second.stderr
    assert second.stdout == "" and second.stderr == ""
    assert stamp_state() == before


def test_exports_the_environment_of_the_contract():
    r = run([SHELL, "sh", "-c",
             'printf "%s\\n" "$STREAMBENCH_ROOT" "$STREAMBENCH_CACHE" "$MAVEN_OPTS" "$PYTHONPATH" "$PATH"; '
             "command -v python; command -v snakemake; command -v pandoc; command -v nixpkgs-fmt"],
            env={"STREAMBENCH_CACHE": CACHE})
    assert r.returncode == 0, r.stderr
    root, cache, maven_opts, pythonpath, path, python, snakemake, pandoc, fmt = r.stdout.splitlines()
    assert root == str(ROOT)
    assert cache == CACHE
    assert f"-Dmaven.repo.local={CACHE}/m2" in maven_opts.split()
    assert pythonpath.split(":")[:2] == [str(ROOT), f"{ROOT}/hw-probes"]
    assert path.split(":")[0] == f"{ROOT}/.venv/bin"
    assert python == snakemake.replace("snakemake", "python") == f"{ROOT}/.venv/bin/python"
    assert pandoc == f"{ROOT}/.venv/bin/pandoc"
    assert fmt == f"{CACHE}/cargo/bin/nixpkgs-fmt"


def test_nested_calls_do_not_grow_the_environment():
    r = run([SHELL, SHELL, "sh", "-c", 'printf "%s\\n%s" "$MAVEN_OPTS" "$XDG_CONFIG_DIRS"'])
    assert r.returncode == 0, r.stderr
    maven_opts, xdg = r.stdout.splitlines()
    assert maven_opts.count("maven.repo.local") == 1
    assert xdg.count("env/xdg") == 1


def test_passes_the_exit_code_of_the_command_through():
    assert run([SHELL, "sh", "-c", "exit 7"]).returncode == 7


@pytest.mark.parametrize("os_release,name", [
    ('ID=fedora\nPRETTY_NAME="Fedora Linux 40"\n', "Fedora Linux 40"),
    ('ID=arch\n', "arch"),
])
def test_refuses_an_unsupported_os(tmp_path, os_release, name):
    f = tmp_path / "os-release"
    f.write_text(os_release)
    r = run([SHELL, "true"], env={"STREAMBENCH_OS_RELEASE": str(f)})
    assert r.returncode == 1
    assert r.stderr == (f"env/shell: error: unsupported OS '{name}' ({f}): env/shell supports Debian and Ubuntu only; "
                        "use 'nix develop' elsewhere\n")


def test_accepts_a_debian_derivative(tmp_path):
    f = tmp_path / "os-release"
    f.write_text('ID=linuxmint\nID_LIKE="ubuntu debian"\n')
    r = run([SHELL, "true"], env={"STREAMBENCH_OS_RELEASE": str(f)})
    assert r.returncode == 0, r.stderr


def fake_nix(tmp_path, features):
    """A `nix` that reports the given experimental features and records a `develop` call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    nix = bin_dir / "nix"
    nix.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = show-config ]; then echo "experimental-features = {features}"; exit 0; fi\n'
        'echo "fake nix: $*"\n'
    )
    nix.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_delegates_to_nix_develop_when_nix_has_flakes(tmp_path):
    env = fake_nix(tmp_path, "flakes nix-command")
    r = run([SHELL, "echo", "hi"], env={**env, "STREAMBENCH_NO_NIX": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"fake nix: develop {ROOT} -c echo hi\n"


def test_does_not_delegate_without_flakes_or_when_told_not_to(tmp_path):
    env = fake_nix(tmp_path, "nix-command")
    assert run([SHELL, "echo", "hi"], env={**env, "STREAMBENCH_NO_NIX": ""}).stdout == "hi\n"
    env = fake_nix(tmp_path / "with-flakes", "flakes nix-command")
    assert run([SHELL, "echo", "hi"], env={**env, "STREAMBENCH_NO_NIX": "1"}).stdout == "hi\n"


def maven_set_up(tmp_path, fail_side_by_side, fail_alone):
    """env/shell's Maven step alone, in a cache of its own without the Maven stamp: the repository and nixpkgs-fmt are
    the shared cache's (read, not written), and `mvn` is a stand-in that records its -T and fails as told."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in ("m2", "cargo"):
        os.symlink(os.path.join(CACHE, name), cache / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "mvn-calls"
    mvn = bin_dir / "mvn"
    mvn.write_text(
        "#!/bin/sh\n"
        'prev=""; for a in "$@"; do [ "$prev" = -T ] && t=$a; prev=$a; done\n'
        f'echo "$t" >>{calls}\n'
        f'if [ "$t" = 1 ]; then fail={int(fail_alone)}; else fail={int(fail_side_by_side)}; fi\n'
        'if [ "$fail" = 1 ]; then echo "[ERROR] Could not transfer artifact a:b:jar:1 (stand-in, -T $t)"; exit 1; fi\n'
    )
    mvn.chmod(0o755)
    r = run([SHELL, "true"], env={"STREAMBENCH_CACHE": str(cache), "STREAMBENCH_NO_NIX": "1",
                                  "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    stamps = [p.name for p in (cache / "stamps").iterdir() if p.name.startswith("maven-")]
    return r, calls.read_text().split() if calls.exists() else [], stamps


def test_a_side_by_side_maven_pass_that_fails_is_followed_by_one_module_after_another(tmp_path):
    # Debian's Maven 3.8 (resolver 1.6.3) locks nothing between the -T threads: two modules fetching one artifact race
    r, calls, stamps = maven_set_up(tmp_path, fail_side_by_side=True, fail_alone=False)
    assert r.returncode == 0, r.stderr
    assert calls == ["4", "1"]
    assert "side by side, Maven failed: [ERROR] Could not transfer artifact a:b:jar:1 (stand-in, -T 4)" in r.stderr
    assert "resolving the modules one after another" in r.stderr
    assert len(stamps) == 1


def test_maven_failing_one_module_after_another_too_stops_the_set_up_without_a_stamp(tmp_path):
    r, calls, stamps = maven_set_up(tmp_path, fail_side_by_side=True, fail_alone=True)
    assert r.returncode == 1
    assert calls == ["4", "1"]
    assert r.stderr.strip().splitlines()[-1].startswith(
        "env/shell: error: Maven could not resolve the dependencies of the modules systems/kafka systems/pulsar")
    assert stamps == []


def test_a_side_by_side_maven_pass_that_succeeds_is_the_only_one(tmp_path):
    r, calls, stamps = maven_set_up(tmp_path, fail_side_by_side=False, fail_alone=True)
    assert r.returncode == 0, r.stderr
    assert calls == ["4"]
    assert len(stamps) == 1
