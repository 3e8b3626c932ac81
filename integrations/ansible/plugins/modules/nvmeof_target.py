#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvmeof_target
short_description: An NVMe over Fabrics target (nvmet) from a declarative spec
description:
  - Makes the kernel's nvmet configfs tree match a spec with C(nvmeof target up -o json), or
    removes it with C(nvmeof target down).
  - nvmeof plans every configfs step before it writes one, applies idempotently and rolls back
    on error. C(changed) is true when the plan had steps; check mode runs C(--dry-run) and
    reports the steps it would take; with C(--diff) the steps are the diff.
  - The spec is nvmeof's target spec (see C(nvmeof target schema)), with hosts, subsystems with
    namespaces and allowed hosts, ports.
version_added: "0.1.0"
author:
  - nvmeof maintainers
options:
  spec:
    description:
      - The spec, as a dict or a YAML/JSON string.
      - Written to O(path) first when O(path) is given (a change of its own when the file
        differs), else to a temporary file.
      - Mutually exclusive with O(src).
    type: raw
  src:
    description:
      - A spec file already on the managed host.
    type: path
  path:
    description:
      - Where to keep an inline O(spec) on the host, for instance C(/etc/nvmeof/target.yaml),
        the file the boot unit (C(nvmeof target enable)) applies.
    type: path
  state:
    description:
      - C(present) applies the spec (C(target up)); C(absent) removes what the spec describes
        (C(target down -f)), or with no spec at all everything nvmet has (C(target down --all)).
    type: str
    choices: [present, absent]
    default: present
  prune:
    description:
      - Also remove what the spec does not mention (C(target up --prune)).
    type: bool
    default: false
  allow_empty:
    description:
      - With O(prune), allow an empty spec (which removes everything).
    type: bool
    default: false
  force:
    description:
      - Remove ports, links or subsystems even while hosts are connected to them. Without it
        nvmeof refuses and changes nothing.
    type: bool
    default: false
  configfs:
    description:
      - Where configfs is mounted (nvmet lives in I(configfs)/nvmet).
    type: path
  nvmeof_bin:
    description:
      - The nvmeof binary. Default C(nvmeof) from PATH or C(/usr/local/sbin).
    type: path
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
notes:
  - Runs on the storage server as root. Errors of nvmeof fail the task with its message and
    hint; C(rc) is nvmeof's exit code (1 failure, 2 usage, 3 environment).
seealso:
  - module: nvmeof.fabric.nvmeof_connection
"""

EXAMPLES = r"""
- name: Export /dev/nvme0n1 to two compute nodes over RDMA
  nvmeof.fabric.nvmeof_target:
    path: /etc/nvmeof/target.yaml
    spec:
      hosts:
        - nqn: "{{ hostvars['compute1'].nvmeof_hostnqn }}"
      subsystems:
        - nqn: nqn.2026-12.io.example:pool1
          hosts: ["{{ hostvars['compute1'].nvmeof_hostnqn }}"]
          namespaces:
            - nsid: 1
              device: /dev/nvme0n1
      ports:
        - id: 1
          trtype: rdma
          traddr: 192.168.100.10
          trsvcid: 4420
          subsystems: [nqn.2026-12.io.example:pool1]

- name: Apply a spec file already on the host, removing what it does not mention
  nvmeof.fabric.nvmeof_target:
    src: /etc/nvmeof/target.yaml
    prune: true

- name: Remove everything nvmet exports (refused while hosts are connected)
  nvmeof.fabric.nvmeof_target:
    state: absent
"""

RETURN = r"""
changed:
  description: The plan had steps (in check mode, would have had).
  returned: always
  type: bool
steps:
  description: The configfs steps, in order, as nvmeof's JSON has them (secrets masked).
  returned: always
  type: list
  elements: dict
  sample: [{"op": "mkdir", "path": "subsystems/nqn.2026-12.io.example:pool1"}]
summary:
  description: How many hosts, subsystems, namespaces and ports the spec holds (state=present).
  returned: when state=present
  type: dict
nvmeof_warnings:
  description: nvmeof's warnings about the spec (any host allowed); also shown as task warnings.
  returned: always
  type: list
  elements: str
result:
  description: nvmeof's whole JSON result (contract version in C(nvmeof_json)).
  returned: always
  type: dict
"""

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.nvmeof.fabric.plugins.module_utils.nvmeof import (
    describe_step,
    run_nvmeof,
)


def spec_text(spec):
    if isinstance(spec, (dict, list)):
        return json.dumps(spec, indent=2, sort_keys=False) + "\n"
    return str(spec)


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except (IOError, OSError):
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            spec=dict(type="raw"),
            src=dict(type="path"),
            path=dict(type="path"),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            prune=dict(type="bool", default=False),
            allow_empty=dict(type="bool", default=False),
            force=dict(type="bool", default=False),
            configfs=dict(type="path"),
            nvmeof_bin=dict(type="path"),
        ),
        mutually_exclusive=[["spec", "src"]],
        required_by={"path": "spec"},
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] == "present" and p["spec"] is None and p["src"] is None:
        module.fail_json(msg="state=present needs a spec: give spec (inline) or src (a file on the host).")

    file_changed = False
    tmp = None
    spec_file = p["src"]
    if p["spec"] is not None:
        text = to_bytes(spec_text(p["spec"]))
        if p["path"]:
            file_changed = read_file(p["path"]) != text
            if file_changed and not module.check_mode:
                d = os.path.dirname(p["path"])
                if d and not os.path.isdir(d):
                    os.makedirs(d, 0o755)
                fd, staged = tempfile.mkstemp(dir=d or None, prefix=".nvmeof-spec-")
                with os.fdopen(fd, "wb") as f:
                    f.write(text)
                os.chmod(staged, 0o644)
                module.atomic_move(staged, p["path"])
            if not (file_changed and module.check_mode):
                spec_file = p["path"]
        if spec_file is None:
            fd, tmp = tempfile.mkstemp(prefix="nvmeof-spec-", suffix=".yaml")
            with os.fdopen(fd, "wb") as f:
                f.write(text)
            spec_file = tmp

    args = ["target", "up" if p["state"] == "present" else "down"]
    args += ["-f", spec_file] if spec_file else ["--all"]
    if p["state"] == "present" and p["prune"]:
        args.append("--prune")
        if p["allow_empty"]:
            args.append("--allow-empty")
    if p["force"]:
        args.append("--force")
    if module.check_mode:
        args.append("--dry-run")
    if p["configfs"]:
        args += ["--configfs", p["configfs"]]
    try:
        rc, data, err = run_nvmeof(module, args)
    finally:
        if tmp:
            os.unlink(tmp)

    steps = data.get("steps", [])
    result = dict(
        changed=bool(steps) or file_changed,
        steps=steps,
        nvmeof_warnings=data.get("warnings", []),
        result=data,
    )
    if "summary" in data:
        result["summary"] = data["summary"]
    for w in data.get("warnings", []):
        module.warn(w)
    if module._diff:
        lines = [describe_step(s) for s in steps]
        if file_changed:
            lines.insert(0, "spec file %s changes" % p["path"])
        result["diff"] = dict(
            before_header="configfs (nvmet)",
            after_header="plan",
            prepared="\n".join(lines) + ("\n" if lines else ""),
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
