/*
 * logtail.c - the last lines a pod wrote, for the message of its failure.
 *
 * A failed job should say why where its user looks (the condition, `get`,
 * the SDK's exception, the dashboard), and the why is usually the end of the
 * failing process's output: a traceback's last lines. The kubelet does the
 * same for a container whose terminationMessagePolicy is
 * FallbackToLogsOnError (the last 80 lines or 2,048 bytes of its log become
 * the terminated state's message); we take at most the last 2,048 bytes of
 * the attempt that failed (after the log's last attempt mark) and of those
 * the last few lines, made fit for a JSON string and a terminal: invalid
 * UTF-8 becomes U+FFFD, a carriage return ends a line (progress bars), other
 * control characters become '?'.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local/local_internal.h"
#include "util/utf8.h"

#define TAIL_BYTES 2048

/* Reads the last TAIL_BYTES of path into buf; the count, 0 on any error.
 * *whole is set when that is the file from its start. */
static size_t read_end(const char *path, char *buf, bool *whole)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0)
		return 0;
	off_t from = fstat(fd, &st) == 0 && st.st_size > TAIL_BYTES ? st.st_size - TAIL_BYTES : 0;
	ssize_t n = pread(fd, buf, TAIL_BYTES, from);
	close(fd);
	*whole = from == 0;
	return n > 0 ? (size_t)n : 0;
}

/* The start of the current attempt's output in buf[0..n): after the last
 * line that is an attempt mark, else where the first whole line starts. */
static size_t attempt_start(const char *buf, size_t n, bool whole)
{
	static const char mark[] = KFT_LOCAL_ATTEMPT_MARK " ";
	size_t start = 0;
	if (!whole) { /* the first line is cut: skip it */
		const char *nl = memchr(buf, '\n', n);
		start = nl ? (size_t)(nl - buf) + 1 : n;
	}
	for (size_t i = start; i + sizeof(mark) - 1 <= n; i++)
		if ((i == 0 || buf[i - 1] == '\n') &&
		    memcmp(buf + i, mark, sizeof(mark) - 1) == 0) {
			const char *nl = memchr(buf + i, '\n', n - i);
			start = nl ? (size_t)(nl - buf) + 1 : n;
		}
	return start;
}

/* Appends one byte sequence, cleaned (see the top), to out at *len. */
static void put_clean(const unsigned char *s, size_t n, char *out, size_t size, size_t *len)
{
	for (size_t i = 0; i < n && *len + 4 < size;) {
		size_t k = s[i] >= 0x80 ? kft_utf8_sequence(s + i, n - i) : 1;
		if (k == 0) {
			memcpy(out + *len, "\xef\xbf\xbd", 3);
			*len += 3;
			i++;
			continue;
		}
		if (k == 1 && s[i] < 0x20 && s[i] != '\t' && s[i] != '\n')
			out[(*len)++] = s[i] == '\r' ? '\n' : '?';
		else {
			memcpy(out + *len, s + i, k);
			*len += k;
		}
		i += k;
	}
	out[*len] = '\0';
}

size_t kft_local_log_tail(const char *path, size_t max_lines, char *out, size_t size)
{
	char buf[TAIL_BYTES], clean[3 * TAIL_BYTES + 1];
	bool whole = false;
	size_t n = read_end(path, buf, &whole), len = 0;
	size_t start = attempt_start(buf, n, whole);
	put_clean((const unsigned char *)buf + start, n - start, clean, sizeof(clean), &len);
	/* the last max_lines non-blank lines, each indented (a line holds at
	 * least one byte of buf, so TAIL_BYTES of them is room enough) */
	const char *lines[TAIL_BYTES];
	size_t count = 0;
	for (char *save = NULL, *l = strtok_r(clean, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save))
		if (strspn(l, " \t") != strlen(l) && count < TAIL_BYTES)
			lines[count++] = l;
	/* from the end, as many whole lines as fit: the last ones matter */
	size_t first = count, need = 1;
	while (first > 0 && count - first < max_lines) {
		size_t line = strlen(lines[first - 1]) + 2 + (first < count);
		if (need + line > size)
			break;
		need += line;
		first--;
	}
	size_t used = 0;
	if (size)
		out[0] = '\0';
	for (size_t i = first; i < count; i++)
		used += (size_t)snprintf(out + used, size - used, "%s  %s", i > first ? "\n" : "",
		                         lines[i]);
	return count - first;
}
