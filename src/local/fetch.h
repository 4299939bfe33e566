/*
 * fetch.h - bring a storageUri's bytes onto this machine for the local
 * backend's dataset and model initializers.
 *
 * Internal to the local backend (not installed): the public surface of
 * kftrainer does not promise any download API. Two layers live here:
 *
 *  - SigV4 (sigv4.c): signs one S3 GET request with AWS Signature Version 4.
 *    Pure computation over caller-supplied strings and a caller-supplied clock
 *    value, so it can be checked against AWS's published worked examples.
 *  - Fetch (fetch.c): copies file://, downloads http(s):// (and, built on
 *    those, hf:// and s3://) into a destination directory. Every download goes
 *    to "NAME.part" first and is renamed into place only once complete (and
 *    checksum-verified when a checksum is known), so a crashed or interrupted
 *    run leaves a partial file that the next run resumes with a Range request.
 *
 * Nothing here keeps global state except libcurl's, which the caller sets up
 * with curl_global_init() before any thread calls a fetch function.
 */
#ifndef KFT_LOCAL_FETCH_H
#define KFT_LOCAL_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "kftrainer/error.h"

/* ---- SigV4 ---------------------------------------------------------------- */

/* The payload hash S3 accepts for a GET whose body is not signed. */
#define KFT_SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
/* SHA-256 of the empty string: the payload hash of a GET with no body. */
#define KFT_SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct kft_aws_credentials {
	const char *access_key_id;     /* required */
	const char *secret_access_key; /* required */
	const char *session_token;     /* NULL or "" when not using temporary credentials */
	const char *region;            /* required, e.g. "us-east-1" */
} kft_aws_credentials;

/* One request to sign. All strings are borrowed. path and query must already
 * be in canonical (URI-encoded) form: kft_s3_encode_key() produces the path. */
typedef struct kft_sigv4_request {
	const char *method;       /* "GET" */
	const char *host;         /* the Host header exactly as sent, with ":port" if any */
	const char *path;         /* canonical URI, starts with "/" */
	const char *query;        /* canonical query string, NULL or "" for none */
	const char *range;        /* Range header value, NULL when not sent */
	const char *payload_hash; /* x-amz-content-sha256 value */
	const char *amz_date;     /* x-amz-date, "YYYYMMDDTHHMMSSZ" (16 characters) */
	const char *service;      /* "s3" */
} kft_sigv4_request;

typedef struct kft_sigv4_result {
	char canonical_request_sha256[65]; /* hex; exposed so tests can check each step */
	char signed_headers[128];          /* e.g. "host;range;x-amz-content-sha256;x-amz-date" */
	char signature[65];                /* hex */
	char authorization[1024];          /* the full Authorization header value */
} kft_sigv4_result;

/* Signs req with cred into *out (caller-owned storage; nothing to free).
 * The signed headers are host, range (when set), x-amz-content-sha256,
 * x-amz-date and x-amz-security-token (when cred has a session token); the
 * caller must send exactly those headers with exactly those values.
 * Errors: KFT_EINVAL for a missing or malformed field (amz_date not 16
 * characters, path not starting with "/", a header value with a newline),
 * KFT_ELIMIT when a value does not fit the result buffers, KFT_ENOMEM. */
int kft_sigv4_sign(const kft_sigv4_request *req, const kft_aws_credentials *cred,
                   kft_sigv4_result *out, kft_error *err);

/* URI-encodes an S3 object key for the canonical path: every byte outside
 * A-Z a-z 0-9 - . _ ~ becomes %XX, except "/" which is kept. Writes a
 * NUL-terminated string into out. Errors: KFT_ELIMIT when out is too small. */
int kft_s3_encode_key(const char *key, char *out, size_t out_size, kft_error *err);

/* ---- fetch ---------------------------------------------------------------- */

/* Default per-file size bound when kft_fetch_options.max_bytes is 0. */
#define KFT_FETCH_DEFAULT_MAX_BYTES ((uint64_t)1 << 40) /* 1 TiB */

/* Called as bytes of a successful reply (200, 206) arrive, with done <
 * total; then once with done == total after the file is complete, verified
 * and renamed into place (never before: an error reply's body or a failed
 * checksum is not a fetched file). total is 0 when the size is unknown. done
 * and total count the whole file, including bytes a resumed download
 * already had. Return non-zero to cancel (the fetch then fails with
 * KFT_EIO); the final call's return value is ignored. */
typedef int (*kft_fetch_progress_fn)(void *user, const char *name, uint64_t done, uint64_t total);

