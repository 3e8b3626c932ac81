/**
 * The JSON contract of nvmeof's own results: `target up`, `target down` and `target ana` (dry run
 * or not), `connect`, `disconnect`, `list --paths`, `metrics` and each line of `top -o json` and
 * `agent -o json` carry `"nvmeof_json": NVMEOF_JSON` as their first key, so a tool reading them
 * (the Ansible modules under integrations/ansible, a script) can refuse a shape it does not know.
 * Adding a key keeps the version; renaming or removing a key, or changing its type or meaning,
 * raises it. README
 * "JSON contract" lists the keys of each.
 *
 * nvme-cli's shapes (`list -o json`, `list-subsys`, `discover -o json`) are nvme-cli's contract,
 * key for key, and carry no version of ours.
 */
const NVMEOF_JSON = 1;

/** DATA with the contract's version as its first key. */
export function versioned<T extends object>(data: T): { nvmeof_json: number } & T {
  return { nvmeof_json: NVMEOF_JSON, ...data };
}
