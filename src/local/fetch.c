/*
 * fetch.c - copy or download a storageUri's bytes into a directory.
 *
 * Downloads never write the final name directly: bytes go to "NAME.part",
 * which is renamed to NAME only after the transfer finished, stayed within
 * the size bound and (when a digest is known) hashed to the expected SHA-256.
 * A part file left by an interrupted run is resumed: we ask for
 * "Range: bytes=SIZE-" and look at the reply status before the first body
 * byte is written. 206 means the server honoured the range, so we append;
 * 200 means it sent the whole object, so we truncate and start over.
 *
 * libcurl does the HTTP work. We pin it to http/https (also for redirects),
 * require TLS 1.2+, and bound redirects, connect time and stalls, because
 * every URL and every reply comes from outside.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "local/fetch.h"
#include "local/s3.h"
#include "local/s3list.h"
#include "util/curl_tls.h"
#include "util/digest.h"
#include "util/strbuf.h"

#define PATH_MAX_LEN   4096
#define COPY_MAX_DEPTH 32

/* State shared by the libcurl callbacks of one transfer. */
typedef struct transfer {
	CURL *curl;
	const char *url;
	const char *name;
	int fd;
	uint64_t offset;  /* bytes already in the part file when we asked */
	uint64_t written; /* bytes in the part file now */
	uint64_t max;
	long status;
	int started; /* body writing has begun and the status was checked */
	int over_limit;
	int io_error;
	const kft_fetch_options *opt;
} transfer;

static uint64_t max_bytes(const kft_fetch_options *opt)
{
	return (opt && opt->max_bytes) ? opt->max_bytes : KFT_FETCH_DEFAULT_MAX_BYTES;
}

/* Decides, once per transfer, whether the reply continues the part file or
 * replaces it. Error replies are not written at all. */
static int start_body(transfer *t)
{
	t->started = 1;
	curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
	if (t->status == 206 && t->offset > 0)
		return 0;
	if (t->status != 200)
		return 0;
	if (ftruncate(t->fd, 0) != 0 || lseek(t->fd, 0, SEEK_SET) != 0)
		return -1;
	t->offset = t->written = 0;
	return 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
	transfer *t = user;
	size_t len = size * n;
	if (!t->started && start_body(t) != 0) {
		t->io_error = 1;
		return 0;
	}
	if (t->status != 200 && t->status != 206)
		return len; /* discard error bodies; the status tells the story */
	if (t->written + len > t->max) {
		t->over_limit = 1;
		return 0;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = write(t->fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			t->io_error = 1;
			return 0;
		}
		off += (size_t)w;
	}
	t->written += len;
	return len;
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	transfer *t = user;
	(void)ultotal;
	(void)ulnow;
	/* Only a 206 continues the part file. Before the reply's status is
	 * known dltotal is 0, so nothing is counted against the bound early. */
	long status = t->status;
	if (!t->started)
		curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
	uint64_t base = status == 206 ? t->offset : 0;
	/* A declared length already past the bound fails before any download. */
	if (dltotal > 0 && base + (uint64_t)dltotal > t->max) {
		t->over_limit = 1;
		return 1;
	}
	/* Only the bytes of the file itself are progress: not a redirect's or an
	 * error reply's body (S3 answers 403 with an XML document). The last
	 * byte is not reported here either: kft_fetch_url says the file is
	 * complete once it is verified and in place. */
	if (!t->opt || !t->opt->progress || (status != 200 && status != 206))
		return 0;
	uint64_t total = dltotal > 0 ? base + (uint64_t)dltotal : 0;
	uint64_t done = base + (uint64_t)dlnow;
	if (total && done >= total)
		return 0;
	return t->opt->progress(t->opt->progress_user, t->name, done, total);
}

/* Whether a header line carries credentials for the original host (or,
 * like Host, names it): what must not follow a redirect elsewhere. */
static int host_bound_header(const char *line)
{
	return !strncasecmp(line, "Authorization:", 14) || !strncasecmp(line, "Host:", 5) ||
	       !strncasecmp(line, "Cookie:", 7) || !strncasecmp(line, "x-amz-", 6);
}

static struct curl_slist *build_headers(transfer *t, const char *const *extra, int other_host)
{
	struct curl_slist *list = NULL, *next;
	char range[64];
	if (t->offset > 0) {
		snprintf(range, sizeof(range), "Range: bytes=%llu-", (unsigned long long)t->offset);
		if (!(next = curl_slist_append(list, range)))
			goto fail;
		list = next;
	}
	for (size_t i = 0; extra && extra[i]; i++) {
		if (other_host && host_bound_header(extra[i]))
			continue;
		if (!(next = curl_slist_append(list, extra[i])))
			goto fail;
		list = next;
	}
	return list ? list : curl_slist_append(NULL, "Accept: */*");
fail:
	curl_slist_free_all(list);
	return NULL;
}

/* "scheme://host:port" of an absolute URL, lower-cased, the port explicit;
 * 0 on success. */
