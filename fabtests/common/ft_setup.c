/* Opening, connecting and closing the fabric resources of a test. */
#include "shared.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FT_NAME_MAX 256

void ft_want_cq_data(void)
{
	ft.hints->domain_attr->cq_data_size = 4;
	ft.hints->mode |= FI_RX_CQ_DATA;
	ft.hints->rx_attr->mode |= FI_RX_CQ_DATA;
}

bool ft_rx_cq_data(void)
{
	return (ft.info->mode & FI_RX_CQ_DATA) || (ft.info->rx_attr->mode & FI_RX_CQ_DATA);
}

int ft_getinfo(void)
{
	const char *node = NULL, *service = NULL;
	uint64_t flags = 0;
	if (ft.server) {
		node = ft.opts.src_addr;
		service = ft.opts.src_port;
		if (node || service)
			flags = FI_SOURCE;
	} else if (!ft.hints->dest_addr) {
		node = ft.opts.dst_addr;
		service = ft.opts.dst_port;
	}
	int ret = fi_getinfo(FT_API_VERSION, node, service, flags, ft.hints, &ft.info);
	if (ret == -FI_ENODATA) {
		fprintf(stderr, "fi_getinfo: the provider offers nothing that matches this "
			"test's hints (not run)\n");
		return ret;
	}
	if (ret) {
		FT_PRINTERR("fi_getinfo", ret);
		return ret;
	}
	ft_debug("provider %s, domain %s\n", ft.info->fabric_attr->prov_name,
		 ft.info->domain_attr->name);
	return 0;
}

int ft_open_fabric(void)
{
	int ret = fi_fabric(ft.info->fabric_attr, &ft.fabric, NULL);
	if (ret) {
		FT_PRINTERR("fi_fabric", ret);
		return ret;
	}
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	ret = fi_eq_open(ft.fabric, &eq_attr, &ft.eq, NULL);
	if (ret)
		FT_PRINTERR("fi_eq_open", ret);
	return ret;
}

static enum fi_wait_obj wait_obj_for_method(void)
{
	switch (ft.opts.comp_method) {
	case FT_COMP_SREAD: return FI_WAIT_UNSPEC;
	case FT_COMP_FD: return FI_WAIT_FD;
	default: return FI_WAIT_NONE;
	}
}

static int open_completion_objects(void)
{
	int ret;
	if (ft.opts.comp_type == FT_COMP_COUNTER) {
		struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
					     .wait_obj = wait_obj_for_method() };
		if ((ret = fi_cntr_open(ft.domain, &attr, &ft.tx_cntr, NULL)) ||
		    (ret = fi_cntr_open(ft.domain, &attr, &ft.rx_cntr, NULL)))
			FT_PRINTERR("fi_cntr_open", ret);
		return ret;
	}
	/* Entries are read into a fi_cq_tagged_entry whatever the format: every smaller
	 * format is a prefix of it. */
	struct fi_cq_attr attr = { .format = ft.opts.cq_format,
				   .wait_obj = wait_obj_for_method() };
	attr.size = ft.info->tx_attr->size;
	if ((ret = fi_cq_open(ft.domain, &attr, &ft.tx_cq, NULL))) {
		FT_PRINTERR("fi_cq_open", ret);
		return ret;
	}
	attr.size = ft.info->rx_attr->size;
	if ((ret = fi_cq_open(ft.domain, &attr, &ft.rx_cq, NULL)))
		FT_PRINTERR("fi_cq_open", ret);
	return ret;
}

