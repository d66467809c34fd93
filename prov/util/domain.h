// util::Domain: base of a provider's domain object.
//
// Owns the domain's ProgressEngine (DESIGN rule 4) and lock, the MR map, and the bound EQ.
// Provides util implementations of fi_cq_open, fi_cntr_open, fi_av_open, fi_poll_open and
// fi_mr_reg/regv/regattr; the provider's derived class adds endpoint() (and may replace any
// of these by defining a member with the same name) and calls install_ops<Self>().
#ifndef OFI_PROV_UTIL_DOMAIN_H
#define OFI_PROV_UTIL_DOMAIN_H

#include "prov/util/fabric.h"
#include "prov/util/fid_object.h"
#include "prov/util/mr_map.h"
#include "prov/util/ops_tables.h"
#include "prov/util/progress_engine.h"

#include <rdma/fi_domain.h>

#include <atomic>

namespace util {

class EventQueue;

class Domain : public FidStorage<fid_domain>, public FidObject {
public:
	// Who drives FI_PROGRESS_AUTO data progress: the engine's thread (providers whose work
	// is engine sources and fds, like tcp), or the provider itself (rxm runs a thread per
	// enabled endpoint over its core's queues, which are not engine fds: an engine thread
	// would only wake up to find nothing to do).
	enum class AutoProgress { engine_thread, provider };

	// Copies 'info' (fi_dupinfo). Lock strength follows info->domain_attr threading and
	// progress; with FI_PROGRESS_AUTO data progress and AutoProgress::engine_thread an
	// engine thread is started.
	Domain(Fabric &fabric, const struct fi_info *info, void *context,
	       AutoProgress auto_progress = AutoProgress::engine_thread);
	~Domain() override;

	struct fid_domain *domain_fid() noexcept { return &embedded_fid.pub; }
	Fabric &fabric() noexcept { return fabric_; }
	const struct fi_info *info() const noexcept { return info_; }
	uint32_t api_version() const noexcept { return fabric_.api_version(); }
	uint32_t addr_format() const noexcept { return info_->addr_format; }
	// In bit form (a legacy FI_MR_BASIC / FI_MR_SCALABLE value translated).
	int mr_mode() const noexcept { return mr_map_.mr_mode(); }
	Lock::Kind lock_kind() const noexcept { return lock_kind_; }
	bool auto_progress() const noexcept { return auto_progress_; }

	ProgressEngine &engine() noexcept { return engine_; }
	// The domain lock (the engine's): hold it while touching state that progress touches.
	Lock &lock() noexcept { return engine_.lock(); }
	void progress() { engine_.progress(); }
	// Fabric-wide progress (EQ reads) passes over a domain only when its engine has
	// progress sources or the fabric engine saw the domain's engine fd ready since the
	// last pass: an idle domain then costs no system call.
	FdHandler *activity_watch() noexcept { return &activity_; }
	bool needs_fabric_pass() noexcept
	{
		return engine_.has_sources() || activity_.seen.exchange(false);
	}

	MrMap &mr_map() noexcept { return mr_map_; }
	EventQueue *eq() const noexcept { return eq_; }
	uint64_t eq_flags() const noexcept { return eq_flags_; }

	// Text for a provider errno in a CQ error entry (fi_cq_strerror). The default treats it
	// as a system errno.
	virtual const char *prov_strerror(int prov_errno, const void *err_data, char *buf,
					  size_t len);

	// ---- fi_ops_domain defaults ----
	int cq_open(struct fi_cq_attr *attr, struct fid_cq **cq, void *context);
	int cntr_open(struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context);
	int av_open(struct fi_av_attr *attr, struct fid_av **av, void *context);
	int poll_open(struct fi_poll_attr *attr, struct fid_poll **pollset);

	// ---- fi_ops_mr defaults (util::MemoryRegion in mr_map()) ----
	int mr_reg(const void *buf, size_t len, uint64_t access, uint64_t offset,
		   uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
	int mr_regv(const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
		    uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
	int mr_regattr(const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr);

	// ---- fi_ops ----
	int bind(struct fid *bfid, uint64_t flags);  // EQ (flags 0 or FI_REG_MR)
	int close() override;

protected:
	// FI_MR_COMPLETE on the bound EQ when the application asked for registration events
	// (fi_domain_bind with FI_REG_MR); for providers registering memory their own way.
	void report_registration(struct fid_mr *mr, void *context);

	template <class Self>
	void install_ops() noexcept
	{
		embedded_fid.pub.fid.ops = ops_ptr<Self, make_fi_ops<Self>>();
		embedded_fid.pub.ops = ops_ptr<Self, make_domain_ops<Self>>();
		embedded_fid.pub.mr = ops_ptr<Self, make_mr_ops<Self>>();
	}

private:
	struct Activity : FdHandler {
		explicit Activity(ProgressEngine &engine) : engine(engine) {}
		ProgressEngine &engine;
		std::atomic<bool> seen{true};
		// The domain's next pass looks at its fds even when they are all lazy: the
		// fabric's reader (an EQ) woke for one of them.
		void on_fd_ready(int, uint32_t) override
		{
			seen = true;
			engine.request_epoll();
		}
	};

	Fabric &fabric_;
	struct fi_info *info_;
	Lock::Kind lock_kind_;
	bool auto_progress_;
	ProgressEngine engine_;
	MrMap mr_map_;
	EventQueue *eq_ = nullptr;
	uint64_t eq_flags_ = 0;
	Activity activity_{engine_};
};

} // namespace util

#endif
