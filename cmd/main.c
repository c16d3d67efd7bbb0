/* nodegate: picks the subcommand (serve, drain, certs, check, plan, status, why) and answers
 * --version, --help and --dump-config-doc; each subcommand lives in its own file. Installed as
 * kubectl-nodegate (a link is enough), it is kubectl's plugin: `kubectl nodegate status`. */
#include "cmd/cmd.h"

#include <curl/curl.h>
#include <malloc.h>
#include <stdbool.h>
#include <string.h>

/* Whether the CLI talks to a cluster through libcurl. */
static bool uses_curl(const char *cmd)
{
	return strcmp(cmd, "plan") == 0 || strcmp(cmd, "status") == 0 || strcmp(cmd, "why") == 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		cmd_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		(void)printf("nodegate %s\n", NG_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		if (argc == 2) {
			cmd_usage(stdout);
			return 0;
		}
		if (!cmd_known(argv[2])) {
			(void)fprintf(stderr, "nodegate: unknown command \"%s\"\n\n", argv[2]);
			cmd_usage(stderr);
			return 2;
		}
		/* nodegate help certs is nodegate certs --help. */
		static char help[] = "--help";
		argv[1] = argv[2];
		argv[2] = help;
		argc = 3;
	}
	if (strcmp(argv[1], "--dump-config-doc") == 0) {
		cmd_dump_config_doc();
		return 0;
	}
	if (!cmd_known(argv[1])) {
		(void)fprintf(stderr, "nodegate: unknown command \"%s\" (see nodegate --help)\n",
			      argv[1]);
		return 2;
	}
	bool serve = strcmp(argv[1], "serve") == 0;
	if (serve || strcmp(argv[1], "drain") == 0) {
		/* Before any thread starts (STYLE.md B9 rule 5).
		 *
		 * Request bodies (up to 3 MiB), API answers and the arenas decoded from them are
		 * allocated and freed all the time, by serve and drain alike. After the first free
		 * of a block above its mmap threshold, glibc raises the threshold to that size and
		 * keeps later such blocks on the heap, so resident memory would ratchet up; a fixed
		 * threshold returns every big block to the kernel when it is freed. */
		/* NOLINTNEXTLINE(concurrency-mt-unsafe): no thread runs yet */
		(void)mallopt(M_MMAP_THRESHOLD, 256 * 1024);
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			(void)fprintf(stderr, "nodegate: curl_global_init failed\n");
			return 1;
		}
		int rc = serve ? cmd_serve(argc - 2, argv + 2) : cmd_drain(argc - 2, argv + 2);
		curl_global_cleanup();
		return rc;
	}
	if (strcmp(argv[1], "check") == 0)
		return cmd_check(argc - 2, argv + 2);
	if (uses_curl(argv[1])) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			(void)fprintf(stderr, "nodegate: curl_global_init failed\n");
			return 1;
		}
		int rc = strcmp(argv[1], "plan") == 0     ? cmd_plan(argc - 2, argv + 2)
			 : strcmp(argv[1], "status") == 0 ? cmd_status(argc - 2, argv + 2)
							  : cmd_why(argc - 2, argv + 2);
		curl_global_cleanup();
		return rc;
	}
	if (strcmp(argv[1], "certs") == 0)
		return cmd_certs(argc - 2, argv + 2);
	(void)fprintf(stderr, "nodegate: unknown command \"%s\" (see nodegate --help)\n", argv[1]);
	return 2;
}
