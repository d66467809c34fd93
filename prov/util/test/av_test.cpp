// Address vectors: map and table, IPv4 and IPv6, remove/reuse, lookup, straddr, sync
// errors, FI_EVENT completion, opaque addresses.
#include "prov/util/test/fake_provider.h"

#include "prov/util/address_vector.h"

#include <arpa/inet.h>
#include <cstring>

namespace {

using fake::Fixture;

struct sockaddr_in v4(const char *ip, uint16_t port)
{
	struct sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	inet_pton(AF_INET, ip, &sin.sin_addr);
	return sin;
}

struct sockaddr_in6 v6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 sin6{};
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(port);
	inet_pton(AF_INET6, ip, &sin6.sin6_addr);
	return sin6;
}

class AvFixture : public Fixture {
protected:
	struct fid_av *open_av(enum fi_av_type type, uint64_t flags = 0)
	{
		struct fi_av_attr attr{};
		attr.type = type;
		attr.flags = flags;
		struct fid_av *av = nullptr;
		EXPECT_EQ(fi_av_open(domain, &attr, &av, nullptr), 0);
		return av;
	}
};

TEST_F(AvFixture, TableInsertLookupRemove)
{
	for (auto type : {FI_AV_TABLE, FI_AV_MAP}) {
		struct fid_av *av = open_av(type);
		ASSERT_NE(av, nullptr);
		struct sockaddr_in addrs[3] = {v4("127.0.0.1", 23001), v4("127.0.0.2", 23002),
					       v4("10.1.2.3", 23003)};
		fi_addr_t fi_addrs[3];
		ASSERT_EQ(fi_av_insert(av, addrs, 3, fi_addrs, 0, nullptr), 3);
		EXPECT_EQ(fi_addrs[0], 0u);
		EXPECT_EQ(fi_addrs[2], 2u);

		struct sockaddr_in out{};
		size_t len = sizeof(out);
		ASSERT_EQ(fi_av_lookup(av, fi_addrs[1], &out, &len), 0);
		EXPECT_EQ(len, sizeof(out));
		EXPECT_EQ(std::memcmp(&out, &addrs[1], sizeof(out)), 0);

		// Remove and re-insert: the freed index is reused, lookups of it fail meanwhile.
		ASSERT_EQ(fi_av_remove(av, &fi_addrs[1], 1, 0), 0);
		EXPECT_EQ(fi_av_lookup(av, fi_addrs[1], &out, &len), -FI_ENOENT);
		EXPECT_EQ(fi_av_remove(av, &fi_addrs[1], 1, 0), -FI_EINVAL);
		fi_addr_t again;
		ASSERT_EQ(fi_av_insert(av, &addrs[1], 1, &again, 0, nullptr), 1);
		EXPECT_EQ(again, fi_addrs[1]);

		auto *object = util::fid_cast<util::AddressVector>(&av->fid, FI_CLASS_AV);
		EXPECT_EQ(object->find(&addrs[2], sizeof(addrs[2])), fi_addrs[2]);
		struct sockaddr_in unknown = v4("1.1.1.1", 1);
		EXPECT_EQ(object->find(&unknown, sizeof(unknown)), FI_ADDR_NOTAVAIL);
		EXPECT_EQ(object->address(99), nullptr);
		// Padding bytes do not matter for reverse lookups.
		struct sockaddr_in padded = addrs[2];
		std::memset(padded.sin_zero, 0x5a, sizeof(padded.sin_zero));
		EXPECT_EQ(object->find(&padded, sizeof(padded)), fi_addrs[2]);
		EXPECT_EQ(fi_close(&av->fid), 0);
	}
}

TEST_F(AvFixture, MixedIpv4AndIpv6)
{
	struct fid_av *av = open_av(FI_AV_TABLE);
	struct sockaddr_in6 six = v6("::1", 23010);
	struct sockaddr_in four = v4("127.0.0.1", 23011);
	// Packed back to back, each as long as its family says.
	uint8_t packed[sizeof(six) + sizeof(four)];
	std::memcpy(packed, &six, sizeof(six));
	std::memcpy(packed + sizeof(six), &four, sizeof(four));
	fi_addr_t fi_addrs[2];
	ASSERT_EQ(fi_av_insert(av, packed, 2, fi_addrs, 0, nullptr), 2);
	struct sockaddr_in6 out{};
	size_t len = sizeof(out);
	ASSERT_EQ(fi_av_lookup(av, fi_addrs[0], &out, &len), 0);
	EXPECT_EQ(len, sizeof(six));
	len = sizeof(out);
	ASSERT_EQ(fi_av_lookup(av, fi_addrs[1], &out, &len), 0);
	EXPECT_EQ(len, sizeof(four));
	EXPECT_EQ(fi_close(&av->fid), 0);
}

