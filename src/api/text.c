/*
 * text.c - what the two readers (decode.c for JSON, yaml_load.c for YAML)
 * share: where a byte is (line and column), how a key is quoted in a
 * message, and the list of documents found. See yaml_internal.h.
 */
#include "yaml_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kft_text_cursor_advance(kft_text_cursor *c, const char *text, size_t target)
{
	for (; c->offset < target; c->offset++) {
		unsigned char b = (unsigned char)text[c->offset];
		int same_break = c->after_cr && b == '\n';

		c->after_cr = b == '\r';
		if (same_break)
			continue;
		if (b == '\n' || b == '\r') {
			c->line++;
			c->column = 1;
		} else if ((b & 0xC0) != 0x80) {
			c->column++;
		}
	}
}

void kft_text_position(const char *text, size_t offset, int *line, int *column)
{
	kft_text_cursor c = {0, 1, 1, 0};
	kft_text_cursor_advance(&c, text, offset);
	*line = c.line;
	*column = c.column;
}

void kft_describe_key(const char *key, size_t len, char buf[KFT_KEY_TEXT_MAX])
{
	size_t n = 0;

	buf[n++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];
		if (n > KFT_KEY_TEXT_MAX - 10) {
			memcpy(buf + n, "...", 3);
			n += 3;
			break;
		}
		if (c < 0x20 || c == 0x7F)
			n += (size_t)snprintf(buf + n, 5, "\\x%02x", c);
		else if (c == '"' || c == '\\')
			n += (size_t)snprintf(buf + n, 3, "\\%c", c);
		else
			buf[n++] = (char)c;
	}
	buf[n++] = '"';
	buf[n] = '\0';
}

int kft_doc_list_push(kft_doc_list *list, json_t *root, int line, int column, const char *source,
                      kft_error *err)
{
	kft_doc *grown;
	size_t n = list->count;

	if (n >= KFT_DECODE_MAX_DOCUMENTS) {
		json_decref(root);
		return kft_error_set(err, KFT_ELIMIT, "%s:%d:%d: more than %d documents", source,
		                     line, column, KFT_DECODE_MAX_DOCUMENTS);
	}
	/* Grow at powers of two: n is a power of two exactly when full. */
	if ((n & (n - 1)) == 0) {
		grown = realloc(list->items, (n ? 2 * n : 1) * sizeof(*grown));
		if (!grown) {
			json_decref(root);
			return kft_error_set(err, KFT_ENOMEM, "%s: out of memory", source);
		}
		list->items = grown;
	}
	list->items[n].root = root;
	list->items[n].line = line;
	list->count = n + 1;
	return 0;
}

void kft_doc_list_free(kft_doc_list *list)
{
	if (!list)
		return;
	for (size_t i = 0; i < list->count; i++)
		json_decref(list->items[i].root);
	free(list->items);
	list->items = NULL;
	list->count = 0;
}
