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
    assert lock["nodes"]["root"]["inputs"] == {"nixpkgs": "nixpkgs"}
    node = lock["nodes"]["nixpkgs"]
    assert node["locked"] == {
        "lastModified": 1770115704, "narHash": NAR_HASH, "owner": "NixOS",
        "repo": "nixpkgs", "rev": REV, "type": "github",
    }
    assert node["original"] == {"owner": "NixOS", "ref": "nixos-unstable", "repo": "nixpkgs", "type": "github"}


def test_flake_input_matches_the_lock():
    text = (ROOT / "flake.nix").read_text()
    assert re.search(r'inputs\.nixpkgs\.url = "github:NixOS/nixpkgs/nixos-unstable";', text)


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
