/**
 * `nvmeof exporter` as Prometheus meets it: spawned on 127.0.0.1:0 against the stand-in host of
 * tests/metrics_standin.ts, scraped, abused (idle connections, a slow client, a huge header, a
 * burst of scrapes) and stopped.
 */
import assert from "node:assert/strict";
import { nvmeof, ROOT, Spawned, tempDir } from "../helpers.ts";
import { metricsTree } from "../metrics_standin.ts";
import { assertPromtoolAccepts, promtoolMissing } from "../promtool.ts";

/** The exporter on a free port of 127.0.0.1 against a fresh stand-in host. */
async function exporter(
  extra: string[] = [],
): Promise<
  { srv: Spawned; base: string; env: Record<string, string>; args: string[] } & AsyncDisposable
> {
  const dir = await tempDir();
  const { env } = await metricsTree(dir.path);
  const args = ["--configfs", `${dir.path}/config`];
  const srv = new Spawned(`${ROOT}/tests/standin/nvmeof`, [
    "exporter",
    "--listen",
    "127.0.0.1:0",
    ...args,
    ...extra,
  ], { env });
  await srv.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+\/metrics/, 20_000);
  const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(srv.stderr)![1];
  return {
    srv,
    base: `http://127.0.0.1:${port}`,
    env,
    args,
    async [Symbol.asyncDispose]() {
      await srv[Symbol.asyncDispose]();
      await dir[Symbol.asyncDispose]();
    },
  };
}

async function get(
  url: string,
  init?: RequestInit,
): Promise<{ status: number; text: string; type: string }> {
  const r = await fetch(url, init);
  return { status: r.status, text: await r.text(), type: r.headers.get("content-type") ?? "" };
}

/** The exposition without what differs between two collections: durations, exporter counts. */
function stable(text: string): string {
  return text.split("\n")
    .filter((l) =>
      !/nvmeof_scrape_duration_seconds|nvmeof_path_state_changes_total|nvmeof_scrape_collections_total/
        .test(l)
    )
    .join("\n");
}

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
  return Number(m![1]);
}

/** The value of an unlabelled sample in an exposition. */
function sample(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  assert.ok(m, `no ${name} in:\n${text}`);
  return Number(m[1]);
}

Deno.test("exporter: /metrics is what nvmeof metrics prints, as text format 0.0.4; /healthz answers", async () => {
  await using e = await exporter();
  const m = await get(`${e.base}/metrics`);
  assert.equal(m.status, 200);
  assert.equal(m.type, "text/plain; version=0.0.4; charset=utf-8");
  const cli = await nvmeof(["metrics", ...e.args], { env: e.env, standin: true });
  assert.equal(cli.code, 0, cli.stderr);
  assert.equal(stable(m.text), stable(cli.stdout));
  assert.match(m.text, /^nvmeof_path_state_changes_total\{controller="nvme1"\} 0$/m);
  assert.equal(sample(m.text, "nvmeof_scrape_collections_total"), 1);
  const why = promtoolMissing();
  if (why) console.log(`promtool check skipped: ${why}`);
  else await assertPromtoolAccepts(m.text);
  const h = await get(`${e.base}/healthz`);
  assert.deepEqual([h.status, h.text], [200, "ok\n"]);
});

Deno.test("exporter: other paths are 404, other methods 405", async () => {
  await using e = await exporter();
  assert.equal((await get(`${e.base}/`)).status, 404);
  assert.equal((await get(`${e.base}/metrics/x`)).status, 404);
  assert.equal((await get(`${e.base}/metrics`, { method: "POST", body: "x" })).status, 405);
  assert.equal((await get(`${e.base}/healthz`, { method: "DELETE" })).status, 405);
});

