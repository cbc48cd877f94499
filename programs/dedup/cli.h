/*
 * cli.h - admit-dedup's command line, input and output: the options
 * (opts.c), the reader that cuts the input files into batches of whole
 * lines and the buffered writer of standard output (io.c).  main.c runs
 * the batches.
 */
#ifndef ADMIT_DEDUP_CLI_H
#define ADMIT_DEDUP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROG "admit-dedup"
#define EXIT_INPUT 1  /* an input could not be read; the rest was done */
#define EXIT_USAGE 2  /* bad option or unusable --load file */
#define EXIT_FULL 3   /* filter full with --on-full=fail, or out of memory */
#define EXIT_OUTPUT 4 /* stdout or --save could not be written */
#define MAX_JOBS 64u   /* -j at most */

struct opts {
	unsigned jobs;
	unsigned long field; /* 0 = whole line */
	int delim;           /* -1 = runs of blanks, as awk */
	bool strip_cr, stats, fail_full;
	uint64_t capacity, horizon, seed;
	bool capacity_set;
	double fpr;
	const char *save, *load;
};

/* Fills *o from the command line (getopt: optind is the first FILE);
 * --help, and any bad option with a message, exit. */
void parse_opts(int argc, char **argv, struct opts *o);

/* Prints msg and a pointer to --help; exits with EXIT_USAGE. */
void die_usage(const char *msg);

/* One line of a batch: where it is (from the batch's start) and what the
 * phases made of it. */
struct line {
	size_t off, len;
	uint64_t h;
	uint32_t zone;  /* RES_ZONE: slot in the zone */
	uint8_t shard;
	uint8_t res;
	uint8_t gen;
};

/* The input files, read in order into one growing buffer. */
struct reader {
	char **files;
	int nfiles, next;
	int fd;
	const char *name;
	bool done;
	char *buf;
	size_t cap, used, scan;
	size_t head;  /* bytes before it belong to batches already done */
	int status;
};

/*
 * next_batch - the next batch: up to max whole lines, fewer only when the
 * buffer is full or the input ends (0: the end).  The cut depends on the
 * bytes alone, not on how read() happened to split them.  *cut is where
 * the batch's last line ends.  An input that cannot be opened or read is
 * reported and sets rd->status; a line longer than memory allows exits.
 */
size_t next_batch(struct reader *rd, struct line *lines, size_t max,
                  size_t *cut);

/* The batch's lines (offsets from rd->buf + rd->head) are done. */
void consume(struct reader *rd, size_t cut);

/* Standard output, buffered: out_put appends n bytes at p, out_flush
 * writes what is held.  A write error is reported and exits with
 * EXIT_OUTPUT. */
void out_put(const char *p, size_t n);
void out_flush(void);

#endif
