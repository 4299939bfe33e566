/*
 * curl_tls.h - what depends on the TLS library libcurl runs over (internal).
 *
 * The CLI, libkftrainer.so and the controller link libcurl built over
 * mbedTLS; the tests and benches link Debian's, over OpenSSL, and so does a
 * build without the slim libcurl (CMakeLists.txt). curl_tls.c is compiled
 * once for each (KFT_CURL_MBEDTLS for the first), and is the one place that
 * knows which: every other file sets up its handles the same way.
 */
#ifndef KFT_UTIL_CURL_TLS_H
#define KFT_UTIL_CURL_TLS_H

#include <curl/curl.h>
#include <stddef.h>

/* Makes handle h judge a server addressed by an IP literal as Go's
 * crypto/x509 (client-go, the Hugging Face and S3 clients upstream's
 * initializers use) and OpenSSL do: by the certificate's iPAddress names
 * alone. Over mbedTLS 2.28, which compares the host with the CN and DNS
 * names as strings, this installs a verify callback that makes that one
 * decision for whatever URL h connects to (redirects included); every other
 * verdict (trust, expiry ...) stays mbedTLS's and curl's. Over OpenSSL it
 * does nothing. Overrides CURLOPT_SSL_CTX_FUNCTION and _DATA. */
void kft_curl_tls_setup(CURL *h);

/* The length to hand CURLOPT_SSLKEY_BLOB for a NUL-terminated PEM key of
 * len bytes: mbedTLS parses PEM only when the length counts the NUL, and
 * curl 7.88 passes a key blob's length as it is (it adds the NUL for
 * certificates, not for keys). */
size_t kft_curl_tls_key_blob_len(size_t len);

#endif
