/* Posting data transfers, and the data pattern used to verify them. */
#include "shared.h"

static const size_t all_sizes[] = {
	1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 64, 100, 128, 256, 512, 1000, 1024, 2048, 4096,
	8192, 16384, 65536, 131072, 1048576,
};

size_t ft_next_size(size_t index)
{
	if (ft.opts.size_count)
		return index < (size_t)ft.opts.size_count ? ft.opts.size_list[index] : 0;
	if (!ft.opts.all_sizes)
		return index == 0 ? ft.opts.size : 0;
	for (size_t seen = 0, i = 0; i < sizeof(all_sizes) / sizeof(all_sizes[0]); i++) {
		if (all_sizes[i] > ft.xfer_max)
			return 0;
		if (seen++ == index)
			return all_sizes[i];
	}
	return 0;
}

void ft_fill_buf(void *buf, size_t size, unsigned seed)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < size; i++)
		p[i] = (unsigned char)('a' + (seed + i) % 26);
}

bool ft_buf_matches(const void *buf, size_t size, unsigned seed)
{
	const unsigned char *p = buf;
	for (size_t i = 0; i < size; i++)
		if (p[i] != (unsigned char)('a' + (seed + i) % 26))
			return false;
	return true;
}

int ft_check_buf(const void *buf, size_t size, unsigned seed)
{
	const unsigned char *p = buf;
	for (size_t i = 0; i < size; i++) {
		unsigned char want = (unsigned char)('a' + (seed + i) % 26);
		if (p[i] != want) {
			FT_ERR("data mismatch at byte %zu of %zu: got 0x%02x, expected 0x%02x", i,
			       size, p[i], want);
			return -FI_EIO;
		}
	}
	return 0;
}

static bool tagged(void)
{
	return ft.hints->caps & FI_TAGGED;
}

char *ft_tx_slot(uint64_t n)
{
	return ft.tx_buf + (size_t)(n % ft.slots) * ft.xfer_max;
}

char *ft_rx_slot(uint64_t n)
{
	return ft.rx_buf + (size_t)(n % ft.slots) * ft.xfer_max;
}

int ft_window(void)
{
	if (!ft.opts.verify || ft.slots >= FT_WINDOW)
		return FT_WINDOW;
	return (int)ft.slots;
}

/* With -v, message n carries pattern n (ft_rx checks receive n against it). */
static char *fill_next_send(size_t size)
{
	char *buf = ft_tx_slot(ft.tx_posted);
	if (ft.opts.verify)
		ft_fill_buf(buf, size, (unsigned)ft.tx_seq);
	return buf;
}

int ft_post_send(size_t size, uint64_t tag)
{
	void *ctx = &ft.tx_ctx[ft.tx_posted % FT_WINDOW];
	char *buf = fill_next_send(size);
	if (tagged())
		FT_RETRY_POST(fi_tsend(ft.ep, buf, size, ft.mr_desc, ft.remote_addr, tag, ctx),
			"fi_tsend");
	else
		FT_RETRY_POST(fi_send(ft.ep, buf, size, ft.mr_desc, ft.remote_addr, ctx),
			"fi_send");
	ft.tx_posted++;
	ft.tx_seq++;
	return 0;
}

int ft_post_recv(size_t size, uint64_t tag)
{
	void *ctx = &ft.rx_ctx[ft.rx_posted % FT_WINDOW];
	char *buf = ft_rx_slot(ft.rx_posted);
	if (tagged())
		FT_RETRY_POST(fi_trecv(ft.ep, buf, size, ft.mr_desc, ft.remote_addr, tag, 0, ctx),
			"fi_trecv");
	else
		FT_RETRY_POST(fi_recv(ft.ep, buf, size, ft.mr_desc, ft.remote_addr, ctx),
			"fi_recv");
	ft.rx_posted++;
	return 0;
}

/* Injects never complete, so they do not count in tx_posted; they still count in tx_seq. */
int ft_post_inject(size_t size, uint64_t tag)
{
	char *buf = fill_next_send(size);
	if (tagged())
		FT_RETRY_POST(fi_tinject(ft.ep, buf, size, ft.remote_addr, tag), "fi_tinject");
	else
		FT_RETRY_POST(fi_inject(ft.ep, buf, size, ft.remote_addr), "fi_inject");
	ft.tx_seq++;
	return 0;
}

int ft_post_rma(enum ft_rma_op op, size_t size, uint64_t remote_offset)
{
	void *ctx = &ft.tx_ctx[ft.tx_posted % FT_WINDOW];
	uint64_t addr = ft.remote.addr + remote_offset;
	char *src = ft_tx_slot(ft.tx_posted);
	switch (op) {
	case FT_RMA_WRITE:
		FT_RETRY_POST(fi_write(ft.ep, src, size, ft.mr_desc, ft.remote_addr, addr,
				 ft.remote.key, ctx), "fi_write");
		break;
	case FT_RMA_WRITEDATA:
		FT_RETRY_POST(fi_writedata(ft.ep, src, size, ft.mr_desc, size, ft.remote_addr,
				     addr, ft.remote.key, ctx), "fi_writedata");
		break;
	case FT_RMA_READ:
		FT_RETRY_POST(fi_read(ft.ep, ft_rx_slot(ft.tx_posted), size, ft.mr_desc,
				ft.remote_addr, addr, ft.remote.key, ctx), "fi_read");
		break;
	}
	ft.tx_posted++;
	return 0;
}

int ft_tx(size_t size)
{
	FT_CHECK(ft_post_send(size, 0));
	return ft_get_tx_comp(ft.tx_posted);
}

/* Waits for the oldest posted receive, checks it, and posts the next one. */
int ft_rx(size_t size)
{
	FT_CHECK(ft_get_rx_comp(ft.rx_posted));
	if (ft.opts.verify)
		FT_CHECK(ft_check_buf(ft_rx_slot(ft.rx_posted - 1), size,
				      (unsigned)(ft.rx_posted - 1)));
	return ft_post_recv(ft.xfer_max, 0);
}
