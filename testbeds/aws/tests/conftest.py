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

REGION = "us-east-1"
AMI_NAME = "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250101"


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


def aws_env(url: str) -> dict:
    return {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION, "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent"}


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
    seed = ec2.run_instances(ImageId="ami-1e749f67", MinCount=1, MaxCount=1, InstanceType="t3.micro")["Instances"][0]
    ec2.create_image(InstanceId=seed["InstanceId"], Name=AMI_NAME)
    ec2.terminate_instances(InstanceIds=[seed["InstanceId"]])
    return ec2
