// util::Fabric: base of a provider's fabric object.
//
// Provides fi_eq_open, fi_wait_open and fi_trywait; the provider's derived class adds
// domain() and passive_ep() and calls install_ops<Self>() in its constructor.
// It remembers the API version the application asked for (fabric_attr->api_version), which
// decides e.g. how much of fi_cq_err_entry is copied back.
// EQ reads progress the whole fabric: its own engine (passive endpoints register their
// listening sockets there) and every open domain's engine.
#ifndef OFI_PROV_UTIL_FABRIC_H
#define OFI_PROV_UTIL_FABRIC_H

#include "prov/util/fid_object.h"
#include "prov/util/ops_tables.h"
#include "prov/util/progress_engine.h"

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include <mutex>
#include <string>
#include <vector>

namespace util {

class Domain;
class EventQueue;

class Fabric : public FidStorage<fid_fabric>, public FidObject {
public:
	// 'attr' is the fabric_attr of the info the app passed to fi_fabric; its api_version
	// (0 means "current") is kept.
	Fabric(const struct fi_provider *provider, const struct fi_fabric_attr *attr,
	       void *context);
	~Fabric() override;

	struct fid_fabric *fabric_fid() noexcept { return &embedded_fid.pub; }
	const struct fi_provider *provider() const noexcept { return provider_; }
	uint32_t api_version() const noexcept { return api_version_; }
	const std::string &name() const noexcept { return name_; }

	// Engine for fabric-level fds (listening sockets of passive endpoints).
	ProgressEngine &engine() noexcept { return engine_; }

	// One progress pass over the fabric's engine and every domain's engine.
	void progress_all();

	// Called by util::Domain; registered domains are progressed by EQ reads.
	void register_domain(Domain *domain);
	void unregister_domain(Domain *domain);
	// Called by util::EventQueue (with a wait object): its epoll set then holds each
	// domain's engine fd, from now on and as domains come and go.
	void register_eq(EventQueue *eq);
	void unregister_eq(EventQueue *eq);

	// ---- fi_ops_fabric defaults ----
	int eq_open(struct fi_eq_attr *attr, struct fid_eq **eq, void *context);
	int wait_open(struct fi_wait_attr *attr, struct fid_wait **waitset);
	int trywait(struct fid **fids, int count);

	// ---- fi_ops ----
	int close() override;

protected:
	// Points the public fid at the tables generated from Self's members.
	template <class Self>
	void install_ops() noexcept
	{
		embedded_fid.pub.fid.ops = ops_ptr<Self, make_fi_ops<Self>>();
		embedded_fid.pub.ops = ops_ptr<Self, make_fabric_ops<Self>>();
	}

private:
	const struct fi_provider *provider_;
	uint32_t api_version_;
	std::string name_;
	ProgressEngine engine_;
	std::recursive_mutex domains_mutex_;
	std::vector<Domain *> domains_;
	std::vector<EventQueue *> eqs_;  // guarded by domains_mutex_
};

} // namespace util

#endif