static int url_origin(const char *url, char *out, size_t size)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	int rc = -1;
	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
	    (size_t)snprintf(out, size, "%s://%s:%s", scheme, host, port) < size) {
		for (char *p = out; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		rc = 0;
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* The policy every request shares, whatever it does with the body. The CA
 * certificates come from the options or, as curl's tool reads them, from
 * CURL_CA_BUNDLE, SSL_CERT_FILE and SSL_CERT_DIR, so an initializer can
 * reach a server whose certificate a private CA signed. */
static void setup_common(CURL *c, const char *url, struct curl_slist *hdrs,
                         const kft_fetch_options *o)
{
	curl_easy_setopt(c, CURLOPT_URL, url);
	/* libcurl keeps custom headers (x-amz-*) across a redirect to another
	 * host; downloads (run_transfer) therefore follow redirects themselves. */
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT,
	                 (o && o->connect_timeout_s) ? o->connect_timeout_s : 30L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME,
	                 (o && o->low_speed_timeout_s) ? o->low_speed_timeout_s : 120L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "kftrainer-initializer");
	const char *ca_file = o && o->ca_file ? o->ca_file : env_nonempty("CURL_CA_BUNDLE");
	const char *ca_dir = o && o->ca_dir ? o->ca_dir : env_nonempty("SSL_CERT_DIR");
	if (!ca_file)
		ca_file = env_nonempty("SSL_CERT_FILE");
	if (ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
	if (ca_dir)
		curl_easy_setopt(c, CURLOPT_CAPATH, ca_dir);
	kft_curl_tls_setup(c);
}

static void setup_curl(transfer *t, const char *url, struct curl_slist *hdrs)
{
	CURL *c = t->curl;
	setup_common(c, url, hdrs, t->opt);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, t);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
}

/* Turns the outcome of curl_easy_perform into our status and message. */
/* A transfer curl could not complete, in curl's words (errbuf, else its
 * code's): KFT_EIO. */
static int curl_failure(const char *url, CURLcode cc, const char *errbuf, kft_error *err)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
	/* mbedTLS's words alone ("Cert verify failed: BADCERT_NOT_TRUSTED") do
	 * not say what was refused, nor what to do about a private CA */
	if (cc == CURLE_PEER_FAILED_VERIFICATION)
		return kft_error_set(err, KFT_EIO,
		                     "fetch %s: failed to verify the server's certificate: %s (a "
		                     "private CA is named by CURL_CA_BUNDLE or SSL_CERT_FILE)",
		                     url, why);
	return kft_error_set(err, KFT_EIO, "fetch %s: %s", url, why);
}

static int transfer_result(transfer *t, CURLcode cc, const char *errbuf, kft_error *err)
{
	if (t->over_limit)
		return kft_error_set(err, KFT_ELIMIT, "fetch %s: larger than the %llu-byte limit",
		                     t->url, (unsigned long long)t->max);
	if (t->io_error)
		return kft_error_set(err, KFT_EIO, "fetch %s: writing %s.part: %s", t->url, t->name,
		                     strerror(errno));
	if (cc != CURLE_OK)
		return curl_failure(t->url, cc, errbuf, err);
	curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
	if (t->status == 404)
		return kft_error_set(err, KFT_ENOTFOUND, "fetch %s: HTTP 404 (not found)", t->url);
	if (t->status != 200 && t->status != 206)
		return kft_error_set(err, KFT_EIO, "fetch %s: HTTP %ld", t->url, t->status);
	return 0;
}

#define MAX_REDIRECTS 5

static int is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/* One request; *next_url (malloc'd) receives the target of a redirect reply
 * instead of a result. */
static int run_request(transfer *t, const char *url, const char *const *headers, int other_host,
                       char **next_url, kft_error *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = build_headers(t, headers, other_host);
	t->curl = curl_easy_init();
	t->started = 0;
	t->status = 0;
	if (!hdrs || !t->curl) {
		curl_slist_free_all(hdrs);
		curl_easy_cleanup(t->curl);
		return kft_error_set(err, KFT_ENOMEM, "fetch %s: out of memory", t->url);
	}
	setup_curl(t, url, hdrs);
	curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, errbuf);
	CURLcode cc = curl_easy_perform(t->curl);
	char *location = NULL;
	long status = 0;
	curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
	int rc = 0;
	if (cc == CURLE_OK && is_redirect(status) &&
	    curl_easy_getinfo(t->curl, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location) {
		if (!(*next_url = strdup(location)))
			rc = kft_error_set(err, KFT_ENOMEM, "fetch %s: out of memory", t->url);
	} else {
		rc = transfer_result(t, cc, errbuf, err);
	}
	curl_easy_cleanup(t->curl);
	t->curl = NULL;
	curl_slist_free_all(hdrs);
	return rc;
}

/* Follows up to MAX_REDIRECTS redirects. Headers bound to the first URL's
 * origin (credentials, SigV4's x-amz-* and its signed Host) go only to that
 * origin: once a redirect leads elsewhere, they are never sent again. */
