/*
 * Differential test: feeds the same values to fi_tostr_r and fi_strerror of our
 * libfabric.so.1 and of the system's libfabric 1.17, and requires byte-identical buffers
 * (including how text is cut short in small buffers). Values are random but reproducible.
 * Exits 77 (skip) when the system library is not installed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlmopen, dlvsym */
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/fabric.h>

typedef char *(*tostr_r_fn)(char *, size_t, const void *, enum fi_type);
typedef const char *(*strerror_fn)(int);

struct library {
	const char *path;
	tostr_r_fn tostr_r;
	strerror_fn strerror;
};

enum { BUFFER_SIZE = 65536, REPORT_LIMIT = 5 };

static char reference_buf[BUFFER_SIZE + 8];
static char our_buf[BUFFER_SIZE + 8];
static long checks;
static long failures;

/* xorshift64: deterministic across runs and platforms. */
static uint64_t random_state = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
	random_state ^= random_state << 13;
	random_state ^= random_state >> 7;
	random_state ^= random_state << 17;
	return random_state;
}

static int load(struct library *lib, Lmid_t namespace_id)
{
	/* A separate link namespace keeps the two libraries from resolving into each other. */
	void *handle = dlmopen(namespace_id, lib->path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "cannot load %s: %s\n", lib->path, dlerror());
		return -1;
	}
	lib->tostr_r = (tostr_r_fn) dlvsym(handle, "fi_tostr_r", "FABRIC_1.4");
	lib->strerror = (strerror_fn) dlvsym(handle, "fi_strerror", "FABRIC_1.0");
	if (!lib->tostr_r || !lib->strerror) {
		fprintf(stderr, "%s lacks fi_tostr_r@FABRIC_1.4 or fi_strerror@FABRIC_1.0\n",
			lib->path);
		return -1;
	}
	return 0;
}

static void report(const char *what, int type, size_t len, const char *reference,
		   const char *ours)
{
	failures++;
	if (failures > REPORT_LIMIT)
		return;
	printf("MISMATCH %s (type %d, buffer %zu)\n--- reference:\n%s\n--- ours:\n%s\n", what,
	       type, len, reference ? reference : "(NULL)", ours ? ours : "(NULL)");
}

/* Both buffers start filled with the same junk, so bytes written past the text count too. */
static void compare(const struct library *reference, const struct library *ours,
		    const char *what, const void *data, int type, size_t len)
{
	memset(reference_buf, 'Z', sizeof reference_buf);
	memset(our_buf, 'Z', sizeof our_buf);
	char *a = reference->tostr_r(reference_buf, len, data, (enum fi_type) type);
	char *b = ours->tostr_r(our_buf, len, data, (enum fi_type) type);
	checks++;
	if ((a == NULL) != (b == NULL) || memcmp(reference_buf, our_buf, sizeof our_buf))
		report(what, type, len, a, b);
}

static uint64_t random_bits(void)
{
	switch (next_random() % 4) {
	case 0: return 0;
	case 1: return next_random();
	case 2: return 1ull << (next_random() % 64);
	default: return ~0ull;
	}
}

static size_t random_size(void)
{
	switch (next_random() % 4) {
	case 0: return 0;
	case 1: return (size_t) next_random();
	case 2: return next_random() % 100;
	default: return SIZE_MAX - next_random() % 2;
	}
}

static int random_enum(void)
{
	switch (next_random() % 4) {
	case 0: return (int) (next_random() % 8);
	case 1: return (int) next_random();
	case 2: return -1;
	default: return (int) (next_random() % 30);
	}
}

static char *random_name(void)
{
	static char names[][32] = { "", "eth0", "192.168.1.0/24", "tcp;ofi_rxm" };
	unsigned pick = next_random() % 5;
	return pick < 4 ? names[pick] : NULL;
}

static unsigned char address_bytes[2][512];

