/**
 * The Ansible side of the fleet tier and of scripts/bench/agent.sh: a collections path holding this
 * checkout's collection (nvmeof.fabric), the lab fabric's inventory (each node's sshd through its
 * 127.0.0.1 forward, `scripts/lab/lab fabric ssh-config --inventory`), and ansible-playbook runs
 * with each task's per-host duration logged (timing.py).
 */
import assert from "node:assert/strict";
import { ROOT } from "../../helpers.ts";
import { addr } from "../../fabric/fabric.ts";

const PLAYBOOKS = `${ROOT}/integrations/ansible/playbooks`;

/** One task on one host, as timing.py logs it. */
export interface TaskLine {
  play: string;
  task: string;
  host: string;
  status: "ok" | "failed" | "skipped" | "unreachable";
  changed: boolean;
  seconds: number | null;
  msg?: string;
  hint?: string;
  rc?: number;
  diff?: { prepared?: string } | { prepared?: string }[];
}

/** One playbook run: what it was, its wall seconds, its task lines. */
export interface PlayRun {
  run: string;
  wall: number;
  lines: TaskLine[];
}

/** Runs CMD ARGS… in the checkout; its exit code and output. */
export async function output(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, {
    args,
    env,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * The Ansible controller in DIR: VARS are every run's extra variables (a run's own EXTRA win);
 * each run is given to ON_RUN when it ends.
 */
export async function controller(
  dir: string,
  vars: Record<string, unknown>,
  onRun: (r: PlayRun) => void = () => {},
) {
  await Deno.mkdir(`${dir}/collections/ansible_collections/nvmeof`, { recursive: true });
  await Deno.symlink(
    `${ROOT}/integrations/ansible`,
    `${dir}/collections/ansible_collections/nvmeof/fabric`,
  );
  const inv = await output(`${ROOT}/scripts/lab/lab`, ["fabric", "ssh-config", "--inventory"]);
  assert.equal(inv.code, 0, inv.stderr);
  await Deno.writeTextFile(
    `${dir}/inventory.ini`,
    inv.stdout + `\n[storage:vars]\nnvmeof_traddr=${addr("target", 0)}\n`,
  );
  let n = 0;
  return {
    inventory: inv.stdout,
    /** ansible-playbook PLAYBOOK ARGS…; the per-host task lines and the output. */
    async play(playbook: string, args: string[] = [], extra: Record<string, unknown> = {}) {
      const log = `${dir}/timing-${++n}.jsonl`;
      await Deno.writeTextFile(`${dir}/vars-${n}.json`, JSON.stringify({ ...vars, ...extra }));
      const t0 = performance.now();
      const r = await output("ansible-playbook", [
        "-i",
        `${dir}/inventory.ini`,
        `${PLAYBOOKS}/${playbook}`,
        "-e",
        `@${dir}/vars-${n}.json`,
        ...args,
      ], {
        ANSIBLE_CONFIG: `${PLAYBOOKS}/ansible.cfg`,
        ANSIBLE_COLLECTIONS_PATH: `${dir}/collections`,
        ANSIBLE_CALLBACK_PLUGINS: `${ROOT}/tests/fleet/ansible`,
        ANSIBLE_CALLBACKS_ENABLED: "timing",
        ANSIBLE_NOCOLOR: "1",
        ANSIBLE_SSH_CONTROL_PATH_DIR: `${dir}/cp`,
        // Under emulation, on a loaded machine, sshd can take a minute to say hello.
        ANSIBLE_TIMEOUT: "300",
        // The connections end with the test, not ten minutes later.
        ANSIBLE_SSH_ARGS: "-o ControlMaster=auto -o ControlPersist=120s",
        NVMEOF_TIMING_LOG: log,
      });
      const wall = (performance.now() - t0) / 1000;
      let text = "";
      try {
        text = await Deno.readTextFile(log);
      } catch { /* no task ran */ }
      const lines = text.split("\n").filter((l) => l).map((l) => JSON.parse(l) as TaskLine);
      onRun({ run: `${playbook} ${args.join(" ")}`.trim(), wall, lines });
      return { ...r, lines };
    },
  };
}
