/* Opening, connecting and closing the fabric resources of fi_pingpong. */
#include "fi_pingpong.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PP_CM_TIMEOUT_SEC 30

static const char *ep_type_name(enum fi_ep_type type)
{
	switch (type) {
	case FI_EP_MSG: return "msg";
	case FI_EP_RDM: return "rdm";
	case FI_EP_DGRAM: return "dgram";
	default: return "unspec";
	}
}

static int build_hints(struct pp_test *t)
{
	struct fi_info *hints = fi_allocinfo();
	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = t->opts.ep_type;
	hints->caps = t->opts.tagged ? FI_TAGGED : FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	if (t->opts.ipv6)
		hints->addr_format = FI_SOCKADDR_IN6;
	if (t->opts.provider && !(hints->fabric_attr->prov_name = strdup(t->opts.provider)))
		goto nomem;
	if (t->opts.domain && !(hints->domain_attr->name = strdup(t->opts.domain)))
		goto nomem;
	t->fab.hints = hints;
	return 0;
nomem:
	fi_freeinfo(hints);
	return -FI_ENOMEM;
}

static int get_info(struct pp_test *t)
{
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, t->fab.hints, &t->fab.info);
	if (ret == -FI_ENODATA) {
		fprintf(stderr, "fi_getinfo(): no provider%s%s supports endpoint type %s with %s "
			"messages (ret=%d, %s)%s\n",
			t->opts.provider ? " named " : "", t->opts.provider ? t->opts.provider : "",
			ep_type_name(t->opts.ep_type), t->opts.tagged ? "tagged" : "untagged", ret,
			fi_strerror(-ret),
			t->opts.ep_type == FI_EP_DGRAM ? "; try -e msg or -e rdm" : "");
		return ret;
	}
	if (ret) {
		pp_error("fi_getinfo", ret);
		return ret;
	}
	pp_debug("using provider %s, domain %s\n", t->fab.info->fabric_attr->prov_name,
		 t->fab.info->domain_attr->name);
	return 0;
}

/* The receive half and the transmit half of one buffer, each as large as the biggest test. */
static int alloc_buffers(struct pp_test *t, struct fi_info *info)
{
	struct pp_fabric *f = &t->fab;
	size_t max_msg = info->ep_attr->max_msg_size;
	if (t->opts.size) {
		if (max_msg && t->opts.size > max_msg) {
			fprintf(stderr, "transfer size %zu exceeds the endpoint's maximum message "
				"size %zu\n", t->opts.size, max_msg);
			return -FI_EMSGSIZE;
		}
		f->xfer_max = t->opts.size;
	} else {
		f->xfer_max = pp_max_listed_size(&t->opts);
		if (max_msg && f->xfer_max > max_msg)
			f->xfer_max = max_msg;
	}
	size_t half = f->xfer_max < sizeof(PP_FIN_MSG) ? sizeof(PP_FIN_MSG) : f->xfer_max;
	f->buf = aligned_alloc(4096, (2 * half + 4095) & ~(size_t)4095);
	if (!f->buf)
		return -FI_ENOMEM;
	memset(f->buf, 0, 2 * half);
	f->rx_buf = f->buf;
	f->tx_buf = f->buf + half;

	if (info->domain_attr->mr_mode & FI_MR_LOCAL) {
		int ret = fi_mr_reg(f->domain, f->buf, 2 * half, FI_SEND | FI_RECV, 0, 0, 0,
				    &f->mr, NULL);
		if (ret) {
			pp_error("fi_mr_reg", ret);
			return ret;
		}
		f->mr_desc = fi_mr_desc(f->mr);
	}
	return 0;
}