static void *random_address(int which, uint32_t format)
{
	unsigned char *addr = address_bytes[which];

	if (next_random() % 6 == 0)
		return NULL;
	for (size_t i = 0; i < sizeof address_bytes[which]; i++)
		addr[i] = (unsigned char) next_random();
	if (format == FI_ADDR_STR) {
		size_t n = next_random() % 500;
		for (size_t i = 0; i < n; i++)
			addr[i] = (unsigned char) ('a' + next_random() % 26);
		addr[n] = '\0';
	}
	if (format <= FI_SOCKADDR_IB && next_random() % 4) {
		static const unsigned short families[] = { AF_INET, AF_INET6, AF_IB, 0 };
		unsigned short family = families[next_random() % 4];
		memcpy(addr, &family, sizeof family);
	}
	return addr;
}

/* Objects whose tostr appends a fixed text when there is room; both libraries agree on
 * the room they offer, and where the object writes is then the same too. */
static int describe_object(const struct fid *fid, char *buf, size_t len)
{
	(void) fid;
	if (len > 32)
		strcat(buf, "<object>\n");
	return 0;
}

static struct fi_ops ops_describing = { .size = sizeof(struct fi_ops), .tostr = describe_object };
static struct fi_ops ops_silent = { .size = sizeof(struct fi_ops) };
static struct fid objects[2];
static struct fid_nic nic;

static void compare_scalars(const struct library *reference, const struct library *ours)
{
	for (int type = -3; type < 40; type++) {
		if (type == FI_TYPE_INFO || type == FI_TYPE_FID ||
		    (type >= FI_TYPE_TX_ATTR && type <= FI_TYPE_FABRIC_ATTR))
			continue;
		for (int k = 0; k < 300; k++) {
			uint64_t value = k < 64 ? 1ull << k :
					 k < 128 ? (uint64_t) (k - 69) :
					 k < 140 ? (0x80000000ull | (uint64_t) (k - 128)) :
						   random_bits();
			compare(reference, ours, "value", &value, type, BUFFER_SIZE);
			if (k % 7 == 0) {
				for (size_t len = 1; len < 40; len++)
					compare(reference, ours, "value, short buffer", &value,
						type, len);
			}
		}
	}
	compare(reference, ours, "NULL data", NULL, FI_TYPE_INFO, BUFFER_SIZE);
}

