/* The C store's types (see core/_dgstore.c). */

#ifndef RFC_STORE_H
#define RFC_STORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <time.h>

#define LEAF (-1)
#define GAP (-1)
#define ERR (-2) /* error return of functions returning node ids (a Python error is set) */
#define OP_AND 0
#define OP_OR 1
#define TICK_MASK 0xFFFFu
#define MIN_TABLE 1024

typedef struct {
    int32_t end;
    int32_t child;
} Seg;

typedef struct {
    int32_t a, b, r; /* a == -1: empty slot */
} Entry;

typedef struct {
    Entry *slots;
    size_t mask; /* capacity - 1 (capacity a power of two) */
    size_t used;
} Table;

typedef struct {
    uint32_t off; /* the node's code is at arena + block[n >> BLOCK_BITS] + off */
    int32_t feat; /* feature tested (LEAF for the leaves), | UNORDERED for unordered nodes */
} NodeRec;

typedef struct {
    int32_t id; /* -1: empty slot */
    uint32_t hash;
} Slot;

typedef struct {
    int32_t end, a, b; /* a sub-problem of ordered Apply: a op b, for states before end */
} Job;

typedef struct {
    int32_t *v;
    size_t n, cap;
} IntVec;

#define N_LAYOUTS 64 /* cached search layouts (two per class: NRs and CEs) */

typedef struct {
    int32_t *roots; /* the root list it lays out (NULL: free slot) */
    size_t n_roots;
    int32_t *root_at; /* offsets of the roots */
    int32_t *code;
    size_t len;     /* of code */
    uint32_t epoch; /* of the current search: a node whose stamp differs has no sets yet */
    int width;      /* bytes per segment end in the nodes' code (1, 2 or 4) */
} Layout;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n_features;
    int32_t *n_states; /* per feature */
    int32_t *rank;     /* per feature */
    int32_t max_states; /* of any feature: room for any node's decoded segments */
    /* nodes: struct of arrays, capacity cap_nodes (see "Layout" in core/_dgstore.c) */
    size_t n_nodes, cap_nodes;
    NodeRec *rec;    /* what Apply reads of a node first: its feature and where its code is */
    int32_t *neg;    /* negation, -1 while unknown */
    uint64_t *block; /* per BLOCK_NODES nodes, the arena offset their offs count from */
    size_t cap_blocks;
    uint8_t *arena; /* the nodes' segment lists, encoded */
    size_t n_arena, cap_arena;
    /* tables */
    uint32_t *uid; /* unique table: node ids (0: empty slot) ... */
    uint8_t *utag; /* ... and 8 bits of their hashes: a probe decodes a node only on a match */
    size_t unique_mask, unique_used;
    Table computed[2];
    Seg *scratch; /* stack of segment lists under construction */
    size_t n_scratch, cap_scratch;
    Job *jobs; /* stack of the sub-problems of the Apply calls in progress */
    size_t n_jobs, cap_jobs;
    /* limits */
    long long max_nodes; /* -1: none */
    int has_deadline;
    double deadline;
    PyObject *error, *nodes_message, *time_message;
    unsigned int ticks;
    Layout layouts[N_LAYOUTS]; /* of min_deviations */
    struct Search *search;     /* min_deviations' buffers, kept between calls (NULL: none) */
    size_t next_layout;
} Store;

/* -- nodes: the compact layout ---------------------------------------------------------- */

#define UNORDERED (1 << 30) /* flag in a node's feat; features are below it */
#define BLOCK_BITS 12
#define BLOCK_NODES (1 << BLOCK_BITS)

static inline int32_t node_feat(const Store *S, int32_t n)
{
    int32_t v = S->rec[n].feat;
    return v < 0 ? v : v & ~UNORDERED;
}

static inline int node_ord(const Store *S, int32_t n)
{
    return S->rec[n].feat < 0 || !(S->rec[n].feat & UNORDERED);
}

static inline const uint8_t *node_code(const Store *S, int32_t n)
{
    return S->arena + S->block[n >> BLOCK_BITS] + S->rec[n].off;
}

/* A node's code (its segments; the leaves have none) comes in two forms, by the number d of
 * distinct children (GAP and the leaves included) in its first byte:
 * - 2 <= d <= DICT_MAX: the children, then one byte per segment (with a varint after it for
 *   long segments). The children are decision nodes by decreasing id, each a varint of its
 *   distance below the previous one (the first below the parent) plus 2, then the leaves
 *   and GAP as varints 2 (true), 1 (false), 0 (GAP). A segment's byte holds its child's index
 *   in the high nibble and its length minus one in the low one; 15 there means that a varint
 *   of the rest of the length follows. (Measured on Table 2's graphs: 25-30 % fewer bytes than
 *   the varint form, docs/decisions.md.)
 * - 0: per segment, a varint of its length minus one and a varint of its child (0: GAP, 1 and
 *   2: false and true, c >= 3: the node n - c + 2, children being older than their parent).
 * The last segment ends at the feature's number of states. */
#define DICT_MAX 16

