/**
 * The command a hint gives for adding Soft-RoCE (rdma_rxe) where a netdev has no RDMA device. A
 * hint names the netdev the code found; where it found none, the names are placeholders, since
 * this host's devices are its own (mlx5_0, irdma0 …), not the lab's rxe0.
 */

/** `rdma link add rxe_<netdev> type rxe netdev <netdev>`, or with NAME and IFACE to fill in. */
export function softRoceCommand(netdev?: string): string {
  return netdev
    ? `rdma link add rxe_${netdev} type rxe netdev ${netdev}`
    : "rdma link add NAME type rxe netdev IFACE";
}
