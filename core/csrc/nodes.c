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
    if (resize((void **)&S->node, cap, sizeof(Node)) < 0
        || resize((void **)&S->neg, cap, sizeof(int32_t)) < 0
        || resize((void **)&S->mark, cap, sizeof(uint32_t)) < 0)
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

/* The node (f, s[0..k)) or -1; *slot is where to insert it when absent. */
static int32_t unique_find(Store *S, int32_t f, const Seg *s, size_t k, uint32_t h, size_t *slot)
{
    size_t i = h & S->unique_mask;
    for (;;) {
        Slot e = S->unique[i];
        if (e.id < 0) {
            *slot = i;
            return -1;
        }
        const Node *d = &S->node[e.id];
        if (e.hash == h && d->feat == f && d->nseg == k
            && memcmp(S->segs + d->first, s, k * sizeof(Seg)) == 0)
            return e.id;
        i = (i + 1) & S->unique_mask;
    }
}

/* Double an open-addressing table of slots (the unique table, a threshold's memo). */
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

static int unique_grow(Store *S)
{
    return slots_grow(&S->unique, &S->unique_mask);
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
        || reserve((void **)&S->segs, &S->cap_segs, S->n_segs + k, sizeof(Seg)) < 0)
        return ERR;
    size_t n = S->n_nodes;
    int32_t r = S->rank[f];
    uint8_t ordered = 1;
    for (size_t i = 0; i < k; i++) {
        int32_t c = s[i].child;
        if (c > 1 && (!S->node[c].ord || S->rank[S->node[c].feat] <= r))
            ordered = 0;
    }
    memcpy(S->segs + S->n_segs, s, k * sizeof(Seg));
    S->node[n] = (Node){(int64_t)S->n_segs, f, (uint32_t)k, ordered};
    S->neg[n] = -1;
    S->mark[n] = 0;
    S->n_segs += k;
    S->n_nodes = n + 1;
    S->unique[slot] = (Slot){(int32_t)n, h};
    if (2 * (S->n_nodes - 2) > S->unique_mask + 1 && unique_grow(S) < 0)
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

static uint32_t next_epoch(Store *S)
{
    if (++S->epoch == 0) { /* wrapped: forget all marks */
        memset(S->mark, 0, S->n_nodes * sizeof(uint32_t));
        S->epoch = 1;
    }
    return S->epoch;
}

static int cmp_int32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Depth-first from the nodes already in `out` (marked with epoch ep): append every node
 * reachable from them, skipping nodes for which skip_known says neg is known. */
static int reach(Store *S, IntVec *out, uint32_t ep, int skip_known)
{
    IntVec stack = {NULL, 0, 0};
    for (size_t i = 0; i < out->n; i++)
        if (vec_push(&stack, out->v[i]) < 0)
            goto fail;
    while (stack.n) {
        int32_t n = stack.v[--stack.n];
        for (int64_t i = S->node[n].first; i < S->node[n].first + S->node[n].nseg; i++) {
            int32_t c = S->segs[i].child;
            if (c == GAP || S->mark[c] == ep || (skip_known && S->neg[c] >= 0))
                continue;
            S->mark[c] = ep;
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

/* PyStore.negate: the nodes still to negate, children first (ascending ids). */
