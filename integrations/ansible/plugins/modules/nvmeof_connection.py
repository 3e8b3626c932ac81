#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvmeof_connection
short_description: A compute node's connection to one NVMe over Fabrics subsystem, on all its paths
description:
  - Connects this host to one subsystem through every path given (C(nvmeof connect -o json) per
    path; several paths make a native multipath head), or disconnects it (C(nvmeof disconnect)).
  - A path already connected is reported by nvmeof as existing and is not a change, so a second
    run reports C(changed=false).
  - Check mode reads the host's controllers (C(nvmeof list --paths)) and validates each path's
    options with C(connect --dry-run); nothing is written.
version_added: "0.1.0"
author:
  - nvmeof maintainers
options:
  nqn:
    description: The subsystem NQN.
    type: str
    required: true
  paths:
    description:
      - The target ports to connect through (required for state=present).
    type: list
    elements: dict
    suboptions:
      traddr:
        description: Target address.
        type: str
        required: true
      trsvcid:
        description: Target port.
        type: str
        default: "4420"
      transport:
        description: rdma or tcp.
        type: str
        default: rdma
        choices: [rdma, tcp]
      host_traddr:
        description: Local address to connect from (selects the RDMA device).
        type: str
  state:
    description: C(present) connects every path; C(absent) disconnects every controller of O(nqn).
    type: str
    choices: [present, absent]
    default: present
  persist:
    description:
      - Also save the connections in C(/etc/nvmeof/connections.yaml), so
        C(nvmeof-autoconnect.service) restores them at boot (C(connect --persist)). With
        state=absent, the saved entries of O(nqn) are removed too.
    type: bool
    default: false
  ctrl_loss_tmo:
    description: Seconds to keep reconnecting a lost path; -1 forever (HA with several paths).
    type: int
  reconnect_delay:
    description: Seconds between reconnect attempts.
    type: int
  fast_io_fail_tmo:
    description: Fail I/O on a lost path after this many seconds, so multipath moves it to another.
    type: int
  keep_alive_tmo:
    description: Keep-alive timeout in seconds.
    type: int
  io_timeout:
    description:
      - I/O timeout in seconds of each path's namespace queues (C(connect --io-timeout)), set when
        the path is connected. A path that stops answering then fails its I/O over to another
        path after this long, rather than after its keep-alive timed out twice (C(2) is the HA
        profile's). A path connected already keeps its own.
    type: int
  nr_io_queues:
    description: Number of I/O queues.
    type: int
  queue_size:
    description: I/O queue depth (16 to 1024).
    type: int
  hostnqn:
    description: Host NQN (default /etc/nvme/hostnqn).
    type: str
  nvmeof_bin:
    description: The nvmeof binary. Default C(nvmeof) from PATH or C(/usr/local/sbin).
    type: path
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
notes:
  - Runs as root. An unreachable path fails the task with nvmeof's message and hint
    (C(rc) 1 failure, 2 usage, 3 environment such as no RDMA device).
seealso:
  - module: nvmeof.fabric.nvmeof_target
  - module: nvmeof.fabric.nvmeof_facts
"""

EXAMPLES = r"""
- name: Two paths to one pool, failing over within 5 s, saved for boot
  nvmeof.fabric.nvmeof_connection:
    nqn: nqn.2026-12.io.example:pool1
    paths:
      - traddr: 192.168.100.10
      - traddr: 192.168.101.10
    ctrl_loss_tmo: -1
    fast_io_fail_tmo: 5
    io_timeout: 2
    persist: true

- name: Disconnect it
  nvmeof.fabric.nvmeof_connection:
    nqn: nqn.2026-12.io.example:pool1
    state: absent
"""

RETURN = r"""
controllers:
  description:
    - For state=present, nvmeof's connect result per path (device, traddr, state, existing,
      namespaces with their block devices); for state=absent, the controllers disconnected.
  returned: always
  type: list
  elements: dict
