/*
 * quantity.h - Kubernetes resource quantities ("500m", "4Gi", "1e3"), held exactly.
 *
 * A quantity is a decimal number with an optional suffix. Kubernetes
 * (k8s.io/apimachinery/pkg/api/resource) parses it into a fixed-point value
 * and remembers which family of suffix the text used, so that it can print
 * the value back in the same family. We reproduce that behaviour:
 *
 *   - what is accepted and what is rejected, with the same error messages;
 *   - the value: every quantity is a whole number of nano-units (10^-9).
 *     Finer input is rounded away from zero ("0.5n" is 1n, "-0.5n" is -1n);
 *   - the format: binary suffixes (Ki Mi Gi Ti Pi Ei) give BinarySI, "e<n>"
 *     gives DecimalExponent, everything else (n u m "" k M G T P E) DecimalSI;
 *   - the canonical text ("1.5" prints as "1500m", "1024Mi" as "1Gi");
 *   - BinarySI values are capped at 2^63-1 in magnitude ("16Ei" becomes
 *     9223372036854775807), and a BinarySI value below 1 becomes DecimalSI.
 *
 * The value is a signed 128-bit count of nano-units, so comparison, addition
 * and multiplication are exact integer operations with no floating point.
 *
 * Where we differ from Kubernetes, and why:
 *
 *   - Range. Kubernetes falls back to arbitrary-precision decimals for huge
 *     DecimalSI/DecimalExponent values ("1e100"); we reject any quantity whose
 *     magnitude is 10^29 or more with KFT_ELIMIT "quantity too large". Nobody
 *     requests 10^29 of a resource, and the bound keeps every operation a
 *     fixed-size integer operation that cannot allocate or run long. (A CRD's
 *     quantity pattern still accepts such text: it is this library, not the
 *     API server, that refuses it.) Arithmetic results obey the same bound.
 *   - Exponents. The digits after "e" are read as a 64-bit integer and then
 *     truncated to 32 bits, as Kubernetes does ("1e4294967296" is 1); after
 *     that we compute exactly, where Kubernetes' own 32-bit arithmetic on the
 *     scale can wrap again for exponents within a few units of +-2^31.
 *   - Conversions to int64 (kft_quantity_value and friends) saturate at
 *     INT64_MIN/INT64_MAX where Kubernetes silently wraps, and always round
 *     away from zero (Kubernetes does so for values it holds as int64, but
 *     for negative values it holds as big decimals, such as "-0.1Ki", it
 *     truncates and then adds one: Value() of -102.4 is -101, ours -103).
 *
 * Kubernetes prints the canonical form with no suffix when no suffix exists
 * for the exponent it computed: "1000E" (10^21, DecimalSI) prints as "1" and
 * 1024^7 bytes in BinarySI prints as "1". We reproduce that too, because the
 * point of the canonical form is to match Kubernetes byte for byte; such
 * values are far outside any real resource request.
 *
 * A kft_quantity is a plain value: no heap memory, copy it with '=', never
 * free it. A zero-initialised kft_quantity is the quantity 0 in DecimalSI.
 * Quantity pointers must not be NULL except where a function says it checks.
 * Nothing here keeps state between calls; all functions are thread-safe.
 */
#ifndef KFTRAINER_QUANTITY_H
#define KFTRAINER_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kftrainer/error.h"
#include "kftrainer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The suffix family a quantity is printed with (Kubernetes' Format). */
typedef enum kft_quantity_format {
	KFT_QTY_DECIMAL_SI = 0,   /* 12M = 12 * 10^6; also plain numbers and n u m k G T P E */
	KFT_QTY_BINARY_SI,        /* 12Mi = 12 * 2^20 */
	KFT_QTY_DECIMAL_EXPONENT, /* 12e6 */
} kft_quantity_format;

/*
 * The value is nano_hi * 2^64 + nano_lo, a signed 128-bit count of
 * nano-units (two's complement split in halves so that the struct needs no
 * compiler extension). Read it through the functions below.
 */
