"""Ansible callback: record each failed or unreachable host (host, task, message) as JSON in
$SB_FAILURES_FILE, so testbeds/remote.py can report one line naming the host."""
from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: sb_failures
type: aggregate
short_description: failed and unreachable hosts as JSON
description: writes [{host, task, msg}] to $SB_FAILURES_FILE at the end of the run
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sb_failures"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.failures = []

    def _add(self, result, kind):
        r = result._result
        for item in r.get("results") or []:  # a loop: the first failed item says why
            if isinstance(item, dict) and item.get("failed"):
                r = item
                break
        msg = r.get("msg") or r.get("stderr") or r.get("module_stderr") or kind
        if msg == "non-zero return code" and r.get("stderr"):  # a command's own words say why, not its exit status
            msg = f"exit {r.get('rc')}: {r['stderr']}"
        msg = " ".join(str(msg).split())[:400]
        self.failures.append({"host": result._host.get_name(), "task": result._task.get_name(), "kind": kind,
                              "msg": msg})

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if not ignore_errors:
            self._add(result, "failed")

    def v2_runner_on_unreachable(self, result):
        self._add(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("SB_FAILURES_FILE")
        if path:
            with open(path, "w") as f:
                json.dump(self.failures, f)
