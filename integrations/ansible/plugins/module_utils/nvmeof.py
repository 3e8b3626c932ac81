# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs the nvmeof binary with -o json and turns its results and errors into module results.

nvmeof's JSON contract (docs/json.md): its own results start with "nvmeof_json": 1;
an error comes on stdout as {"error": {"message", "hint", "exit_code"}} with exit code 1
(failure), 2 (usage) or 3 (environment).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

NVMEOF_JSON = 1

EXIT_MEANING = {
    1: "failure",
    2: "usage error",
    3: "environment (not root, module, configfs, RDMA device or library missing)",
}

COMMON_ARGS = dict(
    nvmeof_bin=dict(type="path", default=None),
)


def nvmeof_path(module):
    """The nvmeof binary: nvmeof_bin, or nvmeof in PATH (/usr/local/sbin included)."""
    given = module.params.get("nvmeof_bin")
    if given:
        return given
    return module.get_bin_path("nvmeof", required=True, opt_dirs=["/usr/local/sbin", "/usr/local/bin"])


def run_nvmeof(module, args, check_contract=True, allow_fail=False):
    """Runs `nvmeof ARGS -o json`; returns (rc, data, stderr). On an error exit (unless allow_fail)
    fails the module with nvmeof's message, hint and exit code."""
    cmd = [nvmeof_path(module)] + list(args) + ["-o", "json"]
    rc, out, err = module.run_command(cmd)
    data = None
    if out.strip():
        try:
            data = json.loads(out)
        except ValueError:
            module.fail_json(
                msg="nvmeof printed something that is not JSON: %s" % out[:200],
                rc=rc, stderr=err, cmd=cmd,
            )
    if rc != 0:
        if allow_fail:
            return rc, data, err
        e = (data or {}).get("error") if isinstance(data, dict) else None
        msg = e.get("message") if e else (err.strip() or "nvmeof exited %d" % rc)
        module.fail_json(
            msg=msg,
            hint=(e or {}).get("hint"),
            rc=rc,
            exit_meaning=EXIT_MEANING.get(rc, "unknown"),
            stderr=err,
            cmd=cmd,
            result=data,
        )
    if check_contract and isinstance(data, dict) and "nvmeof_json" in data:
        if data["nvmeof_json"] != NVMEOF_JSON:
            module.fail_json(
                msg="nvmeof speaks JSON contract version %s; this collection knows version %d"
                % (data["nvmeof_json"], NVMEOF_JSON),
                hint="Install the nvmeof binary that matches this collection.",
                cmd=cmd,
            )
    return rc, data, err


def describe_step(step):
    """One line for a plan step, as nvmeof's text output says it."""
    op = step.get("op")
    if op == "write":
        value = "(secret)" if step.get("secret") else "'%s'" % step.get("value")
        was = "" if step.get("secret") or "old" not in step else "  (was '%s')" % step["old"]
        return "write  %s = %s%s" % (step.get("path"), value, was)
    if op == "link":
        return "link   %s -> %s" % (step.get("path"), step.get("target"))
    if op == "unlink":
        return "unlink %s" % step.get("path")
    return "%-6s %s" % (op, step.get("path"))
