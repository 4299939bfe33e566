/*
 * replay.c - runs a fuzz target over its corpus without libFuzzer, so every
 * build replays every seed in ctest (tests/fuzz/corpus/<target>/, linked with
 * the sanitized library): a seed that crashes, trips a sanitizer or breaks a
 * target's promise (fail() aborts) fails the test. `make fuzz` still builds
 * the real fuzzers with clang to find new inputs.
 *
 *   replay_<target> DIR   every regular file in DIR, in name order
 *
 * Exits 0 when every file was run, 1 when DIR cannot be read or holds no
 * file (a corpus that went missing must not pass as replayed), and aborts
 * on a target's failure.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			uint8_t *grown = realloc(buf, cap);
			if (!grown)
				break;
			buf = grown;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	/* an exact-size copy, so a read past the input is caught */
	uint8_t *exact = malloc(len ? len : 1);
	if (exact && len)
		memcpy(exact, buf, len);
	free(buf);
	if (!exact)
		return -1;
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	struct dirent **names = NULL;
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
		return 2;
	}
	int n = scandir(argv[1], &names, NULL, by_name), ran = 0;
	if (n < 0) {
		perror(argv[1]);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", argv[1], names[i]->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(path) != 0) {
				fprintf(stderr, "%s: cannot read\n", path);
				return 1;
			}
			ran++;
		}
		free(names[i]);
	}
	free(names);
	printf("%s: %d inputs replayed\n", argv[1], ran);
	return ran > 0 ? 0 : 1;
}
