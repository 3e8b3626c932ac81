#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvmeof_facts
short_description: This host's NVMe over Fabrics identity, subsystems and paths as facts
description:
  - Sets C(ansible_facts.nvmeof) from C(nvmeof hostnqn -o json) (the host NQN and host ID),
    C(nvmeof list --paths -o json) (subsystems, namespaces, paths, controllers) and, when asked,
    C(nvmeof doctor -o json) (checks of the host, the fabric and a target).
  - Never changes anything.
version_added: "0.1.0"
author:
  - nvmeof maintainers
options:
  doctor:
    description: Also run C(nvmeof doctor) (slower; RDMA devices, modules, reachability).
    type: bool
    default: false
  doctor_traddr:
    description: With O(doctor), the target address to check reachability of.
    type: str
  nvmeof_bin:
    description: The nvmeof binary. Default C(nvmeof) from PATH or C(/usr/local/sbin).
    type: path
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
notes:
  - A host without a host NQN yet has C(hostnqn) null (the nvmeof_host role generates one).
"""

EXAMPLES = r"""
- name: Collect the host NQN of every compute node, for the target's spec
  nvmeof.fabric.nvmeof_facts:

- name: Allow exactly those hosts
  ansible.builtin.debug:
    msg: "{{ groups['compute'] | map('extract', hostvars, ['ansible_facts', 'nvmeof', 'hostnqn']) | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(nvmeof).
  returned: always
  type: dict
  contains:
    nvmeof:
      description: hostnqn, hostid, subsystems (nvmeof list --paths), doctor (when asked).
      type: dict
      returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nvmeof.fabric.plugins.module_utils.nvmeof import run_nvmeof


def main():
    module = AnsibleModule(
        argument_spec=dict(
            doctor=dict(type="bool", default=False),
            doctor_traddr=dict(type="str"),
            nvmeof_bin=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    facts = {}
    rc, ident, _ = run_nvmeof(module, ["hostnqn"], allow_fail=True)
    facts["hostnqn"] = (ident or {}).get("hostnqn") if rc == 0 else None
    facts["hostid"] = (ident or {}).get("hostid") if rc == 0 else None
    _, paths, _ = run_nvmeof(module, ["list", "--paths"])
    facts["subsystems"] = paths.get("subsystems", [])
    if module.params["doctor"]:
        args = ["doctor"]
        if module.params["doctor_traddr"]:
            args += ["-a", module.params["doctor_traddr"]]
        # doctor exits 1 when a check fails: that is a finding, not a module failure.
        _, doc, _ = run_nvmeof(module, args, allow_fail=True)
        facts["doctor"] = doc
    module.exit_json(changed=False, ansible_facts=dict(nvmeof=facts))


if __name__ == "__main__":
    main()
