// A C peer for scripts/bench_rdma_split.sh and bench_ping_events.sh (SPLIT=1): nvmeof's write
// ping (the same RDMA-CM private-data hello, buffer layout and payload pattern as src/rdma/ping.ts)
// driven by ib_write_lat's loop, so either half of an nvmeof ping can be swapped for C and the two
// halves' costs told apart. It is a measuring aid, built and run by the bench scripts only; the
// product never uses it.
//
//   write_peer server ADDR PORT                 serve write-ping clients until killed; after each,
//                                               print "period P post Q wait W" (µs medians) to stderr
//   write_peer client ADDR PORT SIZE COUNT [RECORD]
//                                               print "ONE_WAY_US POST_US" (medians, last 90 %);
//                                               RECORD: every iteration's one-way µs, as
//                                               ib_write_lat -U prints them. FOOT=N (env): touch
//                                               N pages in turn while spinning (a bigger loop's
//                                               footprint); MARK=FILE (env, tracefs trace_marker):
//                                               write BEGIN, "S k µs" per round trip of 200 µs or
//                                               more, END (scripts/bench_ping_ticks.sh)
//   write_peer footprint                        a system call's cost after touching N pages
#include <infiniband/verbs.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <x86intrin.h>

#define HELLO_MAGIC 0x524d564eu /* "NVMR" */
#define HELLO_LEN 32

static double tsc_mhz;

static void calibrate(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t c0 = __rdtsc();
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 200000000L);
	uint64_t c1 = __rdtsc();
	tsc_mhz = (c1 - c0) / ((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Median in µs of v[from..n), sorted in place. */
static double median_us(uint64_t *v, int from, int n)
{
	qsort(v + from, n - from, sizeof(*v), cmp_u64);
	return v[from + (n - from) / 2] / tsc_mhz;
}

/* src/rdma/ping.ts pattern(): iteration i's payload is pat[i % 251 ..][0..size). */
static uint8_t *pattern(int size)
{
	int len = size + 256 > 4096 + 256 ? size + 256 : 4096 + 256;
	uint8_t *p = malloc(len);
	for (int k = 0; p && k < len; k++) {
		int v = (k * 7 + (k >> 8) * 13 + 1) & 0xff;
		p[k] = v ? v : 0x5a;
	}
	return p;
}

static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev)) {
		perror("write_peer: rdma_get_cm_event");
		exit(1);
	}
	if (ev->event != want) {
		fprintf(stderr, "write_peer: got %s, expected %s\n", rdma_event_str(ev->event),
			rdma_event_str(want));
		exit(1);
	}
	return ev;
}

/* The hello's buffer fields (src/rdma/ping.ts encodeHello): address, rkey, length. */
static void hello_put_buffer(uint8_t *h, const void *buf, uint32_t rkey, uint32_t len)
{
	uint64_t a = (uintptr_t)buf;
	memcpy(h + 8, &a, 8), memcpy(h + 16, &rkey, 4), memcpy(h + 20, &len, 4);
}

/* The connection parameters both sides use, carrying hello `h` as private data. */
static struct rdma_conn_param conn_param(uint8_t *h)
{
	return (struct rdma_conn_param){ .private_data = h, .private_data_len = HELLO_LEN,
					 .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 7, .rnr_retry_count = 7 };
}

static struct ibv_qp *create_qp(struct rdma_cm_id *id, struct ibv_pd **pd, struct ibv_cq **cq)
{
	*pd = ibv_alloc_pd(id->verbs);
	*cq = *pd ? ibv_create_cq(id->verbs, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr qa = {
		.send_cq = *cq, .recv_cq = *cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
	};
	if (!*cq || rdma_create_qp(id, *pd, &qa)) {
		perror("write_peer: creating the QP");
		exit(1);
	}
	return id->qp;
}

/* Posts the signaled WRITE of buf[off..off+size) to the peer's slot, inline when it fits. */
static void post_write(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf, int off, int size,
		       uint64_t raddr, uint32_t rkey, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(buf + off), .length = size, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED | (size <= 64 ? IBV_SEND_INLINE : 0),
		.wr.rdma = { .remote_addr = raddr + off, .rkey = rkey },
	}, *bad;
	if (ibv_post_send(qp, &wr, &bad)) {
		perror("write_peer: ibv_post_send");
		exit(1);
	}
}

