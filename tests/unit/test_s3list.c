/*
 * test_s3list.c - reading S3's ListObjectsV2 reply (src/local/s3list.c),
 * which the s3:// initializers page through to fetch every object under a
 * prefix, as upstream v2.3.0's (pkg/initializers/utils/opendal.py: a
 * recursive list, then each object). Shapes from S3's API reference.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "local/s3list.h"

static kft_status parse(const char *xml, kft_s3_list *l, kft_error *err)
{
	return kft_s3_list_parse(xml, strlen(xml), l, err);
}

static void test_a_page(void **state)
{
	(void)state;
	kft_s3_list l;
	kft_error err = {0};
	const char *xml =
	        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	        "<Name>b</Name><Prefix>m/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
	        "<IsTruncated>true</IsTruncated>"
	        "<Contents><Key>m/config.json</Key><Size>3</Size><ETag>&quot;x&quot;</ETag></"
	        "Contents>"
	        "<Contents><Key>m/a&amp;b &#x263A;&#65;.txt</Key><Size>1</Size></Contents>"
	        "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</"
	        "NextContinuationToken></ListBucketResult>";
	assert_int_equal(parse(xml, &l, &err), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.keys[0], "m/config.json");
	assert_string_equal(l.keys[1], "m/a&b \xe2\x98\xba"
	                               "A.txt");
	assert_true(l.truncated);
	assert_string_equal(l.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	kft_s3_list_free(&l);
}

static void test_last_and_empty_pages(void **state)
{
	(void)state;
	kft_s3_list l;
	kft_error err = {0};
	assert_int_equal(parse("<ListBucketResult><IsTruncated>false</IsTruncated>"
	                       "<Contents><Key>k</Key></Contents></ListBucketResult>",
	                       &l, &err),
	                 0);
	assert_int_equal(l.n, 1);
	assert_false(l.truncated);
	assert_null(l.next_token);
	kft_s3_list_free(&l);
	assert_int_equal(
	        parse("<ListBucketResult><KeyCount>0</KeyCount></ListBucketResult>", &l, &err), 0);
	assert_int_equal(l.n, 0);
	kft_s3_list_free(&l);
}

static void test_refused(void **state)
{
	(void)state;
	static const struct {
		const char *xml;
		kft_status want;
		const char *says;
	} cases[] = {
	        {"<Error><Code>AccessDenied</Code></Error>", KFT_EPARSE, "not a ListBucketResult"},
	        {"<ListBucketResult><Contents><Key>k</Contents>", KFT_EPARSE,
	         "<Key> is not closed"},
	        {"<ListBucketResult><Contents><Key>k</Key>", KFT_EPARSE,
	         "<Contents> is not closed"},
	        {"<ListBucketResult><Contents><Size>1</Size></Contents>", KFT_EPARSE,
	         "without <Key>"},
	        {"<ListBucketResult><Contents><Key></Key></Contents>", KFT_EPARSE,
	         "an empty <Key>"},
	        {"<ListBucketResult><Contents><Key>a&nope;</Key></Contents>", KFT_EPARSE,
	         "a bad entity"},
	        {"<ListBucketResult><Contents><Key>a&#0;</Key></Contents>", KFT_EPARSE,
	         "a bad entity"},
	        {"<ListBucketResult><Contents><Key>a<b/></Key></Contents>", KFT_EPARSE,
	         "unexpected markup"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		kft_s3_list l;
		kft_error err = {0};
		assert_int_equal(parse(cases[i].xml, &l, &err), cases[i].want);
		if (!strstr(err.message, cases[i].says))
			fail_msg("case %zu: %s", i, err.message);
		kft_s3_list_free(&l);
	}
	char big[4096] = "<ListBucketResult><Contents><Key>";
	memset(big + strlen(big), 'k', 1100);
	strcat(big, "</Key></Contents>");
	kft_s3_list l;
	kft_error err = {0};
	assert_int_equal(parse(big, &l, &err), KFT_ELIMIT);
	kft_s3_list_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_page),
	        cmocka_unit_test(test_last_and_empty_pages),
	        cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