static int open_endpoint(struct pp_test *t, struct fi_info *info)
{
	struct pp_fabric *f = &t->fab;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE };
	int ret;

	if ((ret = fi_domain(f->fabric, info, &f->domain, NULL))) {
		pp_error("fi_domain", ret);
		return ret;
	}
	if ((ret = alloc_buffers(t, info)))
		return ret;
	cq_attr.size = info->tx_attr->size;
	if ((ret = fi_cq_open(f->domain, &cq_attr, &f->tx_cq, NULL))) {
		pp_error("fi_cq_open", ret);
		return ret;
	}
	cq_attr.size = info->rx_attr->size;
	if ((ret = fi_cq_open(f->domain, &cq_attr, &f->rx_cq, NULL))) {
		pp_error("fi_cq_open", ret);
		return ret;
	}
	if ((ret = fi_endpoint(f->domain, info, &f->ep, NULL))) {
		pp_error("fi_endpoint", ret);
		return ret;
	}
	if (info->ep_attr->type == FI_EP_MSG) {
		ret = fi_ep_bind(f->ep, &f->eq->fid, 0);
	} else {
		struct fi_av_attr av_attr = { .type = info->domain_attr->av_type, .count = 1 };
		if (av_attr.type == FI_AV_UNSPEC)
			av_attr.type = FI_AV_MAP;
		ret = fi_av_open(f->domain, &av_attr, &f->av, NULL);
		if (ret) {
			pp_error("fi_av_open", ret);
			return ret;
		}
		ret = fi_ep_bind(f->ep, &f->av->fid, 0);
	}
	if (!ret)
		ret = fi_ep_bind(f->ep, &f->tx_cq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(f->ep, &f->rx_cq->fid, FI_RECV);
	if (ret) {
		pp_error("fi_ep_bind", ret);
		return ret;
	}
	if ((ret = fi_enable(f->ep))) {
		pp_error("fi_enable", ret);
		return ret;
	}
	return 0;
}

static int open_fabric_and_eq(struct pp_test *t)
{
	struct pp_fabric *f = &t->fab;
	int ret = fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
	if (ret) {
		pp_error("fi_fabric", ret);
		return ret;
	}
	if (f->info->ep_attr->type != FI_EP_MSG)
		return 0;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	ret = fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL);
	if (ret)
		pp_error("fi_eq_open", ret);
	return ret;
}

/* Waits for one connection-management event, reporting an error event with its cause. */
static int wait_cm_event(struct pp_test *t, uint32_t expected, struct fi_eq_cm_entry *entry)
{
	time_t deadline = time(NULL) + PP_CM_TIMEOUT_SEC;
	uint32_t event;
	for (;;) {
		ssize_t n = fi_eq_read(t->fab.eq, &event, entry, sizeof(*entry), 0);
		if (n == -FI_EAGAIN) {
			if (time(NULL) > deadline) {
				fprintf(stderr, "timed out waiting for a connection event\n");
				return -FI_ETIMEDOUT;
			}
			sched_yield();
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = { 0 };
			fi_eq_readerr(t->fab.eq, &err, 0);
			fprintf(stderr, "connection error: %s (%d)\n", fi_strerror(err.err), err.err);
			return err.err ? -err.err : -FI_EOTHER;
		}
		if (n < 0) {
			pp_error("fi_eq_read", (int)n);
			return (int)n;
		}
		if (event != expected) {
			fprintf(stderr, "unexpected connection event %u (wanted %u)\n", event,
				expected);
			return -FI_EOTHER;
		}
		return 0;
	}
}

static int send_own_name(struct pp_test *t, struct fid *fid, uint32_t format)
{
	char name[256];
	size_t len = sizeof(name);
	int ret = fi_getname(fid, name, &len);
	if (ret) {
		pp_error("fi_getname", ret);
		return ret;
	}
	return pp_ctrl_send_name(t, name, len, format);
}

/* The client aims fi_getinfo at the server's endpoint name. */
static int receive_server_name(struct pp_test *t)
{
	void *name;
	size_t len;
	uint32_t format;
	int ret = pp_ctrl_recv_name(t, &name, &len, &format);
	if (ret)
		return ret;
	t->fab.hints->addr_format = format;
	t->fab.hints->dest_addr = name;
	t->fab.hints->dest_addrlen = len;
	return 0;
}