static void reap_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int n;
	do
		n = ibv_poll_cq(cq, 1, &wc);
	while (n == 0);
	if (n < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "write_peer: completion failed: %s\n",
			n < 0 ? "ibv_poll_cq" : ibv_wc_status_str(wc.status));
		exit(1);
	}
}

static struct addrinfo *resolve(const char *host, const char *port)
{
	struct addrinfo *ai;
	if (getaddrinfo(host, port, NULL, &ai)) {
		fprintf(stderr, "write_peer: cannot resolve %s:%s\n", host, port);
		exit(2);
	}
	return ai;
}

static int server(const char *host, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen_id;
	if (!ch || rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen_id, resolve(host, port)->ai_addr) || rdma_listen(listen_id, 4)) {
		perror("write_peer: listen");
		return 1;
	}
	fprintf(stderr, "listening\n");
	for (;;) {
		struct rdma_cm_event *ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
		struct rdma_cm_id *id = ev->id;
		uint8_t h[HELLO_LEN];
		uint32_t magic, rkey, count, size;
		uint64_t raddr;
		if (ev->param.conn.private_data_len < HELLO_LEN) {
			rdma_reject(id, NULL, 0);
			rdma_ack_cm_event(ev);
			rdma_destroy_id(id);
			continue;
		}
		memcpy(h, ev->param.conn.private_data, HELLO_LEN);
		rdma_ack_cm_event(ev);
		memcpy(&magic, h, 4), memcpy(&raddr, h + 8, 8), memcpy(&rkey, h + 16, 4);
		memcpy(&count, h + 24, 4), memcpy(&size, h + 28, 4);
		if (magic != HELLO_MAGIC || h[5] != 0 || size < 1 || size > 1 << 20 || count < 2) {
			rdma_reject(id, NULL, 0); /* only the write ping */
			rdma_destroy_id(id);
			continue;
		}
		struct ibv_pd *pd;
		struct ibv_cq *cq;
		struct ibv_qp *qp = create_qp(id, &pd, &cq);
		uint8_t *buf, *pat = pattern(size);
		if (posix_memalign((void **)&buf, 4096, 2 * size) || !pat)
			return 1;
		struct ibv_mr *mr =
			ibv_reg_mr(pd, buf, 2 * size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr) {
			perror("write_peer: ibv_reg_mr");
			return 1;
		}
		/* Arm both slots before accepting, as nvmeof's server does. */
		buf[size - 1] = pat[size - 1] ^ 0xff;
		buf[2 * size - 1] = pat[1 + size - 1] ^ 0xff;
		hello_put_buffer(h, buf, mr->rkey, 2 * size);
		struct rdma_conn_param cp = conn_param(h);
		if (rdma_accept(id, &cp)) {
			perror("write_peer: rdma_accept");
			return 1;
		}
		rdma_ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ESTABLISHED));
		uint64_t *seen = calloc(count, 8), *posted = calloc(count, 8), *reaped = calloc(count, 8);
		for (uint32_t i = 0; i < count; i++) {
			int slot = i & 1, off = slot * size;
			const uint8_t *want = pat + i % 251;
			volatile uint8_t *last = buf + off + size - 1;
			while (*last != want[size - 1])
				;
			seen[i] = __rdtsc();
			if (i + 1 < count)
				buf[(1 - slot) * size + size - 1] = pat[(i + 1) % 251 + size - 1] ^ 0xff;
			post_write(qp, mr, buf, off, size, raddr, rkey, i);
			posted[i] = __rdtsc();
			reap_one(cq);
			reaped[i] = __rdtsc();
			if (memcmp(buf + off, want, size)) {
				fprintf(stderr, "write_peer: payload mismatch in iteration %u\n", i);
				return 1;
			}
		}
		/* period: seen(i) → seen(i+1); post: seen → post returned; wait: reaped → seen(i+1). */
		int from = count / 10, m = count - 1;
		uint64_t *period = calloc(m, 8), *post = calloc(m, 8), *wait = calloc(m, 8);
		for (int i = 0; i < m; i++) {
			period[i] = seen[i + 1] - seen[i];
			post[i] = posted[i] - seen[i];
			wait[i] = seen[i + 1] - reaped[i];
		}
		fprintf(stderr, "period %.2f post %.2f wait %.2f\n", median_us(period, from, m),
			median_us(post, from, m), median_us(wait, from, m));
		rdma_ack_cm_event(expect_event(ch, RDMA_CM_EVENT_DISCONNECTED));
		rdma_destroy_qp(id);
		ibv_dereg_mr(mr);
		ibv_destroy_cq(cq);
		ibv_dealloc_pd(pd);
		rdma_destroy_id(id);
		free(buf), free(pat), free(seen), free(posted), free(reaped);
		free(period), free(post), free(wait);
	}
}

