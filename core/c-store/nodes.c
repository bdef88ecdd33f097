/* The node arena: memory, hashing, the unique table, limits, node creation, traversals.
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

/* -- memory ---------------------------------------------------------------------------- */

/* Growth step of the arrays: geometric, by half (less slack than doubling, which matters
 * at hundreds of millions of segments). */
static size_t grown(size_t cap, size_t need)
{
    if (cap < 16)
        cap = 16;
    while (cap < need)
        cap += cap / 2;
    return cap;
}

static int resize(void **p, size_t count, size_t size)
{
    void *q = PyMem_Realloc(*p, count * size);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q;
    return 0;
}

/* Make room for `need` elements of `size` bytes in *p (capacity *cap). */
static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = grown(*cap, need);
    if (resize(p, cap2, size) < 0)
        return -1;
    *cap = cap2;
    return 0;
}

static int vec_push(IntVec *v, int32_t x)
{
    if (reserve((void **)&v->v, &v->cap, v->n + 1, sizeof(int32_t)) < 0)
        return -1;
    v->v[v->n++] = x;
    return 0;
}

/* The per-node arrays share the capacity cap_nodes. */
static int reserve_nodes(Store *S, size_t need)
{
    if (need <= S->cap_nodes)
        return 0;
    size_t cap = grown(S->cap_nodes, need);
    if (resize((void **)&S->rec, cap, sizeof(NodeRec)) < 0
        || resize((void **)&S->neg, cap, sizeof(int32_t)) < 0
        || reserve((void **)&S->block, &S->cap_blocks, (cap >> BLOCK_BITS) + 1,
                   sizeof(uint64_t)) < 0)
        return -1;
    S->cap_nodes = cap;
    return 0;
}

/* -- hashing --------------------------------------------------------------------------- */

static inline uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static uint32_t node_hash(int32_t f, const Seg *s, size_t k)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint32_t)f;
    for (size_t i = 0; i < k; i++) {
        h ^= ((uint64_t)(uint32_t)s[i].end << 32) | (uint32_t)s[i].child;
        h *= 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    return (uint32_t)mix64(h);
}

static inline size_t pair_hash(int32_t a, int32_t b)
{
    return (size_t)mix64(((uint64_t)(uint32_t)a << 32) | (uint32_t)b);
}

/* -- unique table ---------------------------------------------------------------------- */

