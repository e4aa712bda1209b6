from testbeds.tests.localsshd import sshd  # noqa: F401 (the fixture)
