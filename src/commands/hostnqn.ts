/**
 * `nvmeof hostnqn`: the host NQN and host ID used for connects (nvme-cli's /etc/nvme files).
 */
import type { CommandDetails } from "../cli/command.ts";

/** `nvmeof hostnqn`. */
export const hostnqnCommand: CommandDetails = {
  description: `
Shows the host NQN and host ID that connect and discover send, read as nvme-cli does from
/etc/nvme/hostnqn and /etc/nvme/hostid (LIBNVME_HOSTNQN / LIBNVME_HOSTID override them).
--generate writes the files that are missing and never overwrites one: a new pair shares one
UUID (the machine's DMI product UUID when readable, else a random one), and a missing host ID
takes the UUID of an existing host NQN. Give the host NQN to the target's allowed hosts.`,
  options: {
    generate: { type: "boolean", description: "Create the missing files (never overwrites)" },
  },
  examples: [
    "nvmeof hostnqn",
    "sudo nvmeof hostnqn --generate",
    "nvmeof hostnqn -o json",
  ],
  async run(ctx) {
    const { generateHostFiles, resolveHostIdentity } = await import("../fabrics/host_identity.ts");
    const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
    const paths = fabricsPaths();
    if (ctx.values.generate === true) {
      const g = await generateHostFiles(paths);
      const data = { hostnqn: g.hostnqn, hostid: g.hostid, written: g.written, kept: g.kept };
      return {
        data,
        text: (_?: unknown, d = data) =>
          [
            `hostnqn: ${d.hostnqn}`,
            `hostid:  ${d.hostid}`,
            ...d.written.map((p) => `wrote ${p}`),
            ...d.kept.map((p) => `kept existing ${p}`),
          ].join("\n"),
      };
    }
    const id = await resolveHostIdentity({}, paths);
    const data = {
      hostnqn: id.hostnqn,
      hostid: id.hostid,
      hostnqn_source: id.hostnqnSource,
      hostid_source: id.hostidSource,
    };
    return {
      data,
      text: (_?: unknown, d = data) =>
        `hostnqn: ${d.hostnqn}  (${d.hostnqn_source})\nhostid:  ${d.hostid}  (${d.hostid_source})`,
    };
  },
};