typedef struct kft_quantity {
	int64_t nano_hi;
	uint64_t nano_lo;
	kft_quantity_format format;
} kft_quantity;

/* A buffer of this size always holds a canonical quantity and its NUL. */
#define KFT_QUANTITY_STRING_MAX 64

/* The error messages Kubernetes uses, for callers that build field errors. */
#define KFT_QUANTITY_ERR_FORMAT                                                                    \
	"quantities must match the regular expression "                                            \
	"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define KFT_QUANTITY_ERR_SUFFIX  "unable to parse quantity's suffix"
#define KFT_QUANTITY_ERR_NUMERIC "unable to parse numeric part of quantity"

/*
 * Parses s like Kubernetes' resource.ParseQuantity and stores the result in
 * *out. No whitespace is allowed anywhere. On failure *out is unchanged and
 * the function returns KFT_EPARSE with one of the three Kubernetes messages
 * above, or KFT_ELIMIT ("quantity too large ...") when the magnitude is
 * 10^29 or more; KFT_EINVAL when s or out is NULL.
 */
KFT_EXPORT int kft_quantity_parse(const char *s, kft_quantity *out, kft_error *err);

/* Same as kft_quantity_parse for the len bytes at s, which need no NUL
 * terminator; an embedded NUL byte is an ordinary invalid character. */
KFT_EXPORT int kft_quantity_parse_len(const char *s, size_t len, kft_quantity *out, kft_error *err);

/*
 * Decodes a quantity from a JSON value the way Kubernetes decodes one from
 * JSON or YAML:
 *   - a string is trimmed of leading and trailing Unicode white space, then
 *     parsed (the API server's JSON decoder trims; ParseQuantity does not);
 *   - an integer is parsed from its decimal text ("cpu: 2" is "2");
 *   - a real is first written the way Go prints a float64 into JSON (the
 *     shortest text that reads back as the same double, in exponent form below
 *     1e-6 or from 1e21 up), then parsed: 0.5 is "0.5" (500m), 1e-7 is "1e-7"
 *     (DecimalExponent). JSON text "1e3" reaches us as the real 1000, so it
 *     becomes "1000" (DecimalSI) - exactly what happens when kubectl sends
 *     YAML, though a raw JSON body sent to the API server keeps "1e3";
 *   - JSON null is the quantity 0 (DecimalSI), as in Kubernetes;
 *   - any other type fails with KFT_EPARSE and the "must match" message.
 * v is borrowed. Errors as for kft_quantity_parse, plus KFT_EINVAL when v or
 * out is NULL or the real is not finite.
 */
KFT_EXPORT int kft_quantity_from_json(const json_t *v, kft_quantity *out, kft_error *err);

/* Sets *q to value units, value / 1000 units (Kubernetes' NewQuantity,
 * NewMilliQuantity) in the given format. These cannot fail. */
KFT_EXPORT void kft_quantity_init_int(kft_quantity *q, int64_t value, kft_quantity_format format);
KFT_EXPORT void kft_quantity_init_milli(kft_quantity *q, int64_t milli, kft_quantity_format format);

/*
 * Sets *q to value * 10^scale (Kubernetes' NewScaledQuantity, but with any
 * format). A scale below -9 rounds away from zero to whole nano-units, like
 * parsing. Returns KFT_ELIMIT (q unchanged) when the result is 10^29 or more
 * in magnitude, KFT_EINVAL when q is NULL.
 */
KFT_EXPORT int kft_quantity_init_scaled(kft_quantity *q, int64_t value, int32_t scale,
                                        kft_quantity_format format, kft_error *err);

/* Compares exact values (formats are ignored): <0, 0 or >0. */
KFT_EXPORT int kft_quantity_cmp(const kft_quantity *a, const kft_quantity *b);

