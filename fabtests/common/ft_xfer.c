/* Posting data transfers, and the data pattern used to verify them. */
#include "shared.h"

static const size_t all_sizes[] = {
	1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 64, 100, 128, 256, 512, 1000, 1024, 2048, 4096,
	8192, 16384, 65536, 131072, 1048576,
};

size_t ft_next_size(size_t index)
{
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

int ft_post_send(size_t size, uint64_t tag)
{
	void *ctx = &ft.tx_ctx[ft.tx_posted % FT_WINDOW];
	if (tagged())
		FT_RETRY_POST(fi_tsend(ft.ep, ft.tx_buf, size, ft.mr_desc, ft.remote_addr, tag, ctx),
			"fi_tsend");
	else
		FT_RETRY_POST(fi_send(ft.ep, ft.tx_buf, size, ft.mr_desc, ft.remote_addr, ctx),
			"fi_send");
	ft.tx_posted++;
	return 0;
}

int ft_post_recv(size_t size, uint64_t tag)
{
	void *ctx = &ft.rx_ctx[ft.rx_posted % FT_WINDOW];
	if (tagged())
		FT_RETRY_POST(fi_trecv(ft.ep, ft.rx_buf, size, ft.mr_desc, ft.remote_addr, tag, 0, ctx),
			"fi_trecv");
	else
		FT_RETRY_POST(fi_recv(ft.ep, ft.rx_buf, size, ft.mr_desc, ft.remote_addr, ctx),
			"fi_recv");
	ft.rx_posted++;
	return 0;
}

int ft_post_inject(size_t size, uint64_t tag)
{
	if (tagged())
		FT_RETRY_POST(fi_tinject(ft.ep, ft.tx_buf, size, ft.remote_addr, tag), "fi_tinject");
	else
		FT_RETRY_POST(fi_inject(ft.ep, ft.tx_buf, size, ft.remote_addr), "fi_inject");
	return 0;
}

int ft_post_rma(enum ft_rma_op op, size_t size, uint64_t remote_offset)
{
	void *ctx = &ft.tx_ctx[ft.tx_posted % FT_WINDOW];
	uint64_t addr = ft.remote.addr + remote_offset;
	switch (op) {
	case FT_RMA_WRITE:
		FT_RETRY_POST(fi_write(ft.ep, ft.tx_buf, size, ft.mr_desc, ft.remote_addr, addr,
				 ft.remote.key, ctx), "fi_write");
		break;
	case FT_RMA_WRITEDATA:
		FT_RETRY_POST(fi_writedata(ft.ep, ft.tx_buf, size, ft.mr_desc, size, ft.remote_addr,
				     addr, ft.remote.key, ctx), "fi_writedata");
		break;
	case FT_RMA_READ:
		FT_RETRY_POST(fi_read(ft.ep, ft.rx_buf, size, ft.mr_desc, ft.remote_addr, addr,
				ft.remote.key, ctx), "fi_read");
		break;
	}
	ft.tx_posted++;
	return 0;
}

int ft_tx(size_t size)
{
	if (ft.opts.verify)
		ft_fill_buf(ft.tx_buf, size, (unsigned)ft.tx_posted);
	FT_CHECK(ft_post_send(size, 0));
	return ft_get_tx_comp(ft.tx_posted);
}

/* Waits for the oldest posted receive, checks it, and posts the next one. */
int ft_rx(size_t size)
{
	FT_CHECK(ft_get_rx_comp(ft.rx_posted));
	if (ft.opts.verify)
		FT_CHECK(ft_check_buf(ft.rx_buf, size, (unsigned)(ft.rx_posted - 1)));
	return ft_post_recv(ft.xfer_max, 0);
}