devices:
  description: The block devices of the subsystem's namespaces on this host (state=present).
  returned: always
  type: list
  elements: str
  sample: ["/dev/nvme1n1"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nvmeof.fabric.plugins.module_utils.nvmeof import run_nvmeof

FLAGS = [
    ("ctrl_loss_tmo", "--ctrl-loss-tmo"),
    ("reconnect_delay", "--reconnect-delay"),
    ("fast_io_fail_tmo", "--fast-io-fail-tmo"),
    ("keep_alive_tmo", "--keep-alive-tmo"),
    ("io_timeout", "--io-timeout"),
    ("nr_io_queues", "--nr-io-queues"),
    ("queue_size", "--queue-size"),
    ("hostnqn", "--hostnqn"),
]


def connect_args(p, path):
    args = ["connect", "-n", p["nqn"], "-t", path["transport"], "-a", path["traddr"],
            "-s", str(path["trsvcid"])]
    if path.get("host_traddr"):
        args += ["-w", path["host_traddr"]]
    for key, flag in FLAGS:
        if p[key] is not None:
            args += ["%s=%s" % (flag, p[key])]
    return args


def live_controllers(module, nqn):
    _, data, _ = run_nvmeof(module, ["list", "--paths"])
    return [c for s in data.get("subsystems", []) if s.get("subsysnqn") == nqn
            for c in s.get("controllers", [])]


def devices_of(results):
    out = []
    for r in results:
        for n in r.get("namespaces", []):
            d = n.get("device") or n.get("name")
            if d and d not in out:
                out.append(d if d.startswith("/") else "/dev/" + d)
    return out


def present(module, p):
    if not p["paths"]:
        module.fail_json(msg="state=present needs paths: at least one {traddr: ADDR}.")
    if module.check_mode:
        live = live_controllers(module, p["nqn"])
        missing = []
        for path in p["paths"]:
            run_nvmeof(module, connect_args(p, path) + ["--dry-run"])
            if not any(c.get("address", {}).get("traddr") == path["traddr"]
                       and str(c.get("address", {}).get("trsvcid")) == str(path["trsvcid"])
                       and c.get("transport") == path["transport"] for c in live):
                missing.append(path["traddr"])
        module.exit_json(changed=bool(missing), controllers=live, devices=[], would_connect=missing)
    results = []
    changed = False
    for path in p["paths"]:
        args = connect_args(p, path)
        if p["persist"]:
            args.append("--persist")
        _, data, _ = run_nvmeof(module, args)
        results.append(data)
        if not data.get("existing", False):
            changed = True
        if data.get("saved_change", "unchanged") != "unchanged":
            changed = True
    module.exit_json(changed=changed, controllers=results, devices=devices_of(results))


def absent(module, p):
    changed = False
    removed = []
    if module.check_mode:
        live = live_controllers(module, p["nqn"])
        module.exit_json(changed=bool(live), controllers=live, devices=[])
    _, data, _ = run_nvmeof(module, ["disconnect", "-n", p["nqn"]])
    removed = data.get("controllers", [])
    changed = bool(removed)
    if p["persist"]:
        rc, saved, _ = run_nvmeof(module, ["connections", "remove", "-n", p["nqn"]], allow_fail=True)
        # Exit 0: entries were removed; exit 2: none was saved for this NQN.
        changed = changed or rc == 0
    module.exit_json(changed=changed, controllers=removed, devices=[])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nqn=dict(type="str", required=True),
            paths=dict(type="list", elements="dict", options=dict(
                traddr=dict(type="str", required=True),
                trsvcid=dict(type="str", default="4420"),
                transport=dict(type="str", default="rdma", choices=["rdma", "tcp"]),
                host_traddr=dict(type="str"),
            )),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            persist=dict(type="bool", default=False),
            ctrl_loss_tmo=dict(type="int"),
            reconnect_delay=dict(type="int"),
            fast_io_fail_tmo=dict(type="int"),
            keep_alive_tmo=dict(type="int"),
            io_timeout=dict(type="int"),
            nr_io_queues=dict(type="int"),
            queue_size=dict(type="int"),
            hostnqn=dict(type="str"),
            nvmeof_bin=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    if module.params["state"] == "present":
        present(module, module.params)
    else:
        absent(module, module.params)


if __name__ == "__main__":
    main()