static int run_transfer(transfer *t, const char *const *headers, kft_error *err)
{
	char origin[600], here[600];
	char *url = NULL, *next = NULL;
	int other_host = url_origin(t->url, origin, sizeof(origin)) != 0;
	int rc = run_request(t, t->url, headers, other_host, &next, err);
	for (int hops = 0; rc == 0 && next; hops++) {
		free(url);
		url = next;
		next = NULL;
		if (hops == MAX_REDIRECTS) {
			rc = kft_error_set(err, KFT_EIO, "fetch %s: more than %d redirects", t->url,
			                   MAX_REDIRECTS);
			break;
		}
		if (!other_host)
			other_host = url_origin(url, here, sizeof(here)) != 0 ||
			             strcmp(here, origin) != 0;
		rc = run_request(t, url, headers, other_host, &next, err);
	}
	free(url);
	free(next);
	return rc;
}

static int verify_and_publish(int fd, const char *part, const char *dest, const char *url,
                              const char *want, kft_error *err)
{
	char got[65];
	if (want) {
		if (kft_sha256_fd(fd, got) != 0)
			return kft_error_set(err, KFT_EIO, "fetch %s: hashing %s failed", url,
			                     part);
		if (strcasecmp(got, want) != 0) {
			unlink(part);
			return kft_error_set(err, KFT_EIO,
			                     "fetch %s: sha256 mismatch (expected %s, got %s)", url,
			                     want, got);
		}
	}
	if (fsync(fd) != 0 || rename(part, dest) != 0)
		return kft_error_set(err, KFT_EIO, "fetch %s: saving %s: %s", url, dest,
		                     strerror(errno));
	return 0;
}

static int is_http_url(const char *url)
{
	return url && (!strncasecmp(url, "https://", 8) || !strncasecmp(url, "http://", 7));
}

int kft_fetch_url(const char *url, const char *dest_path, const char *const *headers,
                  const char *expected_sha256, const kft_fetch_options *opt, kft_error *err)
{
	char part[PATH_MAX_LEN];
	if (!is_http_url(url) || !dest_path)
		return kft_error_set(err, KFT_EINVAL,
		                     "fetch %s: only http:// and https:// URLs "
		                     "can be downloaded",
		                     url ? url : "(null)");
	if (expected_sha256 && strlen(expected_sha256) != 64)
		return kft_error_set(err, KFT_EINVAL, "fetch %s: expected sha256 is not 64 hex",
		                     url);
	if ((size_t)snprintf(part, sizeof(part), "%s.part", dest_path) >= sizeof(part))
		return kft_error_set(err, KFT_ELIMIT, "fetch %s: destination path too long", url);
	int fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return kft_error_set(err, KFT_EIO, "fetch %s: opening %s: %s", url, part,
		                     strerror(errno));
	struct stat st;
	transfer t = {.url = url, .name = dest_path, .fd = fd, .max = max_bytes(opt), .opt = opt};
	if (fstat(fd, &st) == 0 && st.st_size > 0 && lseek(fd, 0, SEEK_END) == st.st_size)
		t.offset = t.written = (uint64_t)st.st_size;
	int rc = run_transfer(&t, headers, err);
	if (rc != 0 && t.status == 416 && t.offset > 0 && ftruncate(fd, 0) == 0) {
		/* The part file is as long as (or longer than) the object, e.g. a
		 * run died between the last byte and the rename: start over. */
		transfer again = {
		        .url = url, .name = dest_path, .fd = fd, .max = t.max, .opt = opt};
		t = again;
		kft_error_clear(err);
		rc = run_transfer(&t, headers, err);
	}
	if (rc == 0)
		rc = verify_and_publish(fd, part, dest_path, url, expected_sha256, err);
	if (rc == 0 && opt && opt->progress)
		opt->progress(opt->progress_user, dest_path, t.written, t.written);
	else if (rc != 0 && t.written == 0)
		unlink(part); /* nothing worth resuming; do not leave clutter */
	close(fd);
	return rc;
}

/* ---- file:// ----------------------------------------------------------- */