static int client(const char *host, const char *port, int size, int count, const char *record)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, resolve(host, port)->ai_addr, 2000)) {
		perror("write_peer: resolve");
		return 1;
	}
	rdma_ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000)) {
		perror("write_peer: rdma_resolve_route");
		return 1;
	}
	rdma_ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp = create_qp(id, &pd, &cq);
	uint8_t *tx, *rx, *pat = pattern(size);
	if (posix_memalign((void **)&tx, 4096, 2 * size) || posix_memalign((void **)&rx, 4096, 2 * size) || !pat)
		return 1;
	struct ibv_mr *txm = ibv_reg_mr(pd, tx, 2 * size, 0);
	struct ibv_mr *rxm = ibv_reg_mr(pd, rx, 2 * size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!txm || !rxm) {
		perror("write_peer: ibv_reg_mr");
		return 1;
	}
	uint8_t h[HELLO_LEN] = { 0 };
	uint32_t magic = HELLO_MAGIC, ucount = count, usize = size;
	memcpy(h, &magic, 4), h[4] = 1, h[5] = 0; /* version 1, op write */
	hello_put_buffer(h, rx, rxm->rkey, 2 * size);
	memcpy(h + 24, &ucount, 4), memcpy(h + 28, &usize, 4);
	struct rdma_conn_param cp = conn_param(h);
	if (rdma_connect(id, &cp)) {
		perror("write_peer: rdma_connect");
		return 1;
	}
	struct rdma_cm_event *ev = expect_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	uint64_t raddr;
	uint32_t rkey;
	memcpy(&raddr, (const uint8_t *)ev->param.conn.private_data + 8, 8);
	memcpy(&rkey, (const uint8_t *)ev->param.conn.private_data + 16, 4);
	rdma_ack_cm_event(ev);
	uint64_t *rtt = calloc(count, 8), *post = calloc(count, 8);
	const char *mark = getenv("MARK");
	int mfd = mark ? open(mark, O_WRONLY) : -1;
	unsigned foot = getenv("FOOT") ? (unsigned)atoi(getenv("FOOT")) : 0;
	volatile uint8_t *big = foot ? malloc((size_t)foot * 4096) : NULL;
	volatile unsigned sink = 0;
	if (mark && mfd < 0) {
		perror("write_peer: MARK");
		return 1;
	}
	for (size_t k = 0; big && k < (size_t)foot * 4096; k += 4096)
		big[k] = 1;
	for (int i = 0; i < count; i++) {
		int slot = i & 1, off = slot * size;
		const uint8_t *want = pat + i % 251;
		volatile uint8_t *last = rx + off + size - 1;
		*last = want[size - 1] ^ 0xff;
		memcpy(tx + off, want, size);
		uint64_t t0 = __rdtsc();
		post_write(qp, txm, tx, off, size, raddr, rkey, i);
		uint64_t t1 = __rdtsc();
		unsigned spins = 0;
		while (*last != want[size - 1])
			if (foot) {
				sink += big[(size_t)(spins % foot) * 4096 + 64 * (spins & 63)];
				spins++;
			}
		uint64_t t2 = __rdtsc();
		reap_one(cq);
		if (memcmp(rx + off, want, size)) {
			fprintf(stderr, "write_peer: payload mismatch in iteration %d\n", i);
			return 1;
		}
		rtt[i] = t2 - t0, post[i] = t1 - t0;
		if (mfd >= 0) { /* after the round trip, outside its time */
			if (i == 0 && write(mfd, "BEGIN\n", 6) != 6)
				return 1;
			if (rtt[i] / tsc_mhz >= 200)
				dprintf(mfd, "S %d %.1f\n", i, rtt[i] / tsc_mhz);
			if (i == count - 1 && write(mfd, "END\n", 4) != 4)
				return 1;
		}
	}
	if (record) { /* every iteration's one-way µs, as ib_write_lat -U prints them */
		FILE *f = fopen(record, "w");
		for (int i = 0; f && i < count; i++)
			fprintf(f, "%d, %.3f\n", i, rtt[i] / tsc_mhz / 2);
		if (!f || fclose(f)) {
			perror("write_peer: the record");
			return 1;
		}
	}
	int from = count / 10;
	printf("%.2f %.2f\n", median_us(rtt, from, count) / 2, median_us(post, from, count));
	rdma_disconnect(id);
	return 0;
}

