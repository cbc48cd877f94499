/*
 * opts.c - admit-dedup's options and --help (cli.h).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <admit/cuckoo.h>

#include "cli.h"

void
die_usage(const char *msg)
{
	fprintf(stderr, PROG ": %s\nTry '" PROG " --help'.\n", msg);
	exit(EXIT_USAGE);
}

static void
usage(void)
{
	printf(
"Usage: " PROG " [OPTION]... [FILE]...\n"
"Write each line of the FILEs (standard input if none, or '-') whose key was\n"
"not seen before, in input order.  The key is the line's exact bytes without\n"
"its '\\n' (or one field of it); memory stays bounded by a cuckoo filter, so a\n"
"key is wrongly taken for a duplicate with a small, stated probability.\n"
"\n"
"  -f, --field N        key is field N (1-based) instead of the whole line\n"
"  -d, --delimiter C    fields are separated by the single byte C (also \\t, \\0);\n"
"                       default: runs of blanks, as awk\n"
"      --strip-cr       a '\\r' before the '\\n' is not part of the key\n"
"  -j, --jobs N         worker threads (default: online CPUs); the output does\n"
"                       not depend on N\n"
"      --capacity N     distinct keys expected (default 1000000, or the horizon)\n"
"      --fpr E          false-drop probability per new key for each filter\n"
"                       (default: 16-bit fingerprints, about 1.2e-4)\n"
"      --horizon N      forget a key once N other distinct keys were written\n"
"                       after it (--window N is the same)\n"
"      --on-full=MODE   grow (default): chain a filter twice as large when full;\n"
"                       fail: stop with exit status 3\n"
"      --save FILE      save the seen-set to FILE at the end\n"
"      --load FILE      start from a seen-set saved with --save\n"
"      --seed N         hash seed (default random); equal seeds give equal output\n"
"      --stats          print counts, load, memory and throughput to stderr\n"
"  -h, --help           this help\n"
"\n"
"N accepts a k, M or G suffix (10^3, 10^6, 10^9).  Exit status: 0 ok, 1 an\n"
"input could not be read, 2 usage or --load error, 3 filter full or out of\n"
"memory, 4 output or --save error.  See admit-dedup(1).\n");
}

static uint64_t
parse_num(const char *s, const char *what)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	if (*s == '-' || *s == '\0')
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		goto bad;
	if (*end == 'k' || *end == 'K')
		mul = 1000, end++;
	else if (*end == 'M')
		mul = 1000000, end++;
	else if (*end == 'G')
		mul = 1000000000, end++;
	if (*end != '\0' || v > UINT64_MAX / mul)
		goto bad;
	return v * mul;
bad:
	fprintf(stderr, PROG ": invalid %s: '%s'\n", what, s);
	exit(EXIT_USAGE);
}

static int
parse_delim(const char *s)
{
	if (s[0] != '\0' && s[1] == '\0')
		return (unsigned char)s[0];
	if (strcmp(s, "\\t") == 0)
		return '\t';
	if (strcmp(s, "\\0") == 0)
		return '\0';
	if (strcmp(s, "\\\\") == 0)
		return '\\';
	die_usage("the delimiter must be one byte (or \\t, \\0, \\\\)");
	return -1;
}

void
parse_opts(int argc, char **argv, struct opts *o)
{
	enum { O_STRIP = 256, O_CAP, O_FPR, O_HORIZON, O_STATS, O_FULL, O_SAVE,
	       O_LOAD, O_SEED };
	static const struct option lo[] = {
		{ "field", required_argument, NULL, 'f' },
		{ "delimiter", required_argument, NULL, 'd' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "strip-cr", no_argument, NULL, O_STRIP },
		{ "capacity", required_argument, NULL, O_CAP },
		{ "fpr", required_argument, NULL, O_FPR },
		{ "horizon", required_argument, NULL, O_HORIZON },
		/* Its 0.1 name, kept: "window" also names TinyLFU's sample
		 * and the cache's first segment. */
		{ "window", required_argument, NULL, O_HORIZON },
		{ "stats", no_argument, NULL, O_STATS },
		{ "on-full", required_argument, NULL, O_FULL },
		{ "save", required_argument, NULL, O_SAVE },
		{ "load", required_argument, NULL, O_LOAD },
		{ "seed", required_argument, NULL, O_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	bool fpr_set = false, seed_set = false;
	uint64_t v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->jobs = ncpu < 1 ? 1 : ncpu > (long)MAX_JOBS ? MAX_JOBS : (unsigned)ncpu;
	o->delim = -1;
	o->capacity = 1000000;
	while ((c = getopt_long(argc, argv, "f:d:j:h", lo, NULL)) != -1) {
		switch (c) {
		case 'f':
			v = parse_num(optarg, "field number");
			if (v == 0 || v > ULONG_MAX)
				die_usage("fields are numbered from 1");
			o->field = (unsigned long)v;
			break;
		case 'd': o->delim = parse_delim(optarg); break;
		case 'j':
			v = parse_num(optarg, "job count");
			if (v == 0 || v > MAX_JOBS)
				die_usage("-j takes 1 to 64");
			o->jobs = (unsigned)v;
			break;
		case O_STRIP: o->strip_cr = true; break;
		case O_CAP:
			o->capacity = parse_num(optarg, "capacity");
			if (o->capacity == 0 ||
			    o->capacity > ADMIT_CUCKOO_MAX_CAPACITY / 2)
				die_usage("--capacity takes 1 to about 8G");
			o->capacity_set = true;
			break;
		case O_FPR:
			errno = 0;
			o->fpr = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->fpr > 0 && o->fpr < 1))
				die_usage("--fpr takes a probability between 0 and 1, e.g. 1e-4");
			fpr_set = true;
			break;
		case O_HORIZON:
			o->horizon = parse_num(optarg, "horizon");
			if (o->horizon == 0 || o->horizon > ((uint64_t)1 << 40))
				die_usage("--horizon takes 1 to 2^40");
			break;
		case O_STATS: o->stats = true; break;
		case O_FULL:
			if (strcmp(optarg, "fail") == 0)
				o->fail_full = true;
			else if (strcmp(optarg, "grow") == 0)
				o->fail_full = false;
			else
				die_usage("--on-full takes 'grow' or 'fail'");
			break;
		case O_SAVE: o->save = optarg; break;
		case O_LOAD: o->load = optarg; break;
		case O_SEED:
			o->seed = parse_num(optarg, "seed");
			seed_set = true;
			break;
		case 'h': usage(); exit(0);
		default:
			fprintf(stderr, "Try '" PROG " --help'.\n");
			exit(EXIT_USAGE);
		}
	}
	if (o->load && (o->capacity_set || fpr_set || seed_set))
		die_usage("--capacity, --fpr and --seed come from the --load file");
	if (seed_set && o->seed == 0)
		die_usage("--seed must not be 0");
}