static int copy_file(const char *src, const char *dst, const kft_fetch_options *opt, kft_error *err)
{
	char buf[65536];
	uint64_t total = 0;
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return kft_error_set(err, errno == ENOENT ? KFT_ENOTFOUND : KFT_EIO,
		                     "fetch file://%s: %s", src, strerror(errno));
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc = out < 0 ? kft_error_set(err, KFT_EIO, "fetch file://%s: creating %s: %s", src, dst,
	                                 strerror(errno))
	                 : 0;
	while (rc == 0) {
		ssize_t r = read(in, buf, sizeof(buf));
		if (r == 0)
			break;
		if (r < 0 || write(out, buf, (size_t)r) != r)
			rc = kft_error_set(err, KFT_EIO, "fetch file://%s: copying: %s", src,
			                   strerror(errno));
		else if ((total += (uint64_t)r) > max_bytes(opt))
			rc = kft_error_set(err, KFT_ELIMIT,
			                   "fetch file://%s: larger than the limit", src);
	}
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

static int copy_tree(const char *src, const char *dst, int depth, const kft_fetch_options *opt,
                     kft_error *err);

static int copy_entry(const char *src, const char *dst, int depth, const kft_fetch_options *opt,
                      kft_error *err)
{
	struct stat st;
	if (lstat(src, &st) != 0)
		return kft_error_set(err, errno == ENOENT ? KFT_ENOTFOUND : KFT_EIO,
		                     "fetch file://%s: %s", src, strerror(errno));
	if (S_ISREG(st.st_mode))
		return copy_file(src, dst, opt, err);
	if (!S_ISDIR(st.st_mode))
		return 0; /* symlinks, sockets, devices: not data */
	if (mkdir(dst, 0755) != 0 && errno != EEXIST)
		return kft_error_set(err, KFT_EIO, "fetch file://%s: mkdir %s: %s", src, dst,
		                     strerror(errno));
	return copy_tree(src, dst, depth + 1, opt, err);
}

static int copy_tree(const char *src, const char *dst, int depth, const kft_fetch_options *opt,
                     kft_error *err)
{
	if (depth > COPY_MAX_DEPTH)
		return kft_error_set(err, KFT_ELIMIT, "fetch file://%s: deeper than %d levels", src,
		                     COPY_MAX_DEPTH);
	DIR *d = opendir(src);
	if (!d)
		return kft_error_set(err, KFT_EIO, "fetch file://%s: %s", src, strerror(errno));
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		char s[PATH_MAX_LEN], t[PATH_MAX_LEN];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(s, sizeof(s), "%s/%s", src, e->d_name) >= sizeof(s) ||
		    (size_t)snprintf(t, sizeof(t), "%s/%s", dst, e->d_name) >= sizeof(t))
			rc = kft_error_set(err, KFT_ELIMIT, "fetch file://%s: path too long", src);
		else
			rc = copy_entry(s, t, depth, opt, err);
	}
	closedir(d);
	return rc;
}

static int fetch_file_uri(const char *path, const char *dest_dir, const kft_fetch_options *opt,
                          kft_error *err)
{
	struct stat st;
	char dst[PATH_MAX_LEN];
	if (path[0] != '/')
		return kft_error_set(err, KFT_EINVAL, "fetch file://%s: path must be absolute",
		                     path);
	if (stat(path, &st) != 0)
		return kft_error_set(err, errno == ENOENT ? KFT_ENOTFOUND : KFT_EIO,
		                     "fetch file://%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return copy_tree(path, dest_dir, 0, opt, err);
	const char *base = strrchr(path, '/') + 1;
	if (!*base || (size_t)snprintf(dst, sizeof(dst), "%s/%s", dest_dir, base) >= sizeof(dst))
		return kft_error_set(err, KFT_EINVAL, "fetch file://%s: no file name", path);
	return copy_file(path, dst, opt, err);
}

/* ---- hf:// ------------------------------------------------------------- */

#define HF_DEFAULT_ENDPOINT "https://huggingface.co"
#define HF_API_MAX_BYTES    ((size_t)16 << 20)
#define HF_MAX_FILES        100000
#define HF_NAME_MAX         96
#define HF_PATH_MAX         1024

/* What a listing's status says, in the words of the service asked. */
typedef struct status_words {
	const char *missing; /* 404 */
	const char *denied;  /* 401, 403 */
} status_words;

static const status_words HF_WORDS = {
        "no such repository, or it is private and no HF_TOKEN was given", "check HF_TOKEN"};
static const status_words S3_WORDS = {"no such bucket",
                                      "check the credentials and the bucket's policy"};

static int get_status_error(const char *url, long status, const status_words *w, kft_error *err)
{
	if (status == 404)
		return kft_error_set(err, KFT_ENOTFOUND, "fetch %s: HTTP 404 (%s)", url,
		                     w->missing);
	if (status == 401 || status == 403)
		return kft_error_set(err, KFT_EIO, "fetch %s: HTTP %ld (%s)", url, status,
		                     w->denied);
	return kft_error_set(err, KFT_EIO, "fetch %s: HTTP %ld", url, status);
}

/* GETs a small document (at most HF_API_MAX_BYTES) into *text, sending the
 * header lines given (NULL-terminated; NULL entries end it early). */
static int http_get_text(const char *url, const char *const *headers, const kft_fetch_options *opt,
                         const status_words *words, kft_strbuf *text, kft_error *err)
{
	kft_strbuf_capped m = {.max = HF_API_MAX_BYTES};
	char errbuf[CURL_ERROR_SIZE] = "";
	long status = 0;
	struct curl_slist *hdrs = NULL;
	for (const char *const *h = headers; h && *h; h++) {
		struct curl_slist *more = curl_slist_append(hdrs, *h);
		if (!more) {
			curl_slist_free_all(hdrs);
			return kft_error_set(err, KFT_ENOMEM, "fetch %s: out of memory", url);
		}
		hdrs = more;
	}
	CURL *c = curl_easy_init();
	if (!c) {
		curl_slist_free_all(hdrs);
		return kft_error_set(err, KFT_ENOMEM, "fetch %s: out of memory", url);
	}
	setup_common(c, url, hdrs, opt);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kft_strbuf_capped_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	CURLcode cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	int rc = 0;
	if (m.over)
		rc = kft_error_set(err, KFT_ELIMIT, "fetch %s: reply larger than %zu bytes", url,
		                   HF_API_MAX_BYTES);
	else if (cc != CURLE_OK)
		rc = curl_failure(url, cc, errbuf, err);
	else if (status != 200)
		rc = get_status_error(url, status, words, err);
	if (rc)
		kft_strbuf_free(&m.text);
	else
		*text = m.text;
	return rc;
}

/* GETs a small JSON document into *out (caller json_decref()s it). */
static int http_get_json(const char *url, const char *auth, const kft_fetch_options *opt,
                         json_t **out, kft_error *err)
{
	const char *const headers[] = {"Accept: application/json", auth, NULL};
	kft_strbuf text = {0};
	json_error_t jerr;
	int rc = http_get_text(url, headers, opt, &HF_WORDS, &text, err);
	if (rc == 0 && !(*out = json_loadb(kft_strbuf_str(&text), text.len, 0, &jerr)))
		rc = kft_error_set(err, KFT_EPARSE, "fetch %s: reply is not JSON: %s", url,
		                   jerr.text);
	kft_strbuf_free(&text);
	return rc;
}

static int hf_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > HF_NAME_MAX || (n <= 2 && strspn(s, ".") == n))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return 0;
	return 1;
}

