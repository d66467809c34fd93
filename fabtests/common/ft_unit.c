/*
 * Unit test harness. Each case runs in its own child process with a freshly opened
 * fabric and domain, so a case that crashes or hangs the provider is reported as that
 * case's failure instead of taking the remaining cases down with it.
 */
#include "ft_unit.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Child exit codes that carry a case's verdict to the parent. */
#define CASE_PASS 0
#define CASE_NOTRUN 3
#define CASE_FAIL 4
#define CASE_SETUP_NODATA 5

int ft_unit_open_endpoint(struct fid_ep **ep)
{
	int ret = fi_endpoint(ft.domain, ft.info, ep, NULL);
	if (ret)
		FT_PRINTERR("fi_endpoint", ret);
	return ret;
}

int ft_unit_open_bound_endpoint(struct fid_ep **ep)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	int ret = 0;
	if (!ft.tx_cq && (ret = fi_cq_open(ft.domain, &cq_attr, &ft.tx_cq, NULL)))
		return ret;
	if (ft.info->ep_attr->type != FI_EP_MSG && !ft.av) {
		struct fi_av_attr av_attr = { .type = ft.info->domain_attr->av_type };
		if ((ret = fi_av_open(ft.domain, &av_attr, &ft.av, NULL)))
			return ret;
	}
	FT_CHECK(ft_unit_open_endpoint(ep));
	ret = fi_ep_bind(*ep, &ft.tx_cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret && ft.av)
		ret = fi_ep_bind(*ep, &ft.av->fid, 0);
	if (!ret && ft.info->ep_attr->type == FI_EP_MSG)
		ret = fi_ep_bind(*ep, &ft.eq->fid, 0);
	if (ret) {
		FT_PRINTERR("fi_ep_bind", ret);
		fi_close(&(*ep)->fid);
	}
	return ret;
}

static int open_fabric_and_domain(void)
{
	int ret = ft_getinfo();
	if (!ret)
		ret = ft_open_fabric();
	if (!ret && (ret = fi_domain(ft.fabric, ft.info, &ft.domain, NULL)))
		FT_PRINTERR("fi_domain", ret);
	return ret;
}

static int run_case_in_child(const struct ft_unit_case *c)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return CASE_FAIL;
	if (pid == 0) {
		alarm((unsigned)ft.opts.timeout_sec);
		int ret = open_fabric_and_domain();
		if (ret) {
			ft_close_all();
			_exit(ret == -FI_ENODATA ? CASE_SETUP_NODATA : CASE_FAIL);
		}
		ret = c->run();
		ft_close_all();
		fflush(stdout);
		_exit(ret == 0 ? CASE_PASS :
		      (ret == -FI_ENODATA || ret == -FI_ENOSYS) ? CASE_NOTRUN : CASE_FAIL);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0)
		return CASE_FAIL;
	if (WIFSIGNALED(status)) {
		FT_ERR("case %s killed by signal %d (%s)", c->name, WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? "timeout" : strsignal(WTERMSIG(status)));
		return CASE_FAIL;
	}
	return WEXITSTATUS(status);
}

/* -x a,b: cases to skip, e.g. ones that crash a library known to be buggy there. */
static const char *skip_list = "";

static int skip_option(int opt, const char *arg)
{
	(void)opt;
	skip_list = arg;
	return 0;
}

static bool skipped(const char *name)
{
	size_t len = strlen(name);
	for (const char *p = skip_list; *p; p += strcspn(p, ","), p += *p == ',')
		if (strcspn(p, ",") == len && strncmp(p, name, len) == 0)
			return true;
	return false;
}

int ft_unit_main(int argc, char **argv, const char *description, const struct ft_unit_case *cases,
		 size_t count, uint64_t caps)
{
	int ret = ft_parse_args(argc, argv, "x:", skip_option, description);
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = caps;

	int passed = 0, failed = 0, notrun = 0;
	for (size_t i = 0; i < count; i++) {
		if (skipped(cases[i].name)) {
			printf("%-40s %s\n", cases[i].name, "SKIPPED");
			notrun++;
			continue;
		}
		int verdict = run_case_in_child(&cases[i]);
		if (verdict == CASE_SETUP_NODATA) {
			printf("not run: the provider offers nothing that matches the hints\n");
			return FT_EXIT_NODATA;
		}
		printf("%-40s %s\n", cases[i].name, verdict == CASE_PASS ? "PASS" :
		       verdict == CASE_NOTRUN ? "NOTRUN" : "FAIL");
		if (verdict == CASE_PASS)
			passed++;
		else if (verdict == CASE_NOTRUN)
			notrun++;
		else
			failed++;
	}
	fi_freeinfo(ft.hints);
	ft.hints = NULL;
	printf("%d passed, %d failed, %d not run\n", passed, failed, notrun);
	if (failed)
		return FT_EXIT_FAIL;
	return passed ? FT_EXIT_PASS : FT_EXIT_NOSYS;
}
