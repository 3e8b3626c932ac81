/**
 * The verdict on an RDMA-CM probe of a target's listener (nvme/admin_probe.ts sends the admin-queue
 * connect request a Linux host sends and keeps the CM's answer, whatever it is).
 */
import { softRoceCommand } from "../rdma/soft_roce.ts";
import { errnoName } from "../errors.ts";
import { NVME_RDMA_CM_NO_RSC, RDMA_CM_REJECT } from "../nvme/capsule.ts";
import {
  CM_REJECT_REASON,
  cmRejectReasonName,
  nvmeAcceptQueueSize,
  nvmeRejectStatus,
  type ProbeOutcome,
} from "../nvme/admin_probe.ts";
import { describeRdmaCmReject } from "../nvme/status.ts";
import { hostPort } from "../net/address.ts";
import { type Check, check } from "./check.ts";

/** The probe's answer as a check. */
export function classifyProbe(o: ProbeOutcome): Check {
  const id = "reach.listener";
  const where = hostPort(o.traddr, o.trsvcid);
  const st = o.status < 0 ? `${errnoName(-o.status)} (${o.status})` : String(o.status);
  const from = o.src ? ` from ${o.src.addr} (${o.src.device} port ${o.src.port})` : "";
  const portFix =
    `on the target, create an rdma port for ${o.traddr} ${o.trsvcid} and link a subsystem to it ` +
    `(nvmeof target up, or: mkdir /sys/kernel/config/nvmet/ports/1; echo rdma > addr_trtype; echo ipv4 > addr_adrfam; ` +
    `echo ${o.traddr} > addr_traddr; echo ${o.trsvcid} > addr_trsvcid; ln -s /sys/kernel/config/nvmet/subsystems/NQN ` +
    `/sys/kernel/config/nvmet/ports/1/subsystems/NQN), or connect to the address and port it does listen on`;
  if (o.localError && o.event === "NONE") {
    return check(id, "skip", `could not run the RDMA-CM probe: ${o.localError}`);
  }
  switch (o.event) {
    case "ESTABLISHED": {
      const q = nvmeAcceptQueueSize(o.privateData);
      return check(
        id,
        "ok",
        `an NVMe/RDMA target at ${where} accepted an admin-queue connect${from}` +
          (q !== undefined ? ` (crqsize ${q})` : "") + "; disconnected again",
      );
    }
    case "REJECTED": {
      const sts = nvmeRejectStatus(o.privateData);
      if (o.status === CM_REJECT_REASON.consumerDefined && sts !== undefined) {
        return check(
          id,
          "warn",
          `an NVMe/RDMA target listens at ${where} but rejected the admin-queue request: NVMe/RDMA status ` +
            `${sts} (${RDMA_CM_REJECT[sts]}: ${describeRdmaCmReject(o.privateData)?.meaning})`,
          sts === NVME_RDMA_CM_NO_RSC
            ? "the target is out of resources (queues or memory): check its kernel log and lower the number of hosts/queues"
            : "the target refused a standard Linux host request: check its kernel log (dmesg) for nvmet_rdma",
        );
      }
      if (o.status === CM_REJECT_REASON.invalidServiceId) {
        return check(
          id,
          "fail",
          `nothing listens at ${where}: the connect request was rejected with reason 8 (INVALID_SERVICE_ID)${from}`,
          portFix,
        );
      }
      if (o.status < 0) {
        return check(
          id,
          "fail",
          `the connect request to ${where} was refused (${st}, no reject reason: iWARP/siw): nothing listens there`,
          portFix,
        );
      }
      if (o.status === CM_REJECT_REASON.consumerDefined) {
        // Linux's RDMA-CM matches a request by port number, then by address; when the port number
        // has a listener bound to another address the request is refused this way, with no data.
        return check(
          id,
          "fail",
          `nothing listens at ${where} itself: the request was rejected with reason 28 (CONSUMER_DEFINED) ` +
            `and no NVMe/RDMA private data${from}; the target's RDMA-CM has a listener on port ${o.trsvcid} ` +
            "bound to another address, or what listens there is not an NVMe target",
          `compare the target's port addresses (grep . /sys/kernel/config/nvmet/ports/*/addr_traddr) with ` +
            `${o.traddr}; connect to the address the port is for, or ${portFix}`,
        );
      }
      const reason = cmRejectReasonName(o.status);
      return check(
        id,
        "fail",
        `the connect request to ${where} was rejected with reason ${o.status} (${reason})${from}`,
        "see the reject reason in include/rdma/ib_cm.h; check both sides' RDMA setup",
      );
    }
    case "UNREACHABLE":
      return check(
        id,
        "fail",
        `no answer to the connect request from ${where} (UNREACHABLE, ${st})${from}: nothing listens there, ` +
          "or the packets are blocked",
        `${portFix}; check that UDP port 4791 (RoCE v2) is open between the hosts`,
      );
    case "ADDR_ERROR":
      return check(
        id,
        "fail",
        `cannot resolve ${o.traddr} to an RDMA device (ADDR_ERROR, ${st}): no route to it through an RDMA ` +
          "netdev, or its neighbour (ARP) does not answer",
        `check 'ip route get ${o.traddr}' leaves through the RDMA NIC's netdev and that the target answers ping ` +
          `from that netdev; add Soft-RoCE where there is no RDMA NIC (${softRoceCommand()})`,
      );
    case "ROUTE_ERROR":
      return check(
        id,
        "fail",
        `cannot resolve an RDMA route to ${o.traddr} (ROUTE_ERROR, ${st})${from}`,
        `check the IP route to ${o.traddr} and that the netdev of ${
          o.src?.device ?? "the RDMA device"
        } is up`,
      );
    case "TIMEOUT":
      return check(
        id,
        "fail",
        `no CM answer from ${where} within ${o.timeoutMs} ms at the ${o.stage} step${from}: packets are dropped`,
        "check the firewalls for UDP 4791 (RoCE v2) on both hosts and the switch ACLs, the MTU end to end, " +
          "and that the fabric is lossless (PFC/ECN)",
      );
    case "CONNECT_ERROR":
      return check(
        id,
        "fail",
        `the connection to ${where} failed after the target accepted it (CONNECT_ERROR, ${st}${
          o.localError ? `; ${o.localError}` : ""
        })`,
        "check the path MTU and that both RDMA ports are ACTIVE (nvmeof rdma devices)",
      );
    default:
      return check(
        id,
        "fail",
        `unexpected CM event ${o.event} (${st}) while connecting to ${where}`,
      );
  }
}