/* A file name from the hub becomes a path under dest_dir, so it must stay
 * there: relative, no "." or ".." or empty segments, no control bytes. */
static int relpath_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= HF_PATH_MAX || s[0] == '/' || strchr(s, '\\'))
		return 0;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 0;
	for (const char *seg = s; seg;) {
		const char *slash = strchr(seg, '/');
		size_t len = slash ? (size_t)(slash - seg) : strlen(seg);
		if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && !strncmp(seg, "..", 2)))
			return 0;
		seg = slash ? slash + 1 : NULL;
	}
	return 1;
}

typedef struct hf_ref {
	int dataset;
	char repo[2 * HF_NAME_MAX + 2]; /* ORG/REPO */
	char prefix[HF_PATH_MAX];       /* "" for the whole repository */
} hf_ref;

static int hf_parse(const char *uri, hf_ref *r, kft_error *err)
{
	const char *p = uri + 5;
	memset(r, 0, sizeof(*r));
	if (!strncmp(p, "datasets/", 9)) {
		r->dataset = 1;
		p += 9;
	}
	const char *s1 = strchr(p, '/');
	const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	size_t org = s1 ? (size_t)(s1 - p) : 0;
	size_t name = s1 ? (s2 ? (size_t)(s2 - s1 - 1) : strlen(s1 + 1)) : 0;
	if (!hf_name_ok(p, org) || !hf_name_ok(s1 + 1, name))
		return kft_error_set(err, KFT_EINVAL,
		                     "fetch %s: expected hf://[datasets/]ORG/REPO[/PATH]", uri);
	memcpy(r->repo, p, org + 1 + name);
	if (s2 && s2[1]) {
		size_t n = strlen(s2 + 1);
		while (n > 0 && s2[n] == '/') /* drop trailing slashes */
			n--;
		if (n >= sizeof(r->prefix))
			return kft_error_set(err, KFT_ELIMIT, "fetch %s: path too long", uri);
		memcpy(r->prefix, s2 + 1, n);
		if (n > 0 && !relpath_ok(r->prefix))
			return kft_error_set(err, KFT_EINVAL, "fetch %s: bad path in repository",
			                     uri);
	}
	return 0;
}

static int hf_wanted(const hf_ref *r, const char *file)
{
	size_t n = strlen(r->prefix);
	return n == 0 || (!strncmp(file, r->prefix, n) && (file[n] == '\0' || file[n] == '/'));
}

/* Whether name matches one of the comma-separated patterns (see
 * kft_fetch_options.ignore_patterns; blanks around a pattern are trimmed,
 * as upstream's initializers split the variable). */
static int ignored(const kft_fetch_options *opt, const char *name)
{
	const char *list = opt ? opt->ignore_patterns : NULL;
	char pattern[512];
	for (const char *p = list; p && *p; p += *p == ',') {
		size_t n = strcspn(p, ",");
		const char *s = p, *e = p + n;
		p = e;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e == s || (size_t)(e - s) + 2 > sizeof(pattern))
			continue;
		int dir = e[-1] == '/';
		snprintf(pattern, sizeof(pattern), "%.*s%s", (int)(e - s), s, dir ? "*" : "");
		if (fnmatch(pattern, name, FNM_NOESCAPE) == 0)
			return 1;
	}
	return 0;
}