static int alloc_buffers(void)
{
	size_t max_msg = ft.info->ep_attr->max_msg_size;
	if (ft.opts.size_count) {
		ft.xfer_max = 0;
		for (int i = 0; i < ft.opts.size_count; i++)
			if (ft.opts.size_list[i] > ft.xfer_max)
				ft.xfer_max = ft.opts.size_list[i];
		if (max_msg && ft.xfer_max > max_msg) {
			fprintf(stderr, "size %zu exceeds max_msg_size %zu (not run)\n",
				ft.xfer_max, max_msg);
			return -FI_ENODATA;
		}
	} else if (ft.opts.all_sizes) {
		ft.xfer_max = FT_MAX_ALL_SIZE;
		if (max_msg && ft.xfer_max > max_msg)
			ft.xfer_max = max_msg;
	} else {
		if (max_msg && ft.opts.size > max_msg) {
			fprintf(stderr, "size %zu exceeds max_msg_size %zu (not run)\n",
				ft.opts.size, max_msg);
			return -FI_ENODATA;
		}
		ft.xfer_max = ft.opts.size;
	}
	/* Several slots only when asked (e.g. -v bandwidth: every message in flight needs its
	 * own buffer to be checked), bounded so 1 MiB messages do not take 128 MiB. */
	ft.slots = 1;
	if (ft.opts.buf_slots > 1) {
		size_t fit = FT_SLOTS_BYTES_MAX / ft.xfer_max;
		ft.slots = ft.opts.buf_slots < fit ? ft.opts.buf_slots : fit ? fit : 1;
	}
	size_t side = ft.slots * ft.xfer_max;
	size_t total = (2 * side + 4095) & ~(size_t)4095;
	ft.buf = aligned_alloc(4096, total);
	if (!ft.buf)
		return -FI_ENOMEM;
	memset(ft.buf, 0, total);
	ft.rx_buf = ft.buf;
	ft.tx_buf = ft.buf + side;

	bool rma = ft.info->caps & (FI_RMA | FI_ATOMIC);
	if (!(ft.info->domain_attr->mr_mode & FI_MR_LOCAL) && !rma)
		return 0;
	uint64_t access = FI_SEND | FI_RECV;
	if (rma)
		access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	/* Without FI_MR_PROV_KEY we choose the key; each side's MR lives in its own domain. */
	uint64_t requested_key = 0xC0DE;
	int ret = fi_mr_reg(ft.domain, ft.buf, total, access, 0, requested_key, 0, &ft.mr, NULL);
	if (ret) {
		FT_PRINTERR("fi_mr_reg", ret);
		return ret;
	}
	ft.mr_desc = fi_mr_desc(ft.mr);
	return 0;
}

static int bind_and_enable(void)
{
	int ret = 0;
	if (ft.info->ep_attr->type == FI_EP_MSG) {
		ret = fi_ep_bind(ft.ep, &ft.eq->fid, 0);
	} else {
		struct fi_av_attr attr = { .type = ft.info->domain_attr->av_type, .count = 4 };
		if (attr.type == FI_AV_UNSPEC)
			attr.type = FI_AV_MAP;
		if ((ret = fi_av_open(ft.domain, &attr, &ft.av, NULL))) {
			FT_PRINTERR("fi_av_open", ret);
			return ret;
		}
		ret = fi_ep_bind(ft.ep, &ft.av->fid, 0);
	}
	if (!ret && ft.tx_cq)
		ret = fi_ep_bind(ft.ep, &ft.tx_cq->fid, FI_TRANSMIT);
	if (!ret && ft.rx_cq)
		ret = fi_ep_bind(ft.ep, &ft.rx_cq->fid, FI_RECV);
	if (!ret && ft.tx_cntr)
		ret = fi_ep_bind(ft.ep, &ft.tx_cntr->fid, FI_SEND | FI_READ | FI_WRITE);
	if (!ret && ft.rx_cntr)
		ret = fi_ep_bind(ft.ep, &ft.rx_cntr->fid, FI_RECV);
	if (ret) {
		FT_PRINTERR("fi_ep_bind", ret);
		return ret;
	}
	if ((ret = fi_enable(ft.ep)))
		FT_PRINTERR("fi_enable", ret);
	return ret;
}

/* Domain, completion objects, buffers and an enabled endpoint for `info`. */
int ft_open_domain_res(void)
{
	int ret = fi_domain(ft.fabric, ft.info, &ft.domain, NULL);
	if (ret) {
		FT_PRINTERR("fi_domain", ret);
		return ret;
	}
	FT_CHECK(open_completion_objects());
	FT_CHECK(alloc_buffers());
	if ((ret = fi_endpoint(ft.domain, ft.info, &ft.ep, NULL))) {
		FT_PRINTERR("fi_endpoint", ret);
		return ret;
	}
	return bind_and_enable();
}