typedef struct {
    const uint8_t *p;
    int32_t n, nst;     /* the node, its feature's number of states (0 for a leaf) */
    int32_t end, child; /* the current segment */
    int32_t d;          /* distinct children in the dictionary (0: plain form) */
    int32_t dict[DICT_MAX];
} SegIt;

static inline uint32_t varint_get(const uint8_t **p)
{
    const uint8_t *q = *p;
    uint32_t v = q[0] & 0x7f;
    int shift = 7;
    while (*q++ & 0x80) {
        v |= (uint32_t)(*q & 0x7f) << shift;
        shift += 7;
    }
    *p = q;
    return v;
}

/* A child's code: 0 GAP, 1 and 2 the leaves false and true, c >= 3 the decision node c - 2
 * below `base` (the parent, or in a dictionary the previous decision child). */
static inline uint32_t child_code(int32_t c, int32_t base)
{
    return c == GAP ? 0 : c <= 1 ? (uint32_t)c + 1 : (uint32_t)(base - c + 2);
}

static inline int32_t child_of(uint32_t code, int32_t base)
{
    return code == 0 ? GAP : code <= 2 ? (int32_t)code - 1 : base - (int32_t)(code - 2);
}

/* Start decoding node n's segments from its code at p (which collect reads at an old place). */
static inline void seg_begin_at(const Store *S, int32_t n, const uint8_t *p, SegIt *it)
{
    it->n = n;
    it->end = 0;
    it->d = 0;
    if (n < 2) {
        it->nst = 0;
        it->p = NULL;
        return;
    }
    it->nst = S->n_states[node_feat(S, n)];
    it->d = *p++;
    for (int32_t i = 0, prev = n; i < it->d; i++) {
        it->dict[i] = child_of(varint_get(&p), prev);
        if (it->dict[i] > 1)
            prev = it->dict[i];
    }
    it->p = p;
}

static inline void seg_begin(const Store *S, int32_t n, SegIt *it)
{
    seg_begin_at(S, n, n < 2 ? NULL : node_code(S, n), it);
}

/* Decode the next segment into it->end and it->child; 0 after the last one. */
static inline int seg_next(SegIt *it)
{
    if (it->end == it->nst)
        return 0;
    if (it->d) {
        uint8_t b = *it->p++;
        it->end += 1 + (b & 15);
        if ((b & 15) == 15)
            it->end += (int32_t)varint_get(&it->p);
        it->child = it->dict[b >> 4];
        return 1;
    }
    it->end += 1 + (int32_t)varint_get(&it->p);
    it->child = child_of(varint_get(&it->p), it->n);
    return 1;
}

/* The child of decision node n, whose code is p, at state `state`, decoding no more of the
 * code than that takes (evaluate walks many paths: the whole dictionary of every node on them
 * would cost more than the walk). */
static inline int32_t node_child_at(const uint8_t *p, int32_t n, int32_t state)
{
    int32_t d = *p++, end = 0;
    if (d == 0) {
        for (;;) {
            end += 1 + (int32_t)varint_get(&p);
            uint32_t c = varint_get(&p);
            if (end > state)
                return child_of(c, n);
        }
    }
    const uint8_t *dict = p;
    for (int32_t i = 0; i < d; i++) /* skip the dictionary */
        while (*p++ & 0x80)
            ;
    int32_t index;
    for (;;) {
        uint8_t b = *p++;
        end += 1 + (b & 15);
        if ((b & 15) == 15)
            end += (int32_t)varint_get(&p);
        if (end > state) {
            index = b >> 4;
            break;
        }
    }
    int32_t child = n;
    for (int32_t i = 0; i <= index; i++)
        child = child_of(varint_get(&dict), child);
    return child;
}

/* Node n's segments into out (room for max_states of them); returns their number. Not
 * inlined, here and below: a SegIt (about a hundred bytes) must stay out of the frames of
 * recursive callers. */
static __attribute__((noinline)) size_t node_segs(const Store *S, int32_t n, Seg *out)
{
    SegIt it;
    size_t k = 0;
    seg_begin(S, n, &it);
    while (seg_next(&it))
        out[k++] = (Seg){it.end, it.child};
    return k;
}

static __attribute__((noinline)) size_t node_nseg(const Store *S, int32_t n)
{
    SegIt it;
    size_t k = 0;
    seg_begin(S, n, &it);
    while (seg_next(&it))
        k++;
    return k;
}

/* A set of node ids, one bit each (traversals' visited marks). */
typedef struct {
    uint64_t *w;
} Seen;

static inline int seen_add(Seen *V, int32_t n) /* 1 if n was not in V yet */
{
    uint64_t bit = 1ULL << (n & 63), *w = V->w + (n >> 6);
    if (*w & bit)
        return 0;
    *w |= bit;
    return 1;
}

typedef struct {
    PyObject_HEAD
    Store *store;
    int kind; /* 0: feature, 1: ordered */
} Column;

static PyTypeObject StoreType;
static PyTypeObject ColumnType;

#endif
