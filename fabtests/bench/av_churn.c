/*
 * av_churn: the cost of an address vector whose peers come and go (issue 17 item 2). Public
 * fi_* API only, so the same binary runs against any libfabric.so.1.
 *
 * usage: av_churn [-p PROVIDER] [-n CYCLES] [-s]
 *
 * Opens PROVIDER's domain (default tcp;ofi_rxm, RDM; "tcp" opens a MSG domain) and an
 * FI_AV_TABLE, then inserts and removes one address CYCLES times (default 2000000), each
 * time a different port so that no cached entry can help. Printed (one line):
 *   provider P cycles N us_per_pair T rss_kb_before B rss_kb_after A
 * RSS is the process's resident set from /proc/self/statm; a flat AV keeps A close to B.
 * With -s it prints instead what fi_av_insert/lookup/remove return for the sequence
 * insert A, insert A again, remove, lookup, remove, insert A (fi_av(3) semantics).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

static long rss_kb(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static struct sockaddr_in address(unsigned n)
{
	struct sockaddr_in sin;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (n >> 16));
	sin.sin_port = htons((uint16_t)(n & 0xffff) | 1);
	return sin;
}

static void semantics(struct fid_av *av)
{
	struct sockaddr_in a = address(7);
	struct sockaddr_in out;
	size_t len;
	fi_addr_t first = FI_ADDR_NOTAVAIL, second = FI_ADDR_NOTAVAIL, third = FI_ADDR_NOTAVAIL;
	int rc;

	rc = fi_av_insert(av, &a, 1, &first, 0, NULL);
	printf("insert A: %d fi_addr %lu\n", rc, (unsigned long)first);
	rc = fi_av_insert(av, &a, 1, &second, 0, NULL);
	printf("insert A again: %d fi_addr %lu\n", rc, (unsigned long)second);
	rc = fi_av_remove(av, &first, 1, 0);
	printf("remove first: %d\n", rc);
	len = sizeof(out);
	rc = fi_av_lookup(av, second, &out, &len);
	printf("lookup second: %d\n", rc);
	rc = fi_av_remove(av, &second, 1, 0);
	printf("remove second: %d\n", rc);
	len = sizeof(out);
	rc = fi_av_lookup(av, second, &out, &len);
	printf("lookup after both removes: %d\n", rc);
	rc = fi_av_insert(av, &a, 1, &third, 0, NULL);
	printf("insert A once more: %d fi_addr %lu\n", rc, (unsigned long)third);
}

int main(int argc, char **argv)
{
	const char *prov = "tcp;ofi_rxm";
	unsigned long cycles = 2000000;
	int probe = 0, opt;
	while ((opt = getopt(argc, argv, "p:n:s")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'n': cycles = strtoul(optarg, NULL, 10); break;
		case 's': probe = 1; break;
		default:
			fprintf(stderr, "usage: %s [-p PROVIDER] [-n CYCLES] [-s]\n", argv[0]);
			return 2;
		}
	}

	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_av *av = NULL;
	int rc;
	if (!hints)
		return 1;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = strchr(prov, ';') ? FI_EP_RDM : FI_EP_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->caps = FI_MSG;
	rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints, &info);
	if (!rc)
		rc = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!rc)
		rc = fi_domain(fabric, info, &domain, NULL);
	if (!rc) {
		struct fi_av_attr attr;
		memset(&attr, 0, sizeof(attr));
		attr.type = FI_AV_TABLE;
		rc = fi_av_open(domain, &attr, &av, NULL);
	}
	if (rc) {
		fprintf(stderr, "av_churn: %s: %s\n", prov, fi_strerror(-rc));
		return 1;
	}

	if (probe) {
		semantics(av);
	} else {
		long before = rss_kb();
		double start = now_us();
		for (unsigned long i = 0; i < cycles; i++) {
			struct sockaddr_in a = address((unsigned)i);
			fi_addr_t fi_addr;
			if (fi_av_insert(av, &a, 1, &fi_addr, 0, NULL) != 1 ||
			    fi_av_remove(av, &fi_addr, 1, 0) != 0) {
				fprintf(stderr, "av_churn: cycle %lu failed\n", i);
				return 1;
			}
		}
		double elapsed = now_us() - start;
		printf("provider %s cycles %lu us_per_pair %.3f rss_kb_before %ld rss_kb_after %ld\n",
		       prov, cycles, cycles ? elapsed / cycles : 0.0, before, rss_kb());
	}
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}
