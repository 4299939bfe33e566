/*
 * test_strbuf.c - src/util/strbuf.c, the one growable buffer: text and
 * binary appends (response bodies, YAML output and downloads hold NULs and
 * large data), the empty and reset states, detaching, and that an all-zero
 * struct is an empty buffer (request.c clears its attempts with memset).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/strbuf.h"

static void test_appends(void **state)
{
	(void)state;
	kft_strbuf b;
	kft_strbuf_init(&b);
	assert_string_equal(kft_strbuf_str(&b), "");
	kft_strbuf_puts(&b, "ab");
	kft_strbuf_putc(&b, 'c');
	kft_strbuf_printf(&b, "-%d-%s", 42, "x");
	kft_strbuf_putn(&b, "yz!", 2);
	assert_string_equal(kft_strbuf_str(&b), "abc-42-xyz");
	assert_int_equal(b.len, 10);
	kft_strbuf_reset(&b);
	assert_string_equal(kft_strbuf_str(&b), "");
	assert_int_equal(b.len, 0);
	kft_strbuf_puts(&b, "again");
	char *s = kft_strbuf_detach(&b);
	assert_string_equal(s, "again");
	free(s);
	assert_int_equal(b.len, 0);
	assert_string_equal(kft_strbuf_str(&b), "");
	kft_strbuf_free(&b);
}

static void test_binary_and_growth(void **state)
{
	(void)state;
	kft_strbuf b;
	memset(&b, 0, sizeof(b)); /* as kft_strbuf_init leaves it */
	static const char chunk[] = {'a', '\0', 'b', '\0'};
	for (int i = 0; i < 100000; i++)
		kft_strbuf_putn(&b, chunk, sizeof(chunk));
	assert_false(b.failed);
	assert_int_equal(b.len, 400000);
	assert_true(b.cap > b.len);
	assert_int_equal(b.buf[b.len], '\0');
	assert_memory_equal(b.buf + 399996, chunk, sizeof(chunk));
	/* A zero-length append makes "" of an empty buffer (never NULL). */
	kft_strbuf_free(&b);
	assert_null(b.buf);
	kft_strbuf_putn(&b, "", 0);
	assert_non_null(b.buf);
	assert_string_equal(b.buf, "");
	kft_strbuf_free(&b);
}

/* The capped collector libcurl writes replies into (s3.c, mlflow.c, fetch.c):
 * every byte up to max is kept, and the first write past it is refused whole
 * (0, which ends a transfer) and remembered. */
static void test_capped(void **state)
{
	(void)state;
	kft_strbuf_capped c = {.max = 10};
	kft_strbuf_init(&c.text);
	char six[] = "abcdef", four[] = "ghij";
	assert_int_equal(kft_strbuf_capped_write(six, 1, 6, &c), 6);
	assert_int_equal(kft_strbuf_capped_write(four, 2, 2, &c), 4);
	assert_false(c.over);
	assert_string_equal(kft_strbuf_str(&c.text), "abcdefghij");
	assert_int_equal(kft_strbuf_capped_write(four, 1, 1, &c), 0);
	assert_true(c.over);
	assert_int_equal(c.text.len, 10);
	kft_strbuf_free(&c.text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_appends),
	        cmocka_unit_test(test_binary_and_growth),
	        cmocka_unit_test(test_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