typedef struct kft_fetch_options {
	uint64_t max_bytes;             /* per file; 0 means KFT_FETCH_DEFAULT_MAX_BYTES */
	long connect_timeout_s;         /* 0 means 30 */
	long low_speed_timeout_s;       /* abort below 1 byte/s for this long; 0 means 120 */
	kft_fetch_progress_fn progress; /* NULL for none */
	void *progress_user;
	const char *hf_endpoint; /* NULL: $HF_ENDPOINT, else https://huggingface.co */
	const char *hf_token;    /* NULL: $HF_TOKEN (unset means anonymous) */
	/* hf:// names a dataset repository even without "datasets/" (upstream's
	 * dataset initializer: snapshot_download(repo_type="dataset")). */
	int hf_dataset;
	/* NULL, or fnmatch(3) patterns (NULL-terminated; '*' crosses '/') a
	 * repository file must match to be fetched (upstream's model
	 * initializer: allow_patterns *.json *.safetensors *.model *.txt). */
	const char *const *hf_allow;
	/* The CA certificates HTTPS trusts, as curl's command-line tool picks
	 * them: ca_file NULL means $CURL_CA_BUNDLE, else $SSL_CERT_FILE; ca_dir
	 * NULL means $SSL_CERT_DIR (a directory of hashed certificates). A file
	 * given replaces the system bundle (to trust one more CA, give a bundle
	 * holding both). Unset: libcurl's default, the system bundle. */
	const char *ca_file;
	const char *ca_dir;
	/* Upstream's initializers' IGNORE_PATTERNS: comma-separated shell
	 * patterns (Python's fnmatch: '*' crosses '/'; a pattern ending in '/'
	 * gets '*' appended, as huggingface_hub does); a hub file or S3 key
	 * matching one is not fetched. NULL or "" for none. */
	const char *ignore_patterns;
} kft_fetch_options;

/* Downloads one http:// or https:// URL to dest_path (a file name).
 * Bytes go to dest_path + ".part"; if that exists, the download resumes from
 * its size with "Range: bytes=N-" (a 206 reply is appended, a 200 reply
 * restarts from zero). On success the part file is renamed to dest_path.
 * headers: NULL or a NULL-terminated array of extra "Name: value" lines.
 * expected_sha256: NULL, or a 64-hex digest the finished file must match
 * (on mismatch the part file is removed so the next run starts over).
 * HTTPS requires TLS 1.2 or newer; at most 5 redirects are followed.
 * Errors (message names the URL and, for HTTP failures, the status):
 * KFT_ENOTFOUND for 404, KFT_EIO for other HTTP/transport/disk failures and
 * checksum mismatches, KFT_ELIMIT when the file exceeds max_bytes,
 * KFT_EINVAL for an unsupported scheme, KFT_ENOMEM. */
int kft_fetch_url(const char *url, const char *dest_path, const char *const *headers,
                  const char *expected_sha256, const kft_fetch_options *opt, kft_error *err);

/* Fetches a storageUri into the existing directory dest_dir:
 *   file:///abs/path      a regular file is copied to dest_dir/BASENAME; a
 *                         directory's tree is copied into dest_dir (symlinks
 *                         are skipped, depth bounded)
 *   http(s)://host/p/NAME downloaded to dest_dir/NAME ("download" if no NAME)
 *   s3://BUCKET/KEY       the object KEY to dest_dir/BASENAME, or, when there is
 *                         none (404) or KEY ends with "/" or is empty, every object
 *                         under KEY/ (ListObjectsV2, all pages) to dest_dir/REST
 *                         (SigV4 with $AWS_ACCESS_KEY_ID..., $AWS_ENDPOINT_URL);
 *   hf://ORG/REPO[/PATH]  a Hugging Face model repository (revision "main"):
 *   hf://datasets/ORG/REPO[/PATH]  or dataset repository. The file list comes
 *                         from {endpoint}/api/{models|datasets}/ORG/REPO?blobs=true
 *                         (siblings[].rfilename); each file (only PATH, or the
 *                         files under PATH/, when PATH is given) is downloaded
 *                         from {endpoint}[/datasets]/ORG/REPO/resolve/main/FILE
 *                         into dest_dir/FILE with "Authorization: Bearer TOKEN"
 *                         when a token is known, and checked against the
 *                         siblings[].lfs.sha256 the hub reports when present.
 *                         Files already present in dest_dir are kept.
 * A hub file or S3 key matching opt->ignore_patterns is skipped, as upstream's
 * initializers skip it (huggingface_hub's snapshot_download, opendal's
 * listing filtered with fnmatch).
 * Errors: as kft_fetch_url; KFT_EINVAL for an unknown scheme or a malformed
 * URI, or a hub file name that would escape dest_dir; KFT_ENOTFOUND for a
 * missing file:// path, a missing repository or PATH matching no file;
 * KFT_EPARSE for a hub reply that is not the expected JSON. */
int kft_fetch_uri(const char *uri, const char *dest_dir, const kft_fetch_options *opt,
                  kft_error *err);

#endif