static int msg_server(struct pp_test *t)
{
	struct pp_fabric *f = &t->fab;
	struct fi_eq_cm_entry entry;
	int ret = get_info(t);
	if (!ret)
		ret = open_fabric_and_eq(t);
	if (ret)
		return ret;
	if ((ret = fi_passive_ep(f->fabric, f->info, &f->pep, NULL)) ||
	    (ret = fi_pep_bind(f->pep, &f->eq->fid, 0)) || (ret = fi_listen(f->pep))) {
		pp_error("passive endpoint", ret);
		return ret;
	}
	ret = send_own_name(t, &f->pep->fid, f->info->addr_format);
	if (!ret)
		ret = wait_cm_event(t, FI_CONNREQ, &entry);
	if (ret)
		return ret;
	/* The connection request's info describes the endpoint we must open. */
	fi_freeinfo(f->info);
	f->info = entry.info;
	ret = open_endpoint(t, f->info);
	if (!ret && (ret = fi_accept(f->ep, NULL, 0)))
		pp_error("fi_accept", ret);
	if (!ret)
		ret = wait_cm_event(t, FI_CONNECTED, &entry);
	return ret;
}

static int msg_client(struct pp_test *t)
{
	struct pp_fabric *f = &t->fab;
	struct fi_eq_cm_entry entry;
	int ret = receive_server_name(t);
	if (!ret)
		ret = get_info(t);
	if (!ret)
		ret = open_fabric_and_eq(t);
	if (!ret)
		ret = open_endpoint(t, f->info);
	if (ret)
		return ret;
	if ((ret = fi_connect(f->ep, f->info->dest_addr, NULL, 0))) {
		pp_error("fi_connect", ret);
		return ret;
	}
	return wait_cm_event(t, FI_CONNECTED, &entry);
}

static int insert_peer(struct pp_test *t, const void *name)
{
	int ret = fi_av_insert(t->fab.av, name, 1, &t->fab.remote_addr, 0, NULL);
	if (ret != 1) {
		pp_error("fi_av_insert", ret < 0 ? ret : -FI_EINVAL);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	return 0;
}

/* Connectionless: the server speaks first, then learns the client's name. */
static int connectionless_setup(struct pp_test *t)
{
	struct pp_fabric *f = &t->fab;
	bool client = t->opts.dst_addr != NULL;
	int ret = client ? receive_server_name(t) : 0;
	if (!ret)
		ret = get_info(t);
	if (!ret)
		ret = open_fabric_and_eq(t);
	if (!ret)
		ret = open_endpoint(t, f->info);
	if (ret)
		return ret;
	if (client) {
		ret = send_own_name(t, &f->ep->fid, f->info->addr_format);
		return ret ? ret : insert_peer(t, f->hints->dest_addr);
	}
	ret = send_own_name(t, &f->ep->fid, f->info->addr_format);
	if (ret)
		return ret;
	void *name;
	size_t len;
	uint32_t format;
	ret = pp_ctrl_recv_name(t, &name, &len, &format);
	if (ret)
		return ret;
	ret = insert_peer(t, name);
	free(name);
	return ret;
}

int pp_fabric_init(struct pp_test *t)
{
	int ret = build_hints(t);
	if (ret)
		return ret;
	if (t->opts.ep_type == FI_EP_MSG)
		ret = t->opts.dst_addr ? msg_client(t) : msg_server(t);
	else
		ret = connectionless_setup(t);
	if (ret)
		return ret;
	return pp_post_recv(t);
}

static void close_fid(struct fid *fid)
{
	int ret = fi_close(fid);
	if (ret)
		pp_error("fi_close", ret);
}

#define PP_CLOSE(obj)                            \
	do {                                     \
		if (obj)                         \
			close_fid(&(obj)->fid);  \
		(obj) = NULL;                    \
	} while (0)

void pp_fabric_fini(struct pp_test *t)
{
	struct pp_fabric *f = &t->fab;
	/* Children before parents: endpoint, then what it was bound to, then the domain. */
	PP_CLOSE(f->ep);
	PP_CLOSE(f->pep);
	PP_CLOSE(f->mr);
	PP_CLOSE(f->av);
	PP_CLOSE(f->tx_cq);
	PP_CLOSE(f->rx_cq);
	PP_CLOSE(f->domain);
	PP_CLOSE(f->eq);
	PP_CLOSE(f->fabric);
	free(f->buf);
	f->buf = NULL;
	fi_freeinfo(f->info);
	f->info = NULL;
	fi_freeinfo(f->hints);
	f->hints = NULL;
}
