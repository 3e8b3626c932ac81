/**
 * Which side of the fabric the doctor checks. A compute node may have nvmet loaded for other
 * reasons; its (empty) nvmet tree says nothing about the target at -a. So without --role the
 * local target is checked only when -a is an address of this machine.
 */
import { type LocalAddress, localInterfaceOf } from "../net/address.ts";

/** The sides the doctor can check. */
export type Role = "initiator" | "target" | "both";

/** The role and why it was chosen. */
export interface RoleChoice {
  role: Role;
  reason: string;
}

/** Chooses the role from --role, -a and this machine's addresses. */
export function chooseRole(
  asked: Role | undefined,
  traddr: string | undefined,
  local: LocalAddress[],
): RoleChoice {
  if (asked) return { role: asked, reason: `--role ${asked} given` };
  if (traddr === undefined) {
    return {
      role: "both",
      reason: "no -a given: this host as initiator, and as target where nvmet is loaded",
    };
  }
  const here = localInterfaceOf(traddr, local);
  if (here) {
    return {
      role: "both",
      reason: `${traddr} is an address of this machine (${here.name}): the target is here`,
    };
  }
  return {
    role: "initiator",
    reason: `${traddr} is not an address of this machine: the target is checked from this ` +
      "host's side only; --role both also checks a local nvmet",
  };
}