/* 1 when the value is zero, else 0. */
KFT_EXPORT int kft_quantity_is_zero(const kft_quantity *q);

/* -1, 0 or 1 as the value is negative, zero or positive. */
KFT_EXPORT int kft_quantity_sign(const kft_quantity *q);

/*
 * *acc += *b, exactly. As in Kubernetes, a zero acc takes b's format; a
 * non-zero acc keeps its own. Returns KFT_ELIMIT ("quantity too large",
 * acc unchanged) when the sum reaches 10^29 in magnitude.
 */
KFT_EXPORT int kft_quantity_add(kft_quantity *acc, const kft_quantity *b, kft_error *err);

/* *acc -= *b; same rules and errors as kft_quantity_add. */
KFT_EXPORT int kft_quantity_sub(kft_quantity *acc, const kft_quantity *b, kft_error *err);

/* *q *= n, exactly, keeping q's format. KFT_ELIMIT (q unchanged) on overflow. */
KFT_EXPORT int kft_quantity_mul_int(kft_quantity *q, int64_t n, kft_error *err);

/*
 * Writes the canonical text Kubernetes computes for q (CanonicalizeBytes):
 * no fractional digits, the largest suffix of q's family that keeps the value
 * exact, "-" only for negatives, "0" for zero. BinarySI values between -1024
 * and 1024, or with a fractional part, print as DecimalSI. Examples: 1.5 ->
 * "1500m", 1024Mi -> "1Gi", 1e3 -> "1e3", 0.1Ki -> "102400m", 1.5Ki -> "1536".
 * buf receives a NUL-terminated string; size >= KFT_QUANTITY_STRING_MAX always
 * suffices. Returns 0, or KFT_ELIMIT when buf is too small (buf then holds "")
 * and KFT_EINVAL when q or buf is NULL.
 */
KFT_EXPORT int kft_quantity_format_canonical(const kft_quantity *q, char *buf, size_t size);

/*
 * Rewrites every value of a ResourceList (a JSON object of quantities, such
 * as a container's resources.limits; borrowed, changed in place) into the
 * canonical string Kubernetes' Quantity marshals: 2 -> "2", "2000m" -> "2",
 * "8192Mi" -> "8Gi". A value that is not a quantity stops it with
 * KFT_EINVAL naming its key (err may be NULL); the values before it are
 * rewritten. Anything but an object is left alone (0).
 */
KFT_EXPORT int kft_quantity_canonical_list(json_t *list, kft_error *err);

/*
 * Parses s and writes what Kubernetes' Quantity.String() / MarshalJSON
 * return for ParseQuantity(s). That is the canonical form, except that
 * Kubernetes keeps the input text itself when it looks canonical by a quick
 * test: "1Ki", "100M", "1e3" - but also "+1", "0001", "1E3", "1.100" (a
 * DecimalSI value whose digits, scaled to a multiple of 3, do not end in
 * "000"). Use this to predict byte for byte what a typed Kubernetes client
 * sends back. Errors as kft_quantity_parse, and KFT_ELIMIT when the text does
 * not fit in buf (buf then holds "").
 */
KFT_EXPORT int kft_quantity_reserialize(const char *s, char *buf, size_t size, kft_error *err);

/*
 * ceil(q / 10^scale), rounding away from zero, saturated to the int64 range
 * (Kubernetes' ScaledValue). kft_quantity_value is scale 0 (Value()),
 * kft_quantity_milli_value scale -3 (MilliValue()): "1.5" gives 2 and 1500,
 * "0.0001" gives 1 and 1, "-1.5" gives -2 and -1500.
 */
KFT_EXPORT int64_t kft_quantity_scaled_value(const kft_quantity *q, int32_t scale);
KFT_EXPORT int64_t kft_quantity_value(const kft_quantity *q);
KFT_EXPORT int64_t kft_quantity_milli_value(const kft_quantity *q);

#ifdef __cplusplus
}
#endif

#endif