int ft_wait_cm_event(uint32_t expected)
{
	struct {
		struct fi_eq_cm_entry entry;
		char data[FT_CM_DATA_MAX];
	} ev;
	uint32_t event;
	time_t deadline = time(NULL) + ft.opts.timeout_sec;
	for (;;) {
		ssize_t n = fi_eq_read(ft.eq, &event, &ev, sizeof(ev), 0);
		if (n == -FI_EAGAIN) {
			if (time(NULL) > deadline) {
				FT_ERR("timed out waiting for connection event %u", expected);
				return -FI_ETIMEDOUT;
			}
			sched_yield();
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = { 0 };
			fi_eq_readerr(ft.eq, &err, 0);
			FT_ERR("connection error event: %s (%d)", fi_strerror(err.err), err.err);
			return err.err ? -err.err : -FI_EOTHER;
		}
		if (n < 0) {
			FT_PRINTERR("fi_eq_read", n);
			return (int)n;
		}
		if (event != expected) {
			FT_ERR("got connection event %u, expected %u", event, expected);
			if (event == FI_CONNREQ)
				fi_freeinfo(ev.entry.info);
			return -FI_EOTHER;
		}
		/* Only the event that carries private data replaces what we kept. */
		if ((size_t)n > sizeof(ev.entry)) {
			ft.cm_recv_len = (size_t)n - sizeof(ev.entry);
			memcpy(ft.cm_recv_data, ev.data, ft.cm_recv_len);
		}
		if (event == FI_CONNREQ) {
			fi_freeinfo(ft.info);
			ft.info = ev.entry.info;
		}
		return 0;
	}
}

int ft_send_name(struct fid *fid)
{
	char name[FT_NAME_MAX] = { 0 };
	size_t len = sizeof(name);
	int ret = fi_getname(fid, name, &len);
	if (ret) {
		FT_PRINTERR("fi_getname", ret);
		return ret;
	}
	/* Length and address format first: the receiver needs both to use the name as hints. */
	uint32_t header[2] = { (uint32_t)len, ft.info->addr_format };
	FT_CHECK(ft_oob_send(header, sizeof(header)));
	return ft_oob_send(name, len);
}

int ft_recv_name(void **name, size_t *len, uint32_t *format)
{
	uint32_t header[2];
	FT_CHECK(ft_oob_recv(header, sizeof(header)));
	uint32_t wire_len = header[0];
	*format = header[1];
	if (wire_len == 0 || wire_len > FT_NAME_MAX) {
		FT_ERR("peer sent an invalid name length %u", wire_len);
		return -FI_EINVAL;
	}
	*name = calloc(1, wire_len);
	if (!*name)
		return -FI_ENOMEM;
	*len = wire_len;
	return ft_oob_recv(*name, wire_len);
}

static int insert_peer(const void *name)
{
	int ret = fi_av_insert(ft.av, name, 1, &ft.remote_addr, 0, NULL);
	if (ret != 1) {
		FT_PRINTERR("fi_av_insert", ret < 0 ? ret : -FI_EOTHER);
		return ret < 0 ? ret : -FI_EOTHER;
	}
	return 0;
}

/* Server side of setup; the two ft_oob_agree calls pair with the client's. */
static int server_setup(void)
{
	bool msg = ft.opts.ep_type == FI_EP_MSG;
	int ret = ft_getinfo();
	if (!ret)
		ret = ft_open_fabric();
	if (!ret && msg) {
		if ((ret = fi_passive_ep(ft.fabric, ft.info, &ft.pep, NULL)) ||
		    (ret = fi_pep_bind(ft.pep, &ft.eq->fid, 0)) || (ret = fi_listen(ft.pep)))
			FT_PRINTERR("passive endpoint", ret);
	} else if (!ret) {
		ret = ft_open_domain_res();
	}
	FT_CHECK(ft_oob_agree(ret));
	if (!msg || ft.opts.oob_addr_exchange)
		FT_CHECK(ft_send_name(msg ? &ft.pep->fid : &ft.ep->fid));
	FT_CHECK(ft_oob_agree(0));

	if (!msg) {
		void *name;
		size_t len;
		uint32_t format;
		FT_CHECK(ft_recv_name(&name, &len, &format));
		ret = insert_peer(name);
		free(name);
		return ret;
	}
	FT_CHECK(ft_wait_cm_event(FI_CONNREQ));
	ret = ft_open_domain_res();
	if (!ret && (ret = fi_accept(ft.ep, ft.cm_send_data, ft.cm_send_len)))
		FT_PRINTERR("fi_accept", ret);
	if (!ret)
		ret = ft_wait_cm_event(FI_CONNECTED);
	return ret;
}

