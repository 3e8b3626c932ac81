/**
 * The doctor's fabric rules: RoCE MTU from the netdev MTU (include/rdma/ib_addr.h iboe_get_mtu),
 * port state, the RoCE v2 GID of the local address, and the route's netdev.
 */
import assert from "node:assert/strict";
import {
  type Devices,
  devicesCheck,
  gidCheck,
  mtuCheck,
  portStateChecks,
  type PortView,
  roceMtuFor,
  routeCheck,
} from "../../src/doctor/fabric.ts";

function port(p: Partial<PortView> = {}): PortView {
  return {
    port: 1,
    state: "ACTIVE",
    phys_state: "LINK_UP",
    link_layer: "Ethernet",
    max_mtu: 4096,
    active_mtu: 1024,
    netdev: "eth1",
    netdev_mtu: 1500,
    gids: [
      { index: 0, type: "RoCE v1", netdev: "eth1", ip: "fe80::1" },
      { index: 1, type: "RoCE v2", netdev: "eth1", ip: "fe80::1" },
      { index: 2, type: "RoCE v1", netdev: "eth1", ip: "10.0.0.1" },
      { index: 3, type: "RoCE v2", netdev: "eth1", ip: "10.0.0.1" },
    ],
    ...p,
  };
}

const devs = (...ports: PortView[]): Devices => ({ devices: [{ name: "mlx5_0", ports }] });

Deno.test("RoCE MTU rule: 1500 → 1024, 2200 → 2048, 4200 → 4096, 9000 → 4096, 1200 → 1024, 1100 → 512", () => {
  const t: [number, number][] = [[1500, 1024], [2200, 2048], [4200, 4096], [9000, 4096], [
    1200,
    1024,
  ], [
    1100,
    512,
  ]];
  for (const [netdev, roce] of t) {
    assert.equal(roceMtuFor(netdev).current, roce, `netdev ${netdev}`);
  }
  // the older kernels' 80-byte overhead differs only at the edges
  assert.deepEqual(roceMtuFor(4180), { current: 2048, older: 4096 });
});

Deno.test("MTU: a 9000 netdev with RoCE 4096 is ok and says it is the largest", () => {
  const c = mtuCheck("mlx5_0", port({ netdev_mtu: 9000, active_mtu: 4096 }));
  assert.equal(c.status, "ok");
  assert.match(c.seen, /netdev eth1 MTU 9000, RoCE active MTU 4096 \(the largest/);
});

Deno.test("MTU: a 1500 netdev with RoCE 1024 is ok and says which MTU to raise for 4096", () => {
  const c = mtuCheck("mlx5_0", port());
  assert.equal(c.status, "ok");
  assert.match(
    c.seen,
    /MTU 1500, RoCE active MTU 1024 \(capped by the netdev MTU; RoCE MTU 4096 needs netdev MTU >= 4192/,
  );
});

Deno.test("MTU: a 9000 netdev whose RDMA port stayed at 1024 is a warning with the fix", () => {
  const c = mtuCheck("rxe0", port({ netdev_mtu: 9000, active_mtu: 1024 }));
  assert.equal(c.status, "warn");
  assert.match(c.seen, /allows RoCE MTU 4096, the RDMA port uses 1024/);
  assert.match(c.fix!, /ip link set eth1 mtu 9000/);
});

Deno.test("MTU: a RoCE MTU above what the netdev carries fails and says to raise the netdev MTU", () => {
  const c = mtuCheck("mlx5_0", port({ netdev_mtu: 1500, active_mtu: 4096 }));
  assert.equal(c.status, "fail");
  assert.match(c.fix!, /ip link set eth1 mtu 9000/);
});

Deno.test("MTU: a device whose max MTU is 2048 is ok at 2048 on a 9000 netdev", () => {
  assert.equal(
    mtuCheck("x", port({ netdev_mtu: 9000, active_mtu: 2048, max_mtu: 2048 })).status,
    "ok",
  );
});

Deno.test("MTU: without a netdev the check says it could not determine", () => {
  const c = mtuCheck("x", port({ netdev: null, netdev_mtu: null }));
  assert.equal(c.status, "skip");
  assert.match(c.seen, /could not determine the netdev MTU/);
});

Deno.test("port state: libibverbs' PORT_ACTIVE counts as ACTIVE", () => {
  const [c] = portStateChecks(devs(port({ state: "PORT_ACTIVE" })));
  assert.equal(c.status, "ok");
});

Deno.test("port state: DOWN fails with the netdev to bring up; ACTIVE/LINK_UP is ok", () => {
  const [up, down] = portStateChecks(
    devs(port(), port({ port: 2, state: "DOWN", phys_state: "DISABLED", netdev: "eth2" })),
  );
  assert.equal(up.status, "ok");
  assert.equal(down.status, "fail");
  assert.match(down.seen, /mlx5_0 port 2 is DOWN, DISABLED/);
  assert.match(down.fix!, /ip link set eth2 up/);
});

Deno.test("devices: none listed, and a listing error, both fail with a fix", () => {
  assert.equal(devicesCheck({ devices: [] }).status, "fail");
  const e = devicesCheck({ error: "ENOSYS", hint: "load ib_uverbs" });
  assert.equal(e.status, "fail");
  assert.equal(e.fix, "load ib_uverbs");
});

Deno.test("GID: RoCE v2 for the local address is ok; RoCE v1 only warns; none fails", () => {
  assert.equal(gidCheck(devs(port()), "10.0.0.1", "route").status, "ok");
  const v1 = port({ gids: [{ index: 0, type: "RoCE v1", netdev: "eth1", ip: "10.0.0.1" }] });
  assert.equal(gidCheck(devs(v1), "10.0.0.1", "route").status, "warn");
  const none = gidCheck(devs(port()), "192.168.1.5", "route");
  assert.equal(none.status, "fail");
  assert.match(none.seen, /192\.168\.1\.5 has no GID/);
  assert.equal(gidCheck(devs(port()), undefined, "no route").status, "skip");
});

Deno.test("route: through the RDMA netdev ok; through another fails naming it; local address on RDMA ok", () => {
  const d = devs(port());
  assert.equal(routeCheck(d, "10.0.0.2", { dev: "eth1", prefsrc: "10.0.0.1" }).status, "ok");
  const other = routeCheck(d, "10.9.0.2", { dev: "eth0", prefsrc: "10.9.0.1" });
  assert.equal(other.status, "fail");
  assert.match(other.seen, /leaves through eth0, which has no RDMA device \(RDMA netdevs: eth1\)/);
  assert.match(other.fix!, /rdma link add rxe_eth0 type rxe netdev eth0/);
  assert.equal(routeCheck(d, "10.0.0.1", { type: "local", dev: "lo" }).status, "ok");
  assert.equal(routeCheck(d, "127.0.0.1", { type: "local", dev: "lo" }).status, "fail");
  assert.equal(routeCheck(d, "10.0.0.2", { error: "ip: not found" }).status, "skip");
});