static int make_parents(const char *dest_dir, const char *rel, kft_error *err)
{
	char path[PATH_MAX_LEN];
	for (const char *p = strchr(rel, '/'); p; p = strchr(p + 1, '/')) {
		snprintf(path, sizeof(path), "%s/%.*s", dest_dir, (int)(p - rel), rel);
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return kft_error_set(err, KFT_EIO, "fetch: mkdir %s: %s", path,
			                     strerror(errno));
	}
	return 0;
}

/* The lfs sha256 of a sibling, or NULL. A present but malformed one is an
 * error: checksums are the point of reading it. */
static int sibling_sha(json_t *sib, const char **sha, kft_error *err)
{
	json_t *v = json_object_get(json_object_get(sib, "lfs"), "sha256");
	*sha = NULL;
	if (!v)
		return 0;
	const char *s = json_string_value(v);
	if (!s || strlen(s) != 64 || strspn(s, "0123456789abcdefABCDEF") != 64)
		return kft_error_set(err, KFT_EPARSE, "fetch hf: malformed lfs.sha256");
	*sha = s;
	return 0;
}

typedef struct hf_ctx {
	const hf_ref *ref;
	const char *endpoint;
	const char *auth; /* "Authorization: Bearer ..." or NULL */
	const char *dest_dir;
	const kft_fetch_options *opt;
} hf_ctx;

static int hf_download(const hf_ctx *h, const char *file, const char *sha, kft_error *err)
{
	char enc[3 * HF_PATH_MAX], url[4 * HF_PATH_MAX], dest[PATH_MAX_LEN];
	const char *const headers[] = {h->auth, NULL};
	int rc = kft_s3_encode_key(file, enc, sizeof(enc), err);
	if (rc)
		return rc;
	if ((size_t)snprintf(url, sizeof(url), "%s/%s%s/resolve/main/%s", h->endpoint,
	                     h->ref->dataset ? "datasets/" : "", h->ref->repo,
	                     enc) >= sizeof(url) ||
	    (size_t)snprintf(dest, sizeof(dest), "%s/%s", h->dest_dir, file) >= sizeof(dest))
		return kft_error_set(err, KFT_ELIMIT, "fetch hf: path too long for %s", file);
	if (access(dest, F_OK) == 0)
		return 0; /* finished by an earlier run: only complete files get this name */
	rc = make_parents(h->dest_dir, file, err);
	return rc ? rc : kft_fetch_url(url, dest, h->auth ? headers : NULL, sha, h->opt, err);
}

/* Whether file matches one of the caller's allow patterns (none: all do). */
static int hf_allowed(const kft_fetch_options *opt, const char *file)
{
	if (!opt || !opt->hf_allow)
		return 1;
	for (const char *const *p = opt->hf_allow; *p; p++)
		if (fnmatch(*p, file, 0) == 0)
			return 1;
	return 0;
}

static int hf_download_all(const hf_ctx *h, json_t *info, kft_error *err)
{
	json_t *sibs = json_object_get(info, "siblings"), *sib;
	size_t i, matched = 0;
	if (!json_is_array(sibs))
		return kft_error_set(err, KFT_EPARSE, "fetch hf://%s: reply has no siblings list",
		                     h->ref->repo);
	if (json_array_size(sibs) > HF_MAX_FILES)
		return kft_error_set(err, KFT_ELIMIT, "fetch hf://%s: more than %d files",
		                     h->ref->repo, HF_MAX_FILES);
	json_array_foreach(sibs, i, sib)
	{
		const char *file = json_string_value(json_object_get(sib, "rfilename")), *sha;
		if (!file || !relpath_ok(file))
			return kft_error_set(err, KFT_EINVAL, "fetch hf://%s: unsafe file name %s",
			                     h->ref->repo, file ? file : "(none)");
		if (!hf_wanted(h->ref, file) || !hf_allowed(h->opt, file))
			continue;
		matched++;
		if (ignored(h->opt, file))
			continue;
		int rc = sibling_sha(sib, &sha, err);
		if (rc || (rc = hf_download(h, file, sha, err)))
			return rc;
	}
	if (matched == 0)
		return kft_error_set(err, KFT_ENOTFOUND, "fetch hf://%s: no file matches \"%s\"",
		                     h->ref->repo, h->ref->prefix);
	return 0;
}

