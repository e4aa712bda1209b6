"""A moto server on 127.0.0.1 (a free port) for the AWS testbed's tests, with the AWS environment pointed at it.

Dummy credentials and the endpoint URL are set only in the test's environment (monkeypatch); the emulator's
addresses are fake and nothing ever connects to them.
"""
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from testbeds.aws.rehearsal import AMI_NAME, emulator_env as aws_env, seed_image  # noqa: F401 (AMI_NAME, aws_env: the tests import them from here)

REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto_server(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def aws(moto_server, monkeypatch, tmp_path):
    """The emulator's environment in this test only, a fresh emulator state, and an Ubuntu-named AMI in it."""
    for k, v in aws_env(moto_server).items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("STREAMBENCH_CACHE", str(tmp_path / "cache"))
    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST")).close()
    import boto3

    ec2 = boto3.client("ec2", region_name=REGION)
    # an image named like Canonical's, owned by the emulator's account (the AMI lookup must find it by name)
    seed_image(ec2)
    return ec2