static int client_setup(void)
{
	bool msg = ft.opts.ep_type == FI_EP_MSG;
	void *server_name = NULL;
	size_t len = 0;
	uint32_t format = FI_FORMAT_UNSPEC;
	FT_CHECK(ft_oob_agree(0));
	int ret = 0;
	if (!msg || ft.opts.oob_addr_exchange)
		FT_CHECK(ft_recv_name(&server_name, &len, &format));
	if (ft.opts.oob_addr_exchange) {
		ft.hints->addr_format = format;
		ft.hints->dest_addr = server_name;
		ft.hints->dest_addrlen = len;
		server_name = NULL;
	}
	ret = ft_getinfo();
	if (!ret)
		ret = ft_open_fabric();
	if (!ret)
		ret = ft_open_domain_res();
	ret = ft_oob_agree(ret);
	if (ret) {
		free(server_name);
		return ret;
	}
	if (!msg) {
		ret = ft_send_name(&ft.ep->fid);
		/* Without -E the provider resolved the server's node/service into dest_addr. */
		const void *peer = ft.opts.oob_addr_exchange ? ft.hints->dest_addr :
				   ft.info->dest_addr ? ft.info->dest_addr : server_name;
		if (!ret)
			ret = insert_peer(peer);
		free(server_name);
		return ret;
	}
	ret = fi_connect(ft.ep, ft.info->dest_addr, ft.cm_send_data, ft.cm_send_len);
	if (ret) {
		FT_PRINTERR("fi_connect", ret);
		return ret;
	}
	return ft_wait_cm_event(FI_CONNECTED);
}

int ft_init_fabric(void)
{
	FT_CHECK(ft_oob_open());
	int ret = ft.server ? server_setup() : client_setup();
	/* Neither side starts moving data before both are ready. */
	return ft_oob_agree(ret);
}

int ft_exchange_rma_target(void)
{
	struct ft_rma_target mine = {
		.addr = (ft.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			(uint64_t)(uintptr_t)ft.rx_buf : (uint64_t)(ft.rx_buf - ft.buf),
		.key = ft.mr ? fi_mr_key(ft.mr) : 0,
		.len = ft.xfer_max * ft.slots,
	};
	return ft_oob_exchange(&mine, &ft.remote, sizeof(mine));
}

int ft_finalize(void)
{
	int ret = ft_oob_sync();
	if (!ret && ft.ep && ft.info->ep_attr->type == FI_EP_MSG)
		fi_shutdown(ft.ep, 0);
	return ret;
}

static void close_fid(struct fid *fid, const char *what)
{
	int ret = fi_close(fid);
	if (ret)
		FT_PRINTERR(what, ret);
}

#define FT_CLOSE(obj)                                       \
	do {                                                \
		if (obj)                                    \
			close_fid(&(obj)->fid, "fi_close(" #obj ")"); \
		(obj) = NULL;                               \
	} while (0)

void ft_close_fabric_res(void)
{
	/* Children before parents. */
	FT_CLOSE(ft.ep);
	FT_CLOSE(ft.pep);
	FT_CLOSE(ft.mr);
	FT_CLOSE(ft.av);
	FT_CLOSE(ft.tx_cq);
	FT_CLOSE(ft.rx_cq);
	FT_CLOSE(ft.tx_cntr);
	FT_CLOSE(ft.rx_cntr);
	FT_CLOSE(ft.domain);
	FT_CLOSE(ft.eq);
	FT_CLOSE(ft.fabric);
	free(ft.buf);
	ft.buf = NULL;
	fi_freeinfo(ft.info);
	ft.info = NULL;
	ft.tx_posted = ft.tx_done = ft.rx_posted = ft.rx_done = ft.tx_seq = 0;
}

void ft_close_all(void)
{
	ft_close_fabric_res();
	fi_freeinfo(ft.hints);
	ft.hints = NULL;
	ft_oob_close();
}

int ft_run(int (*test)(void))
{
	int ret = ft_init_fabric();
	if (!ret)
		ret = test();
	if (!ret)
		ret = ft_finalize();
	ft_close_all();
	if (ret == -FI_ENODATA || ret == -FI_ENOSYS)
		printf("not run: %s\n", fi_strerror(-ret));
	else
		printf("%s\n", ret ? "FAIL" : "PASS");
	return ft_exit_code(ret);
}
