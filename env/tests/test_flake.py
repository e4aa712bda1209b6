"""flake.lock pins a real nixpkgs revision; two public sources agree on its hash."""

import base64
import json
import re
import shutil
import subprocess

import pytest

from env.tests.support import ROOT

REV = "e6eae2ee2110f3d31110d5c222cd395303343b08"
NAR_HASH = "sha256-KHFT9UWOF2yRPlAnSXQJh6uVcgNcWlFqqiAZ7OVlHNc="
# the same revision's `nix-prefetch-url --unpack` hash (base32), from a second public source (a default.nix)
PREFETCH_BASE32 = "1mqwcpjyq690m9m52njw0dr9baw715s4j9sh7s8nq5wf8psm6w98"
NIX32 = "0123456789abcdfghijklmnpqrsvwxyz"


def nix_base32_decode(text: str) -> bytes:
    """Nix's base32 (its own alphabet, least significant digit last) to bytes."""
    size = len(text) * 5 // 8
    out = bytearray(size)
    for n, char in enumerate(reversed(text)):
        digit = NIX32.index(char)
        bit = n * 5
        i, j = divmod(bit, 8)
        out[i] |= (digit << j) & 0xFF
        if i + 1 < size:
            out[i + 1] |= digit >> (8 - j)
        elif digit >> (8 - j):
            raise ValueError("invalid nix base32: bits beyond the hash")
    return bytes(out)


def test_lock_pins_nixpkgs_to_the_public_revision():
    lock = json.loads((ROOT / "flake.lock").read_text())
    assert lock["version"] == 7 and lock["root"] == "root"
    assert lock["nodes"]["root"]["inputs"] == {"nixpkgs": "nixpkgs", "pyproject-build-systems": "pyproject-build-systems",
                                               "pyproject-nix": "pyproject-nix", "uv2nix": "uv2nix"}
    node = lock["nodes"]["nixpkgs"]
    assert node["locked"] == {
        "lastModified": 1770115704, "narHash": NAR_HASH, "owner": "NixOS",
        "repo": "nixpkgs", "rev": REV, "type": "github",
    }
    assert node["original"] == {"owner": "NixOS", "ref": "nixos-unstable", "repo": "nixpkgs", "type": "github"}


def test_flake_input_matches_the_lock():
    text = (ROOT / "flake.nix").read_text()
    assert re.search(r'\n    nixpkgs\.url = "github:NixOS/nixpkgs/nixos-unstable";', text)


def test_nar_hash_agrees_with_the_prefetch_hash_of_a_second_source():
    sri = base64.b64decode(NAR_HASH.removeprefix("sha256-"))
    assert nix_base32_decode(PREFETCH_BASE32) == sri


def test_decoder_rejects_a_changed_digit():
    changed = "0" + PREFETCH_BASE32[1:]
    assert nix_base32_decode(changed) != base64.b64decode(NAR_HASH.removeprefix("sha256-"))