TEST_F(AvFixture, StraddrFormat)
{
	struct fid_av *av = open_av(FI_AV_MAP);
	struct sockaddr_in four = v4("127.0.0.1", 4000);
	char buf[64];
	size_t len = sizeof(buf);
	EXPECT_STREQ(fi_av_straddr(av, &four, buf, &len), "fi_sockaddr_in://127.0.0.1:4000");
	EXPECT_EQ(len, std::strlen("fi_sockaddr_in://127.0.0.1:4000") + 1);
	struct sockaddr_in6 six = v6("::1", 4001);
	len = sizeof(buf);
	EXPECT_STREQ(fi_av_straddr(av, &six, buf, &len), "fi_sockaddr_in6://[::1]:4001");
	char tiny[8];
	len = sizeof(tiny);
	fi_av_straddr(av, &four, tiny, &len);
	EXPECT_STREQ(tiny, "fi_sock");  // truncated, NUL-terminated
	EXPECT_GT(len, sizeof(tiny));
	EXPECT_EQ(fi_close(&av->fid), 0);
}

TEST_F(AvFixture, SyncErrReportsBadEntries)
{
	struct fid_av *av = open_av(FI_AV_TABLE);
	struct sockaddr_in addrs[2] = {v4("127.0.0.1", 23020), v4("127.0.0.1", 23021)};
	addrs[1].sin_family = AF_UNIX;  // not a valid address for this AV
	fi_addr_t fi_addrs[2];
	int errors[2] = {-1, -1};
	EXPECT_EQ(fi_av_insert(av, addrs, 2, fi_addrs, FI_SYNC_ERR, errors), 1);
	EXPECT_EQ(errors[0], 0);
	EXPECT_EQ(errors[1], -FI_EINVAL);
	EXPECT_EQ(fi_addrs[1], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fi_av_insert(av, addrs, 1, fi_addrs, 1ULL << 40, nullptr), -FI_EBADFLAGS);
	EXPECT_EQ(fi_close(&av->fid), 0);
}

TEST_F(AvFixture, InsertsvcAndInsertsym)
{
	struct fid_av *av = open_av(FI_AV_TABLE);
	fi_addr_t fi_addr;
	ASSERT_EQ(fi_av_insertsvc(av, "127.0.0.1", "23030", &fi_addr, 0, nullptr), 1);
	struct sockaddr_in out{};
	size_t len = sizeof(out);
	ASSERT_EQ(fi_av_lookup(av, fi_addr, &out, &len), 0);
	EXPECT_EQ(ntohs(out.sin_port), 23030);
	fi_addr_t sym[3];
	ASSERT_EQ(fi_av_insertsym(av, "127.0.0.1", 1, "23031", 3, sym, 0, nullptr), 3);
	len = sizeof(out);
	ASSERT_EQ(fi_av_lookup(av, sym[2], &out, &len), 0);
	EXPECT_EQ(ntohs(out.sin_port), 23033);
	EXPECT_EQ(fi_close(&av->fid), 0);
}

TEST_F(AvFixture, EventModeReportsCompletionOnTheEq)
{
	struct fid_av *av = open_av(FI_AV_TABLE, FI_EVENT);
	struct sockaddr_in addr = v4("127.0.0.1", 23040);
	fi_addr_t fi_addr;
	EXPECT_EQ(fi_av_insert(av, &addr, 1, &fi_addr, 0, this), -FI_ENOEQ);
	struct fi_eq_attr eq_attr{};
	struct fid_eq *eq;
	ASSERT_EQ(fi_eq_open(fabric, &eq_attr, &eq, nullptr), 0);
	ASSERT_EQ(fi_av_bind(av, &eq->fid, 0), 0);
	EXPECT_EQ(fi_av_insert(av, &addr, 1, &fi_addr, 0, this), 0);
	uint32_t event;
	struct fi_eq_entry entry;
	ASSERT_EQ(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
		  static_cast<ssize_t>(sizeof(entry)));
	EXPECT_EQ(event, static_cast<uint32_t>(FI_AV_COMPLETE));
	EXPECT_EQ(entry.context, this);
	EXPECT_EQ(entry.data, 1u);
	EXPECT_EQ(fi_close(&eq->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&av->fid), 0);
	EXPECT_EQ(fi_close(&eq->fid), 0);
}

TEST_F(AvFixture, OpaqueAddressesForUtilityProviders)
{
	struct fi_av_attr attr{};
	attr.type = FI_AV_TABLE;
	auto *av = new util::AddressVector(*domain_object, &attr, nullptr, FI_FORMAT_UNSPEC + 1000,
					   6);
	const uint8_t addrs[12] = {1, 2, 3, 4, 5, 6, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf};
	fi_addr_t fi_addrs[2];
	ASSERT_EQ(fi_av_insert(av->av_fid(), addrs, 2, fi_addrs, 0, nullptr), 2);
	size_t len = 0;
	const void *stored = av->address(fi_addrs[1], &len);
	ASSERT_NE(stored, nullptr);
	EXPECT_EQ(len, 6u);
	EXPECT_EQ(std::memcmp(stored, addrs + 6, 6), 0);
	char buf[64];
	size_t buflen = sizeof(buf);
	EXPECT_STREQ(fi_av_straddr(av->av_fid(), addrs, buf, &buflen), "fi_addr_hex://010203040506");
	EXPECT_EQ(fi_av_insertsvc(av->av_fid(), "localhost", "1", fi_addrs, 0, nullptr),
		  -FI_ENOSYS);
	EXPECT_EQ(fi_close(&av->av_fid()->fid), 0);
}

} // namespace
