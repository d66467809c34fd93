/* fi_strerror: prints the text libfabric has for an error code given on the command line. */
#include <rdma/fi_errno.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_usage(const char *program)
{
	printf("Usage: %s FI_ERROR_CODE\n", program);
	printf("\n"
	       "Displays the error string for the given numeric FI_ERROR_CODE.\n"
	       "FI_ERROR_CODE may be a hexadecimal, octal, or decimal constant.\n"
	       "For convenience, the absolute value of FI_ERROR_CODE will be used.\n");
}

/* Accepts what strtol accepts in base 0, as long as nothing follows the number. */
static int parse_code(const char *text, int *code)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(text, &end, 0);
	if (end == text || *end != '\0') {
		printf("ERROR: unable to parse '%s'\n\n", text);
		return -1;
	}
	if (errno == ERANGE || value < INT_MIN || value > INT_MAX) {
		printf("ERROR: '%s' is out of range\n\n", text);
		return -1;
	}
	*code = (int) value;
	return 0;
}

int main(int argc, char **argv)
{
	int code;

	if (argc != 2) {
		print_usage(argv[0]);
		return EXIT_FAILURE;
	}
	if (!strcmp(argv[1], "-h")) {
		print_usage(argv[0]);
		return EXIT_SUCCESS;
	}
	if (parse_code(argv[1], &code)) {
		print_usage(argv[0]);
		return EXIT_FAILURE;
	}
	/* fi_strerror takes either sign. */
	printf("%s\n", fi_strerror(code));
	return EXIT_SUCCESS;
}