static inline int varint_put(uint8_t *p, uint32_t v)
{
    int k = 0;
    while (v >= 0x80) {
        p[k++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[k++] = (uint8_t)v;
    return k;
}

/* Whether node n is (f, s[0..k)). */
static int node_is(const Store *S, int32_t n, int32_t f, const Seg *s, size_t k)
{
    if (node_feat(S, n) != f)
        return 0;
    SegIt it;
    size_t i = 0;
    seg_begin(S, n, &it);
    while (seg_next(&it))
        if (i == k || it.end != s[i].end || it.child != s[i].child)
            return 0;
        else
            i++;
    return i == k;
}

#define TAG(h) ((uint8_t)((h) >> 24))

/* The node (f, s[0..k)) or -1; *slot is where to insert it when absent. */
static int32_t unique_find(Store *S, int32_t f, const Seg *s, size_t k, uint32_t h, size_t *slot)
{
    uint8_t tag = TAG(h);
    for (size_t i = h & S->unique_mask;; i = (i + 1) & S->unique_mask) {
        uint32_t id = S->uid[i];
        if (id == 0) {
            *slot = i;
            return -1;
        }
        if (S->utag[i] == tag && node_is(S, (int32_t)id, f, s, k))
            return (int32_t)id;
    }
}

/* Fill the empty unique table uid/utag of cap slots with nodes 2 .. n_nodes - 1, their
 * hashes recomputed from their codes (the table keeps only 8 bits of each); buf has room
 * for max_states segments. */
static void unique_fill(Store *S, uint32_t *uid, uint8_t *utag, size_t cap, Seg *buf)
{
    for (size_t n = 2; n < S->n_nodes; n++) {
        size_t k = node_segs(S, (int32_t)n, buf);
        uint32_t h = node_hash(node_feat(S, (int32_t)n), buf, k);
        size_t i = h & (cap - 1);
        while (uid[i] != 0)
            i = (i + 1) & (cap - 1);
        uid[i] = (uint32_t)n;
        utag[i] = TAG(h);
    }
}

/* Replace the unique table by one of cap slots (a power of two) holding the same nodes. */
static int unique_build(Store *S, size_t cap)
{
    uint32_t *uid = PyMem_Calloc(cap, sizeof(uint32_t));
    uint8_t *utag = PyMem_Malloc(cap);
    Seg *buf = PyMem_Malloc((size_t)S->max_states * sizeof(Seg));
    if (uid == NULL || utag == NULL || buf == NULL) {
        PyMem_Free(uid);
        PyMem_Free(utag);
        PyMem_Free(buf);
        PyErr_NoMemory();
        return -1;
    }
    unique_fill(S, uid, utag, cap, buf);
    PyMem_Free(buf);
    PyMem_Free(S->uid);
    PyMem_Free(S->utag);
    S->uid = uid;
    S->utag = utag;
    S->unique_mask = cap - 1;
    S->unique_used = S->n_nodes - 2;
    return 0;
}

/* Double an open-addressing table of slots (a threshold's memo). */
static int slots_grow(Slot **slots, size_t *mask)
{
    size_t cap = 2 * (*mask + 1);
    Slot *t = PyMem_Malloc(cap * sizeof(Slot));
    if (t == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(t, 0xff, cap * sizeof(Slot));
    for (size_t j = 0; j <= *mask; j++) {
        Slot e = (*slots)[j];
        if (e.id < 0)
            continue;
        size_t i = e.hash & (cap - 1);
        while (t[i].id >= 0)
            i = (i + 1) & (cap - 1);
        t[i] = e;
    }
    PyMem_Free(*slots);
    *slots = t;
    *mask = cap - 1;
    return 0;
}

/* -- limits ---------------------------------------------------------------------------- */

static double monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Count one unit of work; every TICK_MASK + 1 units check signals and the deadline, and let
 * other Python threads run for a moment (a progress bar's clock; they must not use this
 * store meanwhile: a call of it may be half done). */
static int tick(Store *S)
{
    if ((++S->ticks & TICK_MASK) != 0)
        return 0;
    Py_BEGIN_ALLOW_THREADS
    Py_END_ALLOW_THREADS
    if (PyErr_CheckSignals() < 0)
        return -1;
    if (S->has_deadline && monotonic_now() > S->deadline) {
        PyErr_SetObject(S->error, S->time_message);
        return -1;
    }
    return 0;
}

/* -- nodes ----------------------------------------------------------------------------- */

/* Most bytes a node's code takes beside SEG_BYTES per segment: its form's byte and, in the
 * dictionary form, the DICT_MAX children (a segment then takes at most 1 + 5 bytes). */
#define CODE_BYTES (1 + 5 * DICT_MAX)
#define SEG_BYTES 10

/* Write the code of node n's segments s[0..k) at p (see SegIt); returns its length. */
static size_t encode_segs(uint8_t *p, int32_t n, const Seg *s, size_t k)
{
    int32_t kids[DICT_MAX], prev;
    size_t d = 0, i, j;
    for (i = 0; i < k && d <= DICT_MAX; i++) {
        for (j = 0; j < d && kids[j] != s[i].child; j++)
            ;
        if (j == d) {
            if (d == DICT_MAX) {
                d++; /* too many: the plain form */
                break;
            }
            kids[d++] = s[i].child;
        }
    }
    uint8_t *q = p;
    if (d > DICT_MAX) {
        *q++ = 0;
        for (i = 0; i < k; i++) {
            q += varint_put(q, (uint32_t)(s[i].end - (i ? s[i - 1].end : 0) - 1));
            q += varint_put(q, child_code(s[i].child, n));
        }
        return (size_t)(q - p);
    }
    for (i = 1; i < d; i++) /* by decreasing id: decision nodes, then true, false, GAP */
        for (j = i; j > 0 && kids[j - 1] < kids[j]; j--) {
            int32_t t = kids[j];
            kids[j] = kids[j - 1];
            kids[j - 1] = t;
        }
    *q++ = (uint8_t)d;
    for (i = 0, prev = n; i < d; i++) {
        q += varint_put(q, child_code(kids[i], prev));
        if (kids[i] > 1)
            prev = kids[i];
    }
    for (i = 0; i < k; i++) {
        uint32_t len = (uint32_t)(s[i].end - (i ? s[i - 1].end : 0) - 1);
        for (j = 0; kids[j] != s[i].child; j++)
            ;
        *q++ = (uint8_t)((len < 15 ? len : 15) | j << 4);
        if (len >= 15)
            q += varint_put(q, len - 15);
    }
    return (size_t)(q - p);
}

static int32_t create(Store *S, int32_t f, const Seg *s, size_t k, uint32_t h, size_t slot)
{
    if (S->max_nodes >= 0 && (long long)S->n_nodes - 2 >= S->max_nodes) {
        PyErr_SetObject(S->error, S->nodes_message);
        return ERR;
    }
    if (S->n_nodes >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many decision-graph nodes");
        return ERR;
    }
    if (tick(S) < 0 || reserve_nodes(S, S->n_nodes + 1) < 0
        || reserve((void **)&S->arena, &S->cap_arena, S->n_arena + CODE_BYTES + k * SEG_BYTES,
                   1) < 0)
        return ERR;
    size_t n = S->n_nodes;
    if ((n & (BLOCK_NODES - 1)) == 0)
        S->block[n >> BLOCK_BITS] = S->n_arena;
    uint64_t rel = S->n_arena - S->block[n >> BLOCK_BITS];
    if (rel > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "decision-graph nodes with too many segments");
        return ERR;
    }
    int32_t r = S->rank[f];
    int ordered = 1;
    for (size_t i = 0; i < k; i++) {
        int32_t c = s[i].child;
        if (c > 1 && (!node_ord(S, c) || S->rank[node_feat(S, c)] <= r))
            ordered = 0;
    }
    S->rec[n] = (NodeRec){(uint32_t)rel, ordered ? f : f | UNORDERED};
    S->neg[n] = -1;
    S->n_arena += encode_segs(S->arena + S->n_arena, (int32_t)n, s, k);
    S->n_nodes = n + 1;
    S->uid[slot] = (uint32_t)n;
    S->utag[slot] = TAG(h);
    /* at most three quarters full: 5 bytes a slot, so about 9 a node on average */
    if (4 * ++S->unique_used > 3 * (S->unique_mask + 1)
        && unique_build(S, 2 * (S->unique_mask + 1)) < 0)
        return ERR;
    return (int32_t)n;
}

/* The reduced, hash-consed node for canonical segments s[0..k) (PyStore.make). */
static int32_t make_node(Store *S, int32_t f, const Seg *s, size_t k)
{
    int32_t only = GAP;
    size_t i;
    for (i = 0; i < k; i++) {
        int32_t c = s[i].child;
        if (c == GAP)
            continue;
        if (only == GAP)
            only = c;
        else if (c != only)
            break;
    }
    if (i == k) { /* at most one feasible child: the node is that child */
        if (only == GAP) {
            PyErr_SetString(PyExc_ValueError, "a decision node needs at least one feasible state");
            return ERR;
        }
        return only;
    }
    uint32_t h = node_hash(f, s, k);
    size_t slot;
    int32_t n = unique_find(S, f, s, k, h, &slot);
    return n >= 0 ? n : create(S, f, s, k, h, slot);
}

/* Append a segment to the list starting at scratch[base], merging equal neighbours. */
static int push_seg(Store *S, size_t base, int32_t end, int32_t child)
{
    if (S->n_scratch > base && S->scratch[S->n_scratch - 1].child == child) {
        S->scratch[S->n_scratch - 1].end = end;
        return 0;
    }
    if (reserve((void **)&S->scratch, &S->cap_scratch, S->n_scratch + 1, sizeof(Seg)) < 0)
        return -1;
    S->scratch[S->n_scratch++] = (Seg){end, child};
    return 0;
}

/* -- traversal ------------------------------------------------------------------------- */

/* An empty set of node ids for a traversal of the store (freed with PyMem_Free(V->w)). */
static int seen_init(Store *S, Seen *V)
{
    V->w = PyMem_Calloc(S->n_nodes / 64 + 1, sizeof(uint64_t));
    if (V->w == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int cmp_int32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Start a traversal's node list with the two leaves, marked seen. */
static int with_leaves(Seen *V, IntVec *out)
{
    for (int32_t leaf = 0; leaf < 2; leaf++) {
        seen_add(V, leaf);
        if (vec_push(out, leaf) < 0)
            return -1;
    }
    return 0;
}

/* Depth-first from the nodes already in `out` (in V): append every node reachable from
 * them, skipping nodes for which skip_known says neg is known. */
static int reach(Store *S, IntVec *out, Seen *V, int skip_known)
{
    IntVec stack = {NULL, 0, 0};
    for (size_t i = 0; i < out->n; i++)
        if (vec_push(&stack, out->v[i]) < 0)
            goto fail;
    while (stack.n) {
        SegIt it;
        seg_begin(S, stack.v[--stack.n], &it);
        while (seg_next(&it)) {
            int32_t c = it.child;
            if (c == GAP || (skip_known && S->neg[c] >= 0) || !seen_add(V, c))
                continue;
            if (vec_push(&stack, c) < 0 || vec_push(out, c) < 0)
                goto fail;
        }
    }
    PyMem_Free(stack.v);
    return 0;
fail:
    PyMem_Free(stack.v);
    return -1;
}

/* Append the nodes below the roots (roots included, each once) to out, in ascending id
 * order: children first (PyStore.reachable). */
static int below(Store *S, const int32_t *roots, size_t n_roots, IntVec *out)
{
    Seen V;
    if (seen_init(S, &V) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n_roots; i++)
        if (seen_add(&V, roots[i]) && vec_push(out, roots[i]) < 0)
            rc = -1;
    if (rc == 0)
        rc = reach(S, out, &V, 0);
    PyMem_Free(V.w);
    if (rc == 0)
        qsort(out->v, out->n, sizeof(int32_t), cmp_int32);
    return rc;
}

/* PyStore.negate: the nodes still to negate, children first (ascending ids). */