Deno.test("exporter: 200 idle connections and a client sending a byte per 100 ms do not stop /metrics", async () => {
  await using e = await exporter();
  const port = Number(new URL(e.base).port);
  const idle: Deno.TcpConn[] = [];
  try {
    for (let i = 0; i < 200; i++) idle.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    const slow = (async () => {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        for (const b of new TextEncoder().encode("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")) {
          await c.write(Uint8Array.of(b));
          await new Promise((r) => setTimeout(r, 100));
        }
        const buf = new Uint8Array(512);
        const n = await c.read(buf);
        return new TextDecoder().decode(buf.subarray(0, n ?? 0));
      } finally {
        c.close();
      }
    })();
    const t0 = performance.now();
    const m = await get(`${e.base}/metrics`);
    assert.equal(m.status, 200);
    assert.ok(performance.now() - t0 < 2000, "a scrape waited for the slow client");
    const answer = await Promise.race([
      slow,
      new Promise<string>((_, no) =>
        setTimeout(() => no(new Error("slow client not done")), 15_000)
      ),
    ]);
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.equal((await get(`${e.base}/metrics`)).status, 200);
  } finally {
    for (const c of idle) c.close();
  }
});

Deno.test("exporter: a 1 MiB header gets an error status or a close, and the exporter still answers", async () => {
  await using e = await exporter();
  const port = Number(new URL(e.base).port);
  const c = await Deno.connect({ hostname: "127.0.0.1", port });
  let answer = "";
  try {
    const head = `GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(1 << 20)}\r\n\r\n`;
    await c.write(new TextEncoder().encode(head)).catch(() => 0);
    const buf = new Uint8Array(256);
    const n = await c.read(buf).catch(() => null);
    answer = new TextDecoder().decode(buf.subarray(0, n ?? 0));
  } finally {
    c.close();
  }
  assert.ok(answer === "" || /^HTTP\/1\.1 4\d\d /.test(answer), `answered: ${answer}`);
  assert.equal((await get(`${e.base}/metrics`)).status, 200);
});

Deno.test("exporter: 500 scrapes, 50 at a time, share a few collections; memory stays bounded", async () => {
  await using e = await exporter();
  await get(`${e.base}/healthz`);
  const rss0 = rssKiB(e.srv.pid);
  let next = 0;
  const statuses: number[] = [];
  const worker = async () => {
    while (next < 500) {
      next++;
      const r = await get(`${e.base}/metrics`);
      statuses.push(r.status);
    }
  };
  await Promise.all(Array.from({ length: 50 }, worker));
  assert.equal(statuses.length, 500);
  assert.ok(statuses.every((s) => s === 200), `statuses: ${[...new Set(statuses)]}`);
  const after = await get(`${e.base}/metrics`);
  const collections = sample(after.text, "nvmeof_scrape_collections_total");
  // Reused for 2 s: one collection per 2 s of the burst, and a few more at most.
  assert.ok(collections <= 10, `${collections} collections for 500 scrapes`);
  const rss1 = rssKiB(e.srv.pid);
  assert.ok(rss1 < 2 * rss0 + 50 * 1024, `RSS ${rss0} kB → ${rss1} kB`);
});

Deno.test("exporter: SIGTERM ends it cleanly within 2 s, exit 0", async () => {
  await using e = await exporter();
  assert.equal((await get(`${e.base}/metrics`)).status, 200);
  const t0 = performance.now();
  const done = await e.srv.stop("SIGTERM", 5000);
  assert.equal(done.code, 0, done.stderr);
  assert.ok(performance.now() - t0 < 2000, `took ${performance.now() - t0} ms`);
});

Deno.test("exporter: an address in use or not of this host is exit 3 with the reason, never a silent non-start", async () => {
  await using e = await exporter();
  const taken = new URL(e.base).host;
  const r = await nvmeof(["exporter", "--listen", taken, ...e.args], { env: e.env, standin: true });
  assert.equal(r.code, 3, r.stderr);
  assert.match(
    r.stderr,
    new RegExp(`Cannot listen on ${taken.replace(/\./g, "\\.")}: .*in use`, "i"),
  );
  // 192.0.2.1 (TEST-NET-1) is no address of this machine.
  const foreign = await nvmeof(["exporter", "--listen", "192.0.2.1:0"], { env: e.env });
  assert.equal(foreign.code, 3, foreign.stderr);
  assert.match(foreign.stderr, /Cannot listen on 192\.0\.2\.1:0: .*not an address of this host/s);
  const bad = await nvmeof(["exporter", "--listen", "localhost"], {});
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Invalid --listen 'localhost': expected ADDR:PORT/);
});
