/* fi_av_test: address vector insert, lookup, straddr and remove (connectionless endpoints). */
#include "../common/ft_unit.h"

#include <string.h>

struct av_fixture {
	struct fid_av *av;
	struct fid_ep *ep;
	char name[256];
	size_t name_len;
};

/* An enabled endpoint gives us a real address of this provider to insert. */
static int fixture_open(struct av_fixture *f)
{
	memset(f, 0, sizeof(*f));
	/* Connected endpoints have no address vector to test. */
	if (ft.info->ep_attr->type == FI_EP_MSG)
		return -FI_ENODATA;
	struct fi_av_attr attr = { .type = ft.info->domain_attr->av_type, .count = 8 };
	int ret = fi_av_open(ft.domain, &attr, &f->av, NULL);
	if (ret) {
		FT_PRINTERR("fi_av_open", ret);
		return ret;
	}
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	if (!ft.tx_cq && (ret = fi_cq_open(ft.domain, &cq_attr, &ft.tx_cq, NULL)))
		return ret;
	if ((ret = ft_unit_open_endpoint(&f->ep)) ||
	    (ret = fi_ep_bind(f->ep, &f->av->fid, 0)) ||
	    (ret = fi_ep_bind(f->ep, &ft.tx_cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(f->ep))) {
		FT_PRINTERR("endpoint setup", ret);
		return ret;
	}
	f->name_len = sizeof(f->name);
	ret = fi_getname(&f->ep->fid, f->name, &f->name_len);
	if (ret)
		FT_PRINTERR("fi_getname", ret);
	return ret;
}

static void fixture_close(struct av_fixture *f)
{
	if (f->ep)
		fi_close(&f->ep->fid);
	if (f->av)
		fi_close(&f->av->fid);
}

static int test_insert_lookup(void)
{
	struct av_fixture f;
	int ret = fixture_open(&f);
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	char out[256];
	size_t out_len = sizeof(out);
	int inserted = ret ? 0 : fi_av_insert(f.av, f.name, 1, &addr, 0, NULL);
	int looked = inserted == 1 ? fi_av_lookup(f.av, addr, out, &out_len) : -1;
	bool same = looked == 0 && out_len == f.name_len && memcmp(out, f.name, out_len) == 0;
	fixture_close(&f);
	FT_CHECK(ret);
	FT_EXPECT(inserted == 1 && addr != FI_ADDR_NOTAVAIL, "fi_av_insert returned %d", inserted);
	FT_EXPECT(same, "lookup returned %d and %s address", looked,
		  looked ? "no" : "a different");
	return 0;
}

static int test_straddr(void)
{
	struct av_fixture f;
	int ret = fixture_open(&f);
	char text[128] = "";
	size_t len = sizeof(text);
	const char *s = ret ? NULL : fi_av_straddr(f.av, f.name, text, &len);
	fixture_close(&f);
	FT_CHECK(ret);
	FT_EXPECT(s && text[0], "fi_av_straddr gave no text");
	return 0;
}

static int test_remove(void)
{
	struct av_fixture f;
	int ret = fixture_open(&f);
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	int inserted = ret ? 0 : fi_av_insert(f.av, f.name, 1, &addr, 0, NULL);
	int removed = inserted == 1 ? fi_av_remove(f.av, &addr, 1, 0) : -1;
	/* The address can be inserted again once removed. */
	int again = removed == 0 ? fi_av_insert(f.av, f.name, 1, &addr, 0, NULL) : -1;
	fixture_close(&f);
	FT_CHECK(ret);
	FT_EXPECT(inserted == 1 && removed == 0, "insert %d remove %d", inserted, removed);
	FT_EXPECT(again == 1, "inserting a removed address again returned %d", again);
	return 0;
}

static int test_lookup_unknown(void)
{
	struct av_fixture f;
	int ret = fixture_open(&f);
	char out[256];
	size_t out_len = sizeof(out);
	int looked = ret ? 0 : fi_av_lookup(f.av, 12345, out, &out_len);
	fixture_close(&f);
	FT_CHECK(ret);
	FT_EXPECT(looked < 0, "lookup of an address never inserted returned %d", looked);
	return 0;
}

static int test_insert_several(void)
{
	struct av_fixture f;
	int ret = fixture_open(&f);
	/* The same address three times in one call: three valid fi_addr_t values. */
	char names[3][256];
	fi_addr_t addrs[3] = { FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL };
	int inserted = 0;
	if (!ret && f.name_len <= sizeof(names[0])) {
		char packed[3 * 256];
		for (int i = 0; i < 3; i++)
			memcpy(packed + i * f.name_len, f.name, f.name_len);
		(void)names;
		inserted = fi_av_insert(f.av, packed, 3, addrs, 0, NULL);
	}
	fixture_close(&f);
	FT_CHECK(ret);
	FT_EXPECT(inserted == 3, "fi_av_insert of 3 addresses returned %d", inserted);
	for (int i = 0; i < 3; i++)
		FT_EXPECT(addrs[i] != FI_ADDR_NOTAVAIL, "address %d not inserted", i);
	return 0;
}

static const struct ft_unit_case cases[] = {
	{ "av_insert_lookup", test_insert_lookup },
	{ "av_straddr", test_straddr },
	{ "av_remove", test_remove },
	{ "av_lookup_unknown", test_lookup_unknown },
	{ "av_insert_several", test_insert_several },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "Address vectors.", cases, FT_UNIT_COUNT(cases), FI_MSG);
}
