/*
 * fuzz_status_creds.c - libFuzzer target for the status servers' kept
 * credentials file (kft_statusserver_creds_parse, src/local/statusserver.c,
 * and the chain check under it, kft_cert_chain_holds in src/util/cert.c):
 * what a state directory's status-server.pem holds is read back by every
 * job's supervisor, and a damaged file must only mean new credentials.
 *
 * The input, cut at its first NUL, is the file's text. Accepted: three PEM
 * blocks, each found in the text as it was given, that check again as a
 * chain. Refused: the output left empty. A violation aborts.
 *
 * `make fuzz-run FUZZER=fuzz_status_creds SECONDS=300`.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "local/statusserver.h"
#include "util/cert.h"

#define FUZZ_NAME "fuzz_status_creds"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = as_cstring(data, size);
	kft_statusserver_creds c;
	if (kft_statusserver_creds_parse(text, &c)) {
		if (!c.ca_pem || !c.cert_pem || !c.key_pem || !strstr(text, c.ca_pem) ||
		    !strstr(text, c.cert_pem) || !strstr(text, c.key_pem))
			fail("accepted credentials that are not blocks of the text", NULL);
		if (!kft_cert_chain_holds(c.ca_pem, c.cert_pem, c.key_pem, 0))
			fail("accepted credentials that do not hold", NULL);
		kft_statusserver_creds_free(&c);
	} else if (c.ca_pem || c.cert_pem || c.key_pem || c.keep_at) {
		fail("refused credentials left behind", NULL);
	}
	free(text);
	return 0;
}