static int fetch_hf(const char *uri, const char *dest_dir, const kft_fetch_options *opt,
                    kft_error *err)
{
	hf_ref ref;
	char endpoint[512], auth[4096], api[1024];
	int rc = hf_parse(uri, &ref, err);
	if (rc)
		return rc;
	if (opt && opt->hf_dataset)
		ref.dataset = 1;
	const char *ep = (opt && opt->hf_endpoint) ? opt->hf_endpoint : getenv("HF_ENDPOINT");
	const char *tok = (opt && opt->hf_token) ? opt->hf_token : getenv("HF_TOKEN");
	snprintf(endpoint, sizeof(endpoint), "%s", (ep && *ep) ? ep : HF_DEFAULT_ENDPOINT);
	for (size_t n = strlen(endpoint); n > 0 && endpoint[n - 1] == '/'; n--)
		endpoint[n - 1] = '\0';
	if (!is_http_url(endpoint))
		return kft_error_set(err, KFT_EINVAL, "fetch %s: HF endpoint %s is not http(s)",
		                     uri, endpoint);
	if (tok && (strpbrk(tok, "\r\n") || strlen(tok) > 2048))
		return kft_error_set(err, KFT_EINVAL, "fetch %s: malformed HF token", uri);
	if (tok && *tok)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
	snprintf(api, sizeof(api), "%s/api/%s/%s?blobs=true", endpoint,
	         ref.dataset ? "datasets" : "models", ref.repo);
	json_t *info = NULL;
	hf_ctx h = {&ref, endpoint, (tok && *tok) ? auth : NULL, dest_dir, opt};
	rc = http_get_json(api, h.auth, opt, &info, err);
	if (rc == 0)
		rc = hf_download_all(&h, info, err);
	json_decref(info);
	return rc;
}

/* ---- s3:// ------------------------------------------------------------- */

/* One bucket, its endpoint and the credentials a request is signed with. */
typedef struct s3_ctx {
	kft_s3 s3;
	const kft_fetch_options *opt;
	const char *uri;
} s3_ctx;

/* Object key into dest (a file name). */
static int s3_get(const s3_ctx *s, const char *key, const char *dest, kft_error *err)
{
	char enc[3 * HF_PATH_MAX], path[3 * HF_PATH_MAX + 80], url[4 * HF_PATH_MAX];
	kft_s3_headers h;
	int rc = kft_s3_encode_key(key, enc, sizeof(enc), err);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s", s->s3.t.prefix, enc);
	snprintf(url, sizeof(url), "%s%s", s->s3.t.base, path);
	if ((rc = kft_s3_sign(&s->s3, "GET", path, NULL, &h, err)))
		return rc;
	return kft_fetch_url(url, dest, h.lines, NULL, s->opt, err);
}

/* One page of ListObjectsV2 under prefix, after token (NULL: the first). */
static int s3_list_page(const s3_ctx *s, const char *prefix, const char *token, kft_s3_list *out,
                        kft_error *err)
{
	char eprefix[3 * KFT_S3_KEY_MAX + 1], etoken[3 * KFT_S3_KEY_MAX + 1] = "";
	char query[7 * KFT_S3_KEY_MAX], path[80], url[8 * KFT_S3_KEY_MAX];
	kft_s3_headers h;
	if (kft_s3_query_encode(prefix, eprefix, sizeof(eprefix)) != 0 ||
	    (token && kft_s3_query_encode(token, etoken, sizeof(etoken)) != 0))
		return kft_error_set(err, KFT_ELIMIT, "fetch %s: prefix too long", s->uri);
	/* the canonical query's parameters in order of name */
	snprintf(query, sizeof(query), "%s%s%slist-type=2&prefix=%s",
	         token ? "continuation-token=" : "", etoken, token ? "&" : "", eprefix);
	snprintf(path, sizeof(path), "%s", s->s3.t.prefix[0] ? s->s3.t.prefix : "/");
	snprintf(url, sizeof(url), "%s%s?%s", s->s3.t.base, path, query);
	int rc = kft_s3_sign(&s->s3, "GET", path, query, &h, err);
	kft_strbuf text = {0};
	if (rc == 0)
		rc = http_get_text(url, h.lines, s->opt, &S3_WORDS, &text, err);
	if (rc == 0)
		rc = kft_s3_list_parse(kft_strbuf_str(&text), text.len, out, err);
	kft_strbuf_free(&text);
	return rc;
}

/* Every object under prefix (which ends with "/"), each to dest_dir with
 * its key's path after the prefix, as upstream's initializers lay them out. */
static int s3_get_prefix(const s3_ctx *s, const char *prefix, const char *dest_dir, kft_error *err)
{
	char *token = NULL, dest[PATH_MAX_LEN];
	size_t listed = 0;
	int rc = 0;
	do {
		kft_s3_list page = {0};
		rc = s3_list_page(s, prefix, token, &page, err);
		for (size_t i = 0; rc == 0 && i < page.n; i++) {
			const char *key = page.keys[i], *rel = key + strlen(prefix);
			if (strncmp(key, prefix, strlen(prefix)) != 0 || !*rel ||
			    rel[strlen(rel) - 1] == '/')
				continue; /* outside the prefix, or a folder marker */
			listed++;
			if (ignored(s->opt, key))
				continue; /* as upstream's S3 initializers skip it */
			if (!relpath_ok(rel))
				rc = kft_error_set(err, KFT_EINVAL,
				                   "fetch %s: unsafe object key %s", s->uri, key);
			else if ((size_t)snprintf(dest, sizeof(dest), "%s/%s", dest_dir, rel) >=
			         sizeof(dest))
				rc = kft_error_set(err, KFT_ELIMIT,
				                   "fetch %s: path too long for %s", s->uri, key);
			else if (access(dest, F_OK) != 0 && /* else finished by an earlier run */
			         (rc = make_parents(dest_dir, rel, err)) == 0)
				rc = s3_get(s, key, dest, err);
		}
		free(token);
		token = rc == 0 && page.truncated && page.next_token ? strdup(page.next_token)
		                                                     : NULL;
		if (rc == 0 && page.truncated && !token)
			rc = kft_error_set(
			        err, KFT_EPARSE,
			        "fetch %s: a truncated list without a continuation token", s->uri);
		kft_s3_list_free(&page);
	} while (rc == 0 && token);
	free(token);
	if (rc == 0 && listed == 0)
		return kft_error_set(err, KFT_ENOTFOUND, "fetch %s: no object under %s", s->uri,
		                     prefix);
	return rc;
}

