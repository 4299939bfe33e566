/*
 * curl_tls.c - see curl_tls.h. Compiled twice: with KFT_CURL_MBEDTLS for
 * the libcurl built over mbedTLS, without it for one over OpenSSL.
 */
#include "util/curl_tls.h"

#ifdef KFT_CURL_MBEDTLS

#include <arpa/inet.h>
#include <mbedtls/asn1.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <string.h>

/* The host of the URL h is connecting to as address bytes (4 or 16); 0
 * when it is a name. */
static size_t connecting_ip(CURL *h, unsigned char ip[16])
{
	char *url = NULL, *host = NULL;
	size_t len = 0;
	CURLU *u = curl_url();
	if (u && curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK && url &&
	    !curl_url_set(u, CURLUPART_URL, url, 0) && !curl_url_get(u, CURLUPART_HOST, &host, 0)) {
		size_t n = strlen(host);
		if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
			host[n - 1] = '\0';
			len = inet_pton(AF_INET6, host + 1, ip) == 1 ? 16 : 0;
		} else {
			len = inet_pton(AF_INET, host, ip) == 1 ? 4 : 0;
		}
	}
	curl_free(host);
	curl_url_cleanup(u);
	return len;
}

/* Equality as Go's net.IP.Equal has it: an IPv4 address also equals its
 * IPv4-mapped IPv6 form (::ffff:a.b.c.d). */
static int ip_equal(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
	static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (alen == blen)
		return (alen == 4 || alen == 16) && memcmp(a, b, alen) == 0;
	if (alen == 4 && blen == 16)
		return memcmp(b, v4_mapped, 12) == 0 && memcmp(b + 12, a, 4) == 0;
	if (alen == 16 && blen == 4)
		return ip_equal(b, blen, a, alen);
	return 0;
}

/* For an IP host, the name decision on the leaf: a mismatch unless an
 * iPAddress subjectAltName (GeneralName tag [7]) holds that address. A
 * host name is left to mbedTLS. ctx is the curl handle. */
static int verify_ip_san(void *ctx, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
	unsigned char ip[16];
	size_t len;
	if (depth != 0 || (len = connecting_ip(ctx, ip)) == 0)
		return 0;
	*flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
	for (const mbedtls_x509_sequence *s = &crt->subject_alt_names; s && s->buf.p; s = s->next) {
		if (s->buf.tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7) &&
		    ip_equal(s->buf.p, s->buf.len, ip, len)) {
			*flags &= ~(uint32_t)MBEDTLS_X509_BADCERT_CN_MISMATCH;
			break;
		}
	}
	return 0;
}

/* curl hands each new connection's mbedTLS configuration here before the
 * handshake, which runs inside the same handle's transfer. */
static CURLcode ssl_ctx_hook(CURL *h, void *ssl_conf, void *ctx)
{
	(void)ctx;
	mbedtls_ssl_conf_verify(ssl_conf, verify_ip_san, h);
	return CURLE_OK;
}

void kft_curl_tls_setup(CURL *h)
{
	curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, ssl_ctx_hook);
	curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, NULL);
}

size_t kft_curl_tls_key_blob_len(size_t len)
{
	return len + 1;
}

#else

void kft_curl_tls_setup(CURL *h)
{
	(void)h;
}

size_t kft_curl_tls_key_blob_len(size_t len)
{
	return len;
}

#endif
