# -*- coding: utf-8 -*-
# A callback for the fabric tests: one JSON line per task result per host (play, task, status,
# changed, seconds from the task's start on that host, msg) into $NVMEOF_TIMING_LOG.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: timing
type: aggregate
short_description: per-host task results and durations as JSON lines
description: Writes one JSON line per task result per host to $NVMEOF_TIMING_LOG.
requirements:
  - enable in configuration
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "timing"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.play = None
        self.starts = {}
        self.out = os.environ.get("NVMEOF_TIMING_LOG")

    def v2_playbook_on_play_start(self, play):
        self.play = play.get_name()

    def v2_runner_on_start(self, host, task):
        self.starts[(host.get_name(), task._uuid)] = time.time()

    def _write(self, result, status):
        if not self.out:
            return
        host = result._host.get_name()
        start = self.starts.pop((host, result._task._uuid), None)
        r = result._result
        line = dict(
            play=self.play,
            task=result._task.get_name(),
            host=host,
            status=status,
            changed=bool(r.get("changed", False)),
            seconds=round(time.time() - start, 2) if start else None,
            msg=r.get("msg"),
            hint=r.get("hint"),
            rc=r.get("rc"),
            diff=r.get("diff"),
        )
        with open(self.out, "a") as f:
            f.write(json.dumps(line) + "\n")

    def v2_runner_on_ok(self, result):
        self._write(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._write(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._write(result, "unreachable")