static void compare_structures(const struct library *reference, const struct library *ours)
{
	objects[0].ops = &ops_describing;
	objects[1].ops = &ops_silent;
	compare(reference, ours, "fid with tostr", &objects[0], FI_TYPE_FID, BUFFER_SIZE);
	compare(reference, ours, "fid without tostr", &objects[1], FI_TYPE_FID, BUFFER_SIZE);

	for (int round = 0; round < 6000; round++) {
		struct fi_tx_attr tx = {
			random_bits(), random_bits(), random_bits(), random_bits(), random_bits(),
			random_size(), random_size(), random_size(), random_size(),
			(uint32_t) next_random()
		};
		struct fi_rx_attr rx = {
			random_bits(), random_bits(), random_bits(), random_bits(), random_bits(),
			random_size(), random_size(), random_size()
		};
		struct fi_ep_attr ep = {
			(enum fi_ep_type) random_enum(),
			(uint32_t) (next_random() % 3 ? next_random() % 30 : next_random()),
			(uint32_t) next_random(), random_size(), random_size(), random_size(),
			random_size(), random_size(), random_bits(), random_size(), random_size(),
			random_size(), NULL
		};
		struct fi_domain_attr domain = {
			(struct fid_domain *) (uintptr_t) (next_random() % 2 ? next_random() : 0),
			random_name(), (enum fi_threading) random_enum(),
			(enum fi_progress) random_enum(), (enum fi_progress) random_enum(),
			(enum fi_resource_mgmt) random_enum(), (enum fi_av_type) random_enum(),
			(int) random_bits(), random_size(), random_size(), random_size(),
			random_size(), random_size(), random_size(), random_size(), random_size(),
			random_size(), random_size(), random_size(), random_size(), random_bits(),
			random_bits(), NULL, random_size(), random_size(), random_size(),
			(uint32_t) next_random()
		};
		struct fi_fabric_attr fabric = {
			NULL, random_name(), random_name(), (uint32_t) next_random(),
			(uint32_t) next_random()
		};
		struct fi_info info = { 0 };
		info.caps = random_bits();
		info.mode = random_bits();
		info.addr_format = next_random() % 4 ? next_random() % 18 : (uint32_t) next_random();
		info.src_addrlen = random_size();
		info.dest_addrlen = random_size();
		info.src_addr = random_address(0, info.addr_format);
		info.dest_addr = random_address(1, info.addr_format);
		info.handle = next_random() % 3 ? &objects[next_random() % 2] : NULL;
		info.tx_attr = next_random() % 5 ? &tx : NULL;
		info.rx_attr = next_random() % 5 ? &rx : NULL;
		info.ep_attr = next_random() % 5 ? &ep : NULL;
		info.domain_attr = next_random() % 5 ? &domain : NULL;
		info.fabric_attr = next_random() % 5 ? &fabric : NULL;
		info.nic = next_random() % 3 ? NULL : &nic;
		nic.fid.ops = next_random() % 2 ? &ops_describing : &ops_silent;

		size_t len = round % 3 ? 1 + next_random() % 4000 : BUFFER_SIZE;
		compare(reference, ours, "fi_tx_attr", &tx, FI_TYPE_TX_ATTR, len);
		compare(reference, ours, "fi_rx_attr", &rx, FI_TYPE_RX_ATTR, len);
		compare(reference, ours, "fi_ep_attr", &ep, FI_TYPE_EP_ATTR, len);
		compare(reference, ours, "fi_domain_attr", &domain, FI_TYPE_DOMAIN_ATTR, len);
		compare(reference, ours, "fi_fabric_attr", &fabric, FI_TYPE_FABRIC_ATTR, len);
		compare(reference, ours, "fi_info", &info, FI_TYPE_INFO, len);
	}
}

static void compare_error_texts(const struct library *reference, const struct library *ours)
{
	static const int extremes[] = { 2147483647, -2147483647, -2147483647 - 1, 65536, -65536 };

	for (int code = -2000; code <= 2000; code++) {
		checks++;
		if (strcmp(reference->strerror(code), ours->strerror(code)))
			report("fi_strerror", code, 0, reference->strerror(code),
			       ours->strerror(code));
	}
	for (size_t i = 0; i < sizeof extremes / sizeof extremes[0]; i++) {
		checks++;
		if (strcmp(reference->strerror(extremes[i]), ours->strerror(extremes[i])))
			report("fi_strerror", extremes[i], 0, reference->strerror(extremes[i]),
			       ours->strerror(extremes[i]));
	}
}

int main(void)
{
	static char our_path[4096];
	const char *builddir = getenv("top_builddir");
	struct library reference = {
		.path = getenv("SYSTEM_LIBFABRIC") ? getenv("SYSTEM_LIBFABRIC") :
			"/usr/lib/x86_64-linux-gnu/libfabric.so.1"
	};
	struct library ours = { .path = our_path };

	snprintf(our_path, sizeof our_path, "%s/.libs/libfabric.so.1", builddir ? builddir : ".");
	FILE *probe = fopen(reference.path, "r");
	if (!probe) {
		printf("SKIP: no reference library at %s\n", reference.path);
		return 77;
	}
	fclose(probe);
	if (load(&reference, LM_ID_NEWLM) || load(&ours, LM_ID_NEWLM))
		return 1;

	compare_error_texts(&reference, &ours);
	compare_scalars(&reference, &ours);
	compare_structures(&reference, &ours);

	printf("%ld comparisons, %ld mismatches\n", checks, failures);
	return failures ? 1 : 0;
}