/* s3://BUCKET/KEY: the object KEY, or, when there is none (or KEY ends with
 * "/" or is empty), every object under KEY/ as a folder, as upstream's
 * initializers (OpenDAL's recursive list) fetch it. */
static int fetch_s3(const char *uri, const char *dest_dir, const kft_fetch_options *opt,
                    kft_error *err)
{
	const char *b = uri + 5, *slash = strchr(b, '/');
	const char *key = slash ? slash + 1 : "";
	char bucket[64], dest[PATH_MAX_LEN], prefix[KFT_S3_KEY_MAX + 2];
	if (!slash || !kft_s3_bucket_ok(b, (size_t)(slash - b)))
		return kft_error_set(err, KFT_EINVAL, "fetch %s: expected s3://BUCKET/KEY", uri);
	size_t klen = strlen(key);
	char folder[KFT_S3_KEY_MAX + 1];
	snprintf(folder, sizeof(folder), "%.*s",
	         (int)(klen && key[klen - 1] == '/' ? klen - 1 : klen), key);
	if (klen > KFT_S3_KEY_MAX || (folder[0] && !relpath_ok(folder)))
		return kft_error_set(err, KFT_EINVAL, "fetch %s: bad object key", uri);
	snprintf(bucket, sizeof(bucket), "%.*s", (int)(slash - b), b);
	s3_ctx s = {.opt = opt, .uri = uri};
	int rc = kft_s3_open(bucket, &s.s3, err);
	if (rc)
		return rc;
	if (klen && key[klen - 1] != '/' && ignored(opt, key))
		return 0; /* as upstream's S3 initializers skip a key that matches */
	if (klen && key[klen - 1] != '/') {
		const char *name = strrchr(key, '/') ? strrchr(key, '/') + 1 : key;
		if ((size_t)snprintf(dest, sizeof(dest), "%s/%s", dest_dir, name) >= sizeof(dest))
			return kft_error_set(err, KFT_ELIMIT, "fetch %s: destination path too long",
			                     uri);
		rc = s3_get(&s, key, dest, err);
		if (rc != KFT_ENOTFOUND)
			return rc;
	}
	snprintf(prefix, sizeof(prefix), "%s%s", key, klen && key[klen - 1] != '/' ? "/" : "");
	return s3_get_prefix(&s, prefix, dest_dir, err);
}

static void url_basename(const char *url, char *out, size_t size)
{
	const char *p = strstr(url, "://") + 3;
	size_t end = strcspn(p, "?#");
	const char *slash = NULL;
	for (size_t i = 0; i < end; i++)
		if (p[i] == '/')
			slash = p + i;
	size_t n = slash ? (size_t)(p + end - slash - 1) : 0;
	if (n == 0 || n >= size || (n == 1 && slash[1] == '.') ||
	    (n == 2 && !strncmp(slash + 1, "..", 2))) {
		snprintf(out, size, "download");
		return;
	}
	memcpy(out, slash + 1, n);
	out[n] = '\0';
}

int kft_fetch_uri(const char *uri, const char *dest_dir, const kft_fetch_options *opt,
                  kft_error *err)
{
	char name[256], dst[PATH_MAX_LEN];
	if (!uri || !dest_dir)
		return kft_error_set(err, KFT_EINVAL, "fetch: no URI or destination");
	if (!strncmp(uri, "file://", 7))
		return fetch_file_uri(uri + 7, dest_dir, opt, err);
	if (!strncmp(uri, "hf://", 5))
		return fetch_hf(uri, dest_dir, opt, err);
	if (!strncmp(uri, "s3://", 5))
		return fetch_s3(uri, dest_dir, opt, err);
	if (!is_http_url(uri))
		return kft_error_set(err, KFT_EINVAL, "fetch %s: unsupported URI scheme", uri);
	url_basename(uri, name, sizeof(name));
	if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", dest_dir, name) >= sizeof(dst))
		return kft_error_set(err, KFT_ELIMIT, "fetch %s: destination path too long", uri);
	return kft_fetch_url(uri, dst, NULL, NULL, opt, err);
}