/*
 * The cost of a system call right after the caller touched N distinct pages: under an emulated
 * MMU (QEMU TCG) the kernel's own translations are evicted by the caller's, so kernel time grows
 * with the caller's footprint far more than on a CPU's hardware TLB.
 */
static int footprint(void)
{
	enum { IT = 4000, MAXP = 4096 };
	static const int ns[] = { 0, 16, 64, 256, 1024, 4096 };
	static uint64_t d1[IT], d2[IT];
	volatile uint8_t *big = malloc((size_t)MAXP * 4 * 4096);
	int fds[2];
	char b = 'x';
	unsigned acc = 0;
	if (!big || pipe(fds))
		return 1;
	for (size_t k = 0; k < (size_t)MAXP * 4 * 4096; k += 4096)
		big[k] = 1;
	printf("%-14s %14s %24s\n", "pages touched", "getppid µs", "pipe write+read µs");
	for (unsigned q = 0; q < sizeof(ns) / sizeof(*ns); q++) {
		unsigned n = ns[q];
		for (int i = 0; i < IT; i++) {
			for (unsigned k = 0; k < n; k++)
				acc += big[(size_t)((i * 7u + k * 4u) % (n * 4u)) * 4096 + 64 * (k & 63)];
			uint64_t t0 = __rdtsc();
			syscall(SYS_getppid);
			uint64_t t1 = __rdtsc();
			for (unsigned k = 0; k < n; k++)
				acc += big[(size_t)((i * 7u + k * 4u + 1) % (n * 4u)) * 4096 + 64 * (k & 63)];
			uint64_t t2 = __rdtsc();
			if (write(fds[1], &b, 1) != 1 || read(fds[0], &b, 1) != 1)
				return 1;
			uint64_t t3 = __rdtsc();
			d1[i] = t1 - t0, d2[i] = t3 - t2;
		}
		printf("%-14u %14.2f %24.2f\n", n, median_us(d1, 0, IT), median_us(d2, 0, IT));
	}
	return acc == 1; /* keeps the touches */
}

int main(int argc, char **argv)
{
	calibrate();
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), argc == 7 ? argv[6] : NULL);
	if (argc == 2 && !strcmp(argv[1], "footprint"))
		return footprint();
	fprintf(stderr, "usage: write_peer server ADDR PORT | client ADDR PORT SIZE COUNT [RECORD] | footprint\n");
	return 2;
}
