/*
 * error.c - filling kft_error values. See include/kftrainer/error.h.
 */
#include "kftrainer/error.h"

#include <stdarg.h>
#include <stdio.h>

int kft_error_set(kft_error *err, kft_status code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

void kft_error_clear(kft_error *err)
{
	if (err) {
		err->code = KFT_OK;
		err->message[0] = '\0';
	}
}

const char *kft_status_string(kft_status code)
{
	switch (code) {
	case KFT_OK: return "ok";
	case KFT_EINVAL: return "invalid input";
	case KFT_ENOMEM: return "out of memory";
	case KFT_EIO: return "input/output error";
	case KFT_EPARSE: return "parse error";
	case KFT_ELIMIT: return "limit exceeded";
	case KFT_ENOTFOUND: return "not found";
	case KFT_EVERSION: return "version mismatch";
	case KFT_ECONFLICT: return "conflict";
	case KFT_EEXIST: return "already exists";
	case KFT_EGONE: return "gone";
	case KFT_EUNAVAILABLE: return "unavailable";
	case KFT_EDENIED: return "access denied";
	}
	return "unknown error";
}
