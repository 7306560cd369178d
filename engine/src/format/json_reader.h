/*
 * json_reader.h — a small JSON reader for hostile input (safetensors headers).
 *
 * The text is parsed into a flat array of nodes; containers link their
 * children by index, so nothing points into the text and the document can be
 * walked without recursion.  Every limit is explicit: nesting depth, node
 * count, members per object, and the text length (< 4 GiB, since positions
 * are 32-bit).  Strings are decoded (all escapes, \uXXXX with surrogate
 * pairs) into a separate NUL-terminated arena; invalid UTF-8, lone
 * surrogates, raw control characters and \u0000 (which C strings cannot
 * carry) are rejected.  Duplicate keys in any object are rejected.
 */
#ifndef ZC_JSON_READER_H
#define ZC_JSON_READER_H

#include <stddef.h>
#include <stdint.h>

#define ZC_JSON_NONE UINT32_MAX

typedef enum {
    ZC_JSON_NULL = 0,
    ZC_JSON_FALSE,
    ZC_JSON_TRUE,
    ZC_JSON_NUMBER,
    ZC_JSON_STRING,
    ZC_JSON_ARRAY,
    ZC_JSON_OBJECT
} zc_json_type;

typedef struct {
    uint8_t type;      /* zc_json_type */
    uint8_t is_uint;   /* NUMBER: a non-negative integer that fits in 64 bits */
    uint32_t pos;      /* byte offset of the value in the text (for messages) */
    uint32_t len;      /* STRING: decoded bytes; NUMBER: bytes of its text */
    uint32_t child;    /* ARRAY/OBJECT: first element/key; object key: its value */
    uint32_t next;     /* next element (array) or next key (object) */
    uint32_t count;    /* ARRAY/OBJECT: elements/members */
    uint32_t str;      /* STRING: offset of the decoded text in doc->strings */
    uint64_t num;      /* NUMBER with is_uint: the value */
} zc_json_node;

typedef struct {
    uint32_t max_depth;   /* nesting of arrays/objects; the root container is depth 1 */
    uint32_t max_nodes;   /* values plus object keys */
    uint32_t max_members; /* members of one object (duplicate check is quadratic in it) */
} zc_json_limits;

typedef struct {
    const char *text;     /* the parsed text (borrowed, for number text in messages) */
    zc_json_node *nodes;  /* nodes[0] is the root */
    uint32_t node_count;
    uint32_t node_cap;
    char *strings;        /* decoded strings, each NUL-terminated */
    size_t strings_len;
    size_t strings_cap;
} zc_json_doc;

typedef struct {
    size_t pos;        /* byte offset of the fault in the text */
    char msg[192];     /* what was wrong there */
} zc_json_error;

/* Parse len bytes of text (one value, surrounded only by JSON whitespace).
 * @return 0 and a document to free with zc__json_free, or -1 with err filled
 * (and doc left empty).  Allocation failure is reported as -2. */
int zc__json_parse(const char *text, size_t len, const zc_json_limits *limits, zc_json_doc *doc,
                   zc_json_error *err);

void zc__json_free(zc_json_doc *doc);

/* The node at index (NULL for ZC_JSON_NONE or out of range). */
const zc_json_node *zc__json_node(const zc_json_doc *doc, uint32_t index);

/* The decoded, NUL-terminated text of a STRING node ("" for other types). */
const char *zc__json_str(const zc_json_doc *doc, const zc_json_node *node);

/* The value of obj's member named key (the first, if the text repeats it), or NULL when obj is
 * not an object or has no such member. */
const zc_json_node *zc__json_member(const zc_json_doc *doc, const zc_json_node *obj, const char *key);

/* The JSON spelling of a type, for messages ("string", "array", ...). */
const char *zc__json_type_name(int type);

/* Render s[0..len) for an error message: bytes below 0x20, 0x7f, '"' and
 * '\\' as escapes, cut (at a character boundary, with "...") to fit cap
 * bytes including the NUL.  Hostile names cannot then break a message or a
 * terminal. */
void zc__json_quote(const char *s, size_t len, char *out, size_t cap);

#endif /* ZC_JSON_READER_H */