@pytest.mark.skipif(shutil.which("nix") is None, reason="nix (Debian's nix-bin) is not installed")
def test_nix_itself_converts_the_prefetch_hash_to_the_lock_narhash():
    r = subprocess.run(["nix", "--extra-experimental-features", "nix-command", "hash", "to-sri",
                        "--type", "sha256", PREFETCH_BASE32], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == NAR_HASH


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="nix-instantiate is not installed")
def test_flake_nix_parses():
    r = subprocess.run(["nix-instantiate", "--parse", str(ROOT / "flake.nix")], capture_output=True, text=True,
                       timeout=60, env={"NIX_CONFIG": "build-users-group =", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert "nixpkgs" in r.stdout


# uv2nix and its two companions, as pinned by DiagNet/DiagNet's flake.lock at commit f726af4d (a public lock
# that resolves the same three inputs with the same follows); copied, never computed here
PYTHON_INPUTS = {
    "pyproject-nix": ("pyproject.nix", "2c8df1383b32e5443c921f61224b198a2282a657", 1764134915,
                      "sha256-xaKvtPx6YAnA3HQVp5LwyYG1MaN4LLehpQI8xEdBvBY=", {"nixpkgs": ["nixpkgs"]}),
    "uv2nix": ("uv2nix", "8a1d20ad536b12d37ff4ab97007c8b97910e38be", 1764657344,
               "sha256-xzxeus0SIuokp1u7kZq2nLuhAQ2BK0TbeSp2SnZr5bo=",
               {"nixpkgs": ["nixpkgs"], "pyproject-nix": ["pyproject-nix"]}),
    "pyproject-build-systems": ("build-system-pkgs", "042904167604c681a090c07eb6967b4dd4dae88c", 1763662255,
                                "sha256-4bocaOyLa3AfiS8KrWjZQYu+IAta05u3gYZzZ6zXbT0=",
                                {"nixpkgs": ["nixpkgs"], "pyproject-nix": ["pyproject-nix"], "uv2nix": ["uv2nix"]}),
}


@pytest.mark.parametrize("name", sorted(PYTHON_INPUTS))
def test_lock_pins_the_python_inputs_to_public_revisions(name):
    repo, rev, modified, nar, inputs = PYTHON_INPUTS[name]
    node = json.loads((ROOT / "flake.lock").read_text())["nodes"][name]
    assert node == {"inputs": inputs,
                    "locked": {"lastModified": modified, "narHash": nar, "owner": "pyproject-nix", "repo": repo,
                               "rev": rev, "type": "github"},
                    "original": {"owner": "pyproject-nix", "repo": repo, "type": "github"}}


def test_flake_inputs_follow_as_the_lock_says():
    text = (ROOT / "flake.nix").read_text()
    for name, (repo, *_rest, inputs) in PYTHON_INPUTS.items():
        block = re.search(name + r" = \{(.*?)\n    \};", text, re.S)
        assert block, f"flake.nix: no input {name}"
        assert f'url = "github:pyproject-nix/{repo}";' in block.group(1)
        for follows in inputs:
            assert f'inputs.{follows}.follows = "{follows}";' in block.group(1), (name, follows)


def nixpkgs_attrs():
    """(names the flake may use, alias names it must not) from env/nixpkgs-attrs.txt."""
    names, aliases = set(), set()
    section = names
    for line in (ROOT / "env/nixpkgs-attrs.txt").read_text().splitlines():
        if line.strip() == "# aliases":
            section = aliases
        elif line and not line.startswith("#"):
            section.add(line.split()[0])
    return names, aliases


def flake_attrs(text: str) -> set[str]:
    """Every nixpkgs attribute flake.nix names: pkgs.X, and the bare names of `with pkgs; [ ... ]` lists."""
    used = set(re.findall(r"(?<![\w.-])pkgs\.([A-Za-z_][\w-]*)", text))
    for block in re.findall(r"with pkgs; \[(.*?)\];", text, re.S):
        block = re.sub(r"\([^()]*\)", " ", block)  # (pythonFor pkgs) and the like are not attributes
        used |= set(re.findall(r"(?<![\w.-])([A-Za-z_][\w-]*)", block))
    return used


def test_flake_uses_only_attributes_spelled_as_nixpkgs_spells_them():
    names, aliases = nixpkgs_attrs()
    used = flake_attrs((ROOT / "flake.nix").read_text())
    assert "poppler-utils" in used and "python311" in used and "jdk17" in used
    assert not used & aliases, f"flake.nix uses nixpkgs aliases: {sorted(used & aliases)}"
    assert used <= names, f"flake.nix uses attributes not in env/nixpkgs-attrs.txt: {sorted(used - names)}"


def test_attribute_check_catches_a_removed_spelling():
    names, aliases = nixpkgs_attrs()
    used = flake_attrs("packages = with pkgs; [ (pythonFor pkgs) poppler_utils fio ];\n x = pkgs.typst;")
    assert used == {"poppler_utils", "fio", "typst"}
    assert used & aliases == {"poppler_utils"}
