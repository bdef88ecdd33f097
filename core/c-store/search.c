/* Minimal deviation sets (PyStore.min_deviations): NRs and CEs.
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

/* -- minimal deviation sets (PyStore.min_deviations: NRs and CEs) ----------------------- */

typedef struct {
    int32_t node;  /* offset in the layout's code */
    uint64_t held; /* features deviating from the instance so far, bit f for feature f */
} DevState;

typedef struct {
    DevState *v;
    size_t n, cap;
} DevVec;

/* The sets expanded at each node, for the search's subsumption test, in the order expanded
 * (so by level): the first in the node's layout header (most nodes hold one), the next
 * INLINE_SETS in the node's record, one cache line with its counts, the rest in an array in
 * a shared pool. A set of level k (k features) is subsumed at a node
 * by an earlier level's set inside it, or by an equal set of level k: the node's earlier
 * sets are scanned for a subset, its level-k ones for equality. Most nodes of a search hold
 * few sets, read in the one line; a node holding thousands streams them from its array
 * (chunk lists were twice as slow: docs/decisions.md, "NR/CE search in C"). A full array
 * moves to the pool's end at twice the size (the pool wastes at most half). */
#define INLINE_SETS 5

typedef struct {
    uint32_t n, cap;    /* sets held; room in the pool array */
    uint32_t n_earlier; /* sets of levels before `level` */
    uint32_t level;     /* the level n_earlier was counted at */
    size_t at;          /* offset of the node's array in the pool */
    uint64_t first[INLINE_SETS];
} NodeSets; /* 64 bytes */

typedef struct {
    NodeSets *v;
    size_t n, cap;
    uint64_t *pool;
    size_t pool_n, pool_cap;
} Links; /* NodeSets per node with more than one expanded set, indexed from its layout header */

static int dev_push(DevVec *v, int32_t node, uint64_t held)
{
    if (reserve((void **)&v->v, &v->cap, v->n + 1, sizeof(DevState)) < 0)
        return -1;
    v->v[v->n++] = (DevState){node, held};
    return 0;
}

/* The graph below a root list laid out for the search: the nodes breadth first from the
 * roots, each at an offset of `code` (offsets 0 and 1 standing for false and true), a
 * multiple of NODE_ALIGN words, as
 *   word 0: feature | number of segments << 8,
 *   word 1: stamp (the epoch of the search that last expanded a set there),
 *   word 2: head (that search's record of its further sets, in Links; -1: none),
 *   words 3-4: the first set that search expanded there,
 *   then the segments' ends, `width` bytes each (the fewest holding every state count),
 *   then the segments' children as offsets (GAP kept),
 * and SLACK_WORDS of zeros after the last node (for 16-byte loads of its ends). The search
 * is bound by memory traffic: a node is read once per search, at random in a graph of up to
 * gigabytes. So a node holds what a visit reads in as few cache lines as can be:
 *   - ends apart from children, in bytes: a visit reads the header and ends, and at most
 *     nodes only the child of the instance's state (a deviation there would hold a found
 *     set); about half the bytes of (end, child) pairs of ints;
 *   - starts aligned to NODE_ALIGN words, so that a small node's header and ends share one
 *     line;
 *   - the first set in the header: most nodes reached hold one set per search, whose record
 *     would be one more line written and read.
 * Breadth first, the few thousand nodes near the roots, which most searches reach, are
 * packed in the layout's first megabytes (depth first they are spread over all of it).
 * Built by prepare or on first use per root list, kept until collect renumbers the nodes.
 * Measurements behind this layout: docs/decisions.md, "NR/CE search in C". */
#define NODE_ALIGN 8
#define NODE_HEADER 5
#define SLACK_WORDS 4
#define MAX_SEGMENTS ((1 << 24) - 1) /* 24 bits of word 0 */

static inline size_t end_words(size_t nseg, int width)
{
    return (nseg * (size_t)width + 3) / 4;
}

static inline size_t node_words(size_t nseg, int width)
{
    size_t w = NODE_HEADER + end_words(nseg, width) + nseg;
    return (w + NODE_ALIGN - 1) / NODE_ALIGN * NODE_ALIGN;
}

/* Memory for a search layout's code, on 2 MiB pages where the kernel grants them on request
 * (transparent huge pages in "madvise" mode): the searches read it at random, and with 4 KiB
 * pages nearly every node read misses the TLB. Advice only; freed with free(). Only the
 * layout: advising the node arrays and tables as well was slower (docs/decisions.md,
 * "NR/CE search in C"). */
#define HUGE_PAGE ((size_t)2 << 20)

static void *code_alloc(size_t bytes)
{
    void *p = NULL;
    size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : 64;
    size_t size = (bytes + align - 1) / align * align;
    if (posix_memalign(&p, align, size ? size : align) != 0) {
        PyErr_NoMemory();
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    if (align == HUGE_PAGE)
        madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
}

static void layout_free(Layout *L)
{
    PyMem_Free(L->roots);
    PyMem_Free(L->root_at);
    free(L->code);
    memset(L, 0, sizeof *L);
}

/* Give node n (unless a gap, or placed already) the next offset of a layout, at *end. */
static int place(Store *S, int32_t n, int width, int32_t *off, int64_t *end, IntVec *order)
{
    if (n == GAP || off[n] >= 0)
        return 0;
    size_t nseg = node_nseg(S, n);
    if (nseg > MAX_SEGMENTS) {
        PyErr_SetString(PyExc_OverflowError,
                        "node with too many segments for the deviation search");
        return -1;
    }
    off[n] = (int32_t)*end;
    *end += (int64_t)node_words(nseg, width);
    if (*end > INT32_MAX - SLACK_WORDS) {
        PyErr_SetString(PyExc_OverflowError, "graph too large for the deviation search");
        return -1;
    }
    return vec_push(order, n);
}

static int layout_build(Store *S, const int32_t *roots, size_t n_roots, Layout *L)
{
    int32_t *off = PyMem_Malloc(S->n_nodes * sizeof(int32_t));
    IntVec order = {NULL, 0, 0};
    Seg *buf = NULL;
    if (off == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memset(off, 0xff, S->n_nodes * sizeof(int32_t)); /* -1: not placed */
    off[0] = 0;
    off[1] = 1;
    int32_t most_states = 0;
    for (Py_ssize_t f = 0; f < S->n_features; f++)
        if (S->n_states[f] > most_states)
            most_states = S->n_states[f];
    int width = most_states <= UINT8_MAX ? 1 : most_states <= UINT16_MAX ? 2 : 4;
    int64_t end = NODE_ALIGN; /* the leaves' offsets 0 and 1 below the first node */
    for (size_t i = 0; i < n_roots; i++)
        if (place(S, roots[i], width, off, &end, &order) < 0)
            goto fail;
    for (size_t head = 0; head < order.n; head++) { /* breadth first: order is the queue */
        SegIt it;
        seg_begin(S, order.v[head], &it);
        while (seg_next(&it))
            if (place(S, it.child, width, off, &end, &order) < 0)
                goto fail;
    }
    end += SLACK_WORDS;
    L->code = code_alloc((size_t)end * sizeof(int32_t));
    L->roots = PyMem_Malloc((n_roots ? n_roots : 1) * sizeof(int32_t));
    L->root_at = PyMem_Malloc((n_roots ? n_roots : 1) * sizeof(int32_t));
    buf = PyMem_Malloc((size_t)S->max_states * sizeof(Seg));
    if (L->code == NULL || L->roots == NULL || L->root_at == NULL || buf == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memset(L->code, 0, (size_t)end * sizeof(int32_t)); /* padding, and stamps: no search yet */
    L->code[0] = L->code[1] = LEAF;
    for (size_t k = 0; k < order.n; k++) {
        size_t nseg = node_segs(S, order.v[k], buf);
        int32_t *at = L->code + off[order.v[k]];
        at[0] = node_feat(S, order.v[k]) | (int32_t)(nseg << 8);
        void *ends = at + NODE_HEADER;
        int32_t *kids = at + NODE_HEADER + end_words(nseg, width);
        for (size_t i = 0; i < nseg; i++) {
            Seg g = buf[i];
            if (width == 1)
                ((uint8_t *)ends)[i] = (uint8_t)g.end;
            else if (width == 2)
                ((uint16_t *)ends)[i] = (uint16_t)g.end;
            else
                ((int32_t *)ends)[i] = g.end;
            kids[i] = g.child == GAP ? GAP : off[g.child];
        }
    }
    L->len = (size_t)end;
    L->width = width;
    memcpy(L->roots, roots, n_roots * sizeof(int32_t));
    for (size_t i = 0; i < n_roots; i++)
        L->root_at[i] = off[roots[i]];
    L->n_roots = n_roots;
    PyMem_Free(buf);
    PyMem_Free(off);
    PyMem_Free(order.v);
    return 0;
fail:
    PyMem_Free(buf);
    PyMem_Free(off);
    PyMem_Free(order.v);
    layout_free(L);
    return -1;
}

/* Forget the search layouts (node ids are about to change). */
static void layouts_clear(Store *S)
{
    for (size_t i = 0; i < N_LAYOUTS; i++)
        layout_free(&S->layouts[i]);
}

/* The layout of a root list: cached, else built in the next slot (round robin). */
static Layout *layout_for(Store *S, const int32_t *roots, size_t n_roots)
{
    for (size_t i = 0; i < N_LAYOUTS; i++) {
        Layout *L = &S->layouts[i];
        if (L->code != NULL && L->n_roots == n_roots
            && memcmp(L->roots, roots, n_roots * sizeof(int32_t)) == 0)
            return L;
    }
    Layout *L = &S->layouts[S->next_layout++ % N_LAYOUTS];
    layout_free(L);
    return layout_build(S, roots, n_roots, L) < 0 ? NULL : L;
}

/* 1 when some set of v[0..n) lies inside `held`; branch-free blocks, an exit per block. */
static int any_inside(const uint64_t *v, size_t n, uint64_t held)
{
    uint64_t not_held = ~held;
    int hit = 0;
    size_t i = 0;
    for (; i + 8 <= n && !hit; i += 8)
        for (size_t j = i; j < i + 8; j++)
            hit |= (v[j] & not_held) == 0;
    for (; i < n; i++)
        hit |= (v[i] & not_held) == 0;
    return hit;
}

static int any_equal(const uint64_t *v, size_t n, uint64_t held)
{
    int hit = 0;
    for (size_t i = 0; i < n; i++)
        hit |= v[i] == held;
    return hit;
}

static int expanded_more(Layout *L, Links *E, int32_t node, uint64_t held, uint32_t k);

/* Record that `held` (level k: k features) is expanded at the node at offset `node` unless a
 * set inside it already was: returns 1 when recorded, 0 when subsumed, -1 on error. Inline
 * for a node's first set of the search (most nodes'). */
static inline int expanded_add(Layout *L, Links *E, int32_t node, uint64_t held, uint32_t k)
{
    int32_t *at = L->code + node;
    if ((uint32_t)at[1] != L->epoch) {
        at[1] = (int32_t)L->epoch;
        at[2] = -1;
        memcpy(at + 3, &held, sizeof held);
        return 1;
    }
    return expanded_more(L, E, node, held, k);
}

/* expanded_add at a node holding sets already. */
static int expanded_more(Layout *L, Links *E, int32_t node, uint64_t held, uint32_t k)
{
    int32_t *at = L->code + node;
    uint64_t first;
    memcpy(&first, at + 3, sizeof first);
    if ((first & ~held) == 0) /* inside held (of an earlier level), or equal (of level k) */
        return 0;
    NodeSets *ns;
    if (at[2] < 0) {
        if (E->n >= INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "deviation search too large");
            return -1;
        }
        if (reserve((void **)&E->v, &E->cap, E->n + 1, sizeof(NodeSets)) < 0)
            return -1;
        at[2] = (int32_t)E->n;
        ns = &E->v[E->n++];
        ns->n = ns->cap = ns->n_earlier = 0;
        ns->level = k;
        ns->at = 0;
    } else {
        ns = &E->v[at[2]];
        if (ns->level != k) {
            ns->n_earlier = ns->n;
            ns->level = k;
        }
        size_t n = ns->n, early = ns->n_earlier, in = n < INLINE_SETS ? n : INLINE_SETS;
        size_t in_early = early < INLINE_SETS ? early : INLINE_SETS;
        const uint64_t *rest = E->pool + ns->at;
        if (any_inside(ns->first, in_early, held) || any_equal(ns->first + in_early,
                                                               in - in_early, held))
            return 0;
        if (n > INLINE_SETS
            && (any_inside(rest, early - in_early, held)
                || any_equal(rest + (early - in_early), n - INLINE_SETS - (early - in_early),
                             held)))
            return 0;
    }
    if (ns->n < INLINE_SETS) {
        ns->first[ns->n++] = held;
        return 1;
    }
    size_t j = ns->n - INLINE_SETS;
    if (j == ns->cap) {
        uint32_t cap = ns->cap ? 2 * ns->cap : 8;
        if (reserve((void **)&E->pool, &E->pool_cap, E->pool_n + cap, sizeof(uint64_t)) < 0)
            return -1;
        memcpy(E->pool + E->pool_n, E->pool + ns->at, j * sizeof(uint64_t));
        ns->at = E->pool_n;
        ns->cap = cap;
        E->pool_n += cap;
    }
    E->pool[ns->at + j] = held;
    ns->n++;
    return 1;
}

/* Which sets hold a found one, for the search's level k: every set asked about has k or k + 1
 * features, and the found sets are those of earlier levels (fewer than k features, fixed
 * during the level) and those of level k found so far. A level-k set is held by a set with
 * k features only if equal to it, and by one with k + 1 only if it is that set minus one
 * feature: hash lookups in `fresh`. The answer is memoised per set in `memo` (many states
 * share a set): "holds one" for good, "holds none" with the number of level-k sets found
 * when it was given, valid while no more are (few are found per level, and a set is asked
 * about again and again: the k + 1 lookups of a deviation's set, each time its feature is
 * met, were a large share of the search's time). Both tables are open
 * addressing over 64-bit keys with a tag byte (0: empty; in `memo` 1: holds none, 2: holds
 * one) and a stamp (in `memo`: that count), cleared per level. */
typedef struct {
    uint64_t *keys;
    uint8_t *tags;
    uint32_t *stamps;
    size_t mask, used;
} SetTable;

static size_t set_slot(const SetTable *T, uint64_t key)
{
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & T->mask;
    while (T->tags[i] && T->keys[i] != key)
        i = (i + 1) & T->mask;
    return i;
}

static int set_put(SetTable *T, uint64_t key, uint8_t tag)
{
    if (2 * (T->used + 1) > T->mask + 1) { /* keep it at most half full */
        size_t cap = T->mask ? 2 * (T->mask + 1) : MIN_TABLE;
        SetTable N = {PyMem_Malloc(cap * sizeof(uint64_t)), PyMem_Calloc(cap, 1),
                      PyMem_Malloc(cap * sizeof(uint32_t)), cap - 1, 0};
        if (N.keys == NULL || N.tags == NULL || N.stamps == NULL) {
            PyMem_Free(N.keys);
            PyMem_Free(N.tags);
            PyMem_Free(N.stamps);
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; T->mask && i <= T->mask; i++)
            if (T->tags[i]) {
                size_t j = set_slot(&N, T->keys[i]);
                N.keys[j] = T->keys[i];
                N.tags[j] = T->tags[i];
                N.stamps[j] = T->stamps[i];
                N.used++;
            }
        PyMem_Free(T->keys);
        PyMem_Free(T->tags);
        PyMem_Free(T->stamps);
        *T = N;
    }
    size_t i = set_slot(T, key);
    if (!T->tags[i]) {
        T->used++;
        T->stamps[i] = 0; /* defined for every entry: rehashing copies it */
    }
    T->keys[i] = key;
    T->tags[i] = tag;
    return 0;
}

static uint8_t set_get(const SetTable *T, uint64_t key)
{
    return T->mask ? T->tags[set_slot(T, key)] : 0;
}

static void set_clear(SetTable *T)
{
    if (T->mask)
        memset(T->tags, 0, T->mask + 1);
    T->used = 0;
}

static void set_free(SetTable *T)
{
    PyMem_Free(T->keys);
    PyMem_Free(T->tags);
    PyMem_Free(T->stamps);
    memset(T, 0, sizeof *T);
}

/* The found sets of earlier levels by their two lowest features: a set can only lie inside
 * `held` if both are held's, so only the buckets of pairs of held's features are scanned
 * (about k^2/n^2 of the sets rather than k/n by the lowest feature alone, whose scans took
 * much of the search's time on large forests). Sets of one feature are a mask. */
typedef struct {
    uint64_t *v;
    size_t n, cap;
} SetVec;

typedef struct {
    SetVec *by_pair;     /* [64 * lowest + second lowest], allocated on first use */
    uint64_t second[64]; /* second[a]: bit b when the bucket of (a, b) is not empty */
    uint64_t singles;    /* the features that are found sets on their own */
    int empty;           /* the empty set was found (it lies inside every set) */
} Buckets;

static int buckets_add(Buckets *B, uint64_t set)
{
    if (set == 0) {
        B->empty = 1;
        return 0;
    }
    uint64_t rest = set & (set - 1);
    if (rest == 0) {
        B->singles |= set;
        return 0;
    }
    if (B->by_pair == NULL && (B->by_pair = PyMem_Calloc(64 * 64, sizeof(SetVec))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int a = __builtin_ctzll(set), c = __builtin_ctzll(rest);
    SetVec *b = &B->by_pair[64 * a + c];
    if (reserve((void **)&b->v, &b->cap, b->n + 1, sizeof(uint64_t)) < 0)
        return -1;
    b->v[b->n++] = set;
    B->second[a] |= (uint64_t)1 << c;
    return 0;
}

static int buckets_hold(const Buckets *B, uint64_t held)
{
    if (B->empty || (B->singles & held))
        return 1;
    if (B->by_pair == NULL)
        return 0;
    uint64_t not_held = ~held;
    for (uint64_t rest = held; rest; rest &= rest - 1) {
        int a = __builtin_ctzll(rest);
        /* rest holds held's features from a up: its others are the candidate seconds */
        for (uint64_t cs = B->second[a] & rest & (rest - 1); cs; cs &= cs - 1) {
            const SetVec *b = &B->by_pair[64 * a + __builtin_ctzll(cs)];
            for (size_t i = 0; i < b->n; i++)
                if ((b->v[i] & not_held) == 0)
                    return 1;
        }
    }
    return 0;
}

/* Empty the buckets, keeping their arrays. */
static void buckets_reset(Buckets *B)
{
    for (int a = 0; a < 64; a++) {
        for (uint64_t bs = B->second[a]; bs; bs &= bs - 1)
            B->by_pair[64 * a + __builtin_ctzll(bs)].n = 0;
        B->second[a] = 0;
    }
    B->singles = 0;
    B->empty = 0;
}

static void buckets_free(Buckets *B)
{
    for (int i = 0; B->by_pair != NULL && i < 64 * 64; i++)
        PyMem_Free(B->by_pair[i].v);
    PyMem_Free(B->by_pair);
    memset(B, 0, sizeof *B);
}

/* 1 when `held` (k features, or k + 1 when `next`) holds a found set, 0 when not, -1 on
 * error; `earlier` holds the found sets of the levels before k. */
static int holds(SetTable *memo, const SetTable *fresh, const Buckets *earlier, uint64_t held,
                 int next, uint32_t n_fresh)
{
    size_t i = memo->mask ? set_slot(memo, held) : 0;
    uint8_t tag = memo->mask ? memo->tags[i] : 0;
    if (tag == 2 || (tag == 1 && memo->stamps[i] == n_fresh))
        return tag == 2;
    int h = tag == 0 && buckets_hold(earlier, held); /* tag 1: none of the earlier levels' */
    if (!next)
        h = h || set_get(fresh, held);
    else
        for (uint64_t rest = held; rest && !h; rest &= rest - 1)
            h = set_get(fresh, held & ~(rest & -rest)) != 0;
    if (tag == 0) {
        if (set_put(memo, held, 1) < 0)
            return -1;
        i = set_slot(memo, held);
    }
    memo->tags[i] = h ? 2 : 1;
    memo->stamps[i] = n_fresh;
    return h;
}

static int cmp_deviation(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    int ca = __builtin_popcountll(a), cb = __builtin_popcountll(b);
    if (ca != cb)
        return ca - cb;
    return (a > b) - (a < b);
}

/* The number of ends of a node's n segments at or below `state`: the index of the segment
 * holding it (the segments partition the feature's states in order). */
static inline int32_t segment_of(const int32_t *at, int width, int32_t n, int32_t state)
{
    const void *ends = at + NODE_HEADER;
    int32_t i = 0;
    /* branch-free counts: the ends are few and the state's place unpredictable */
    if (width == 1) {
#ifdef __SSE2__
        /* 16 ends a step (one at a time was a large share of the search's time); the
         * bytes read past the ends are the node's own, or the layout's slack */
        __m128i s = _mm_set1_epi8((char)state);
        for (int32_t j = 0; j < n; j += 16) {
            __m128i e = _mm_loadu_si128((const __m128i *)((const uint8_t *)ends + j));
            unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(e, s), e));
            /* the ends ascend, so the ones are a prefix: the count is the first zero's place
             * (past n only when every end is at or below the state) */
            if (m != 0xFFFF) {
                i = j + __builtin_ctz(~m);
                return i < n ? i : n;
            }
        }
        return n;
#else
        for (int32_t j = 0; j < n; j++)
            i += ((const uint8_t *)ends)[j] <= state;
#endif
    } else if (width == 2)
        for (int32_t j = 0; j < n; j++)
            i += ((const uint16_t *)ends)[j] <= state;
    else
        for (int32_t j = 0; j < n; j++)
            i += ((const int32_t *)ends)[j] <= state;
    return i;
}

/* The found sets and their lookup tables during a search. */
typedef struct {
    uint64_t *v;
    size_t n, cap;
    size_t n_earlier; /* found at the levels before the current one (the first n_earlier) */
    SetTable memo, fresh;
    Buckets earlier;
} Found;

/* min_deviations' stacks, records and tables, kept by the store between calls: allocating
 * and growing them afresh each call cost a noticeable share of a call (cold memory, each
 * time). A call's found sets are its own (returned). Buffers past
 * KEEP_BYTES are freed after a call, so that one large search does not hold its memory. */
struct Search {
    DevVec level, later;
    Links E;
    Found F;
};
#define KEEP_BYTES ((size_t)16 << 20)

static void search_trim(struct Search *W, int all)
{
    if (all || W->level.cap * sizeof(DevState) > KEEP_BYTES) {
        PyMem_Free(W->level.v);
        W->level = (DevVec){NULL, 0, 0};
    }
    if (all || W->later.cap * sizeof(DevState) > KEEP_BYTES) {
        PyMem_Free(W->later.v);
        W->later = (DevVec){NULL, 0, 0};
    }
    if (all || W->E.cap * sizeof(NodeSets) + W->E.pool_cap * sizeof(uint64_t) > KEEP_BYTES) {
        PyMem_Free(W->E.v);
        PyMem_Free(W->E.pool);
        W->E = (Links){NULL, 0, 0, NULL, 0, 0};
    }
    if (all || (W->F.memo.mask + W->F.fresh.mask) * sizeof(uint64_t) > KEEP_BYTES) {
        set_free(&W->F.memo);
        set_free(&W->F.fresh);
    }
    if (all)
        buckets_free(&W->F.earlier);
}

/* Whether `held` holds a found set (held has the current level's count of features, or one
 * more when `next`). */
static inline int found_in(Found *F, uint64_t held, int next)
{
    return holds(&F->memo, &F->fresh, &F->earlier, held, next, (uint32_t)(F->n - F->n_earlier));
}

/* A state popped or reached: 1 when it is to be expanded (an inner node, its set holding no
 * found one), 0 when done with (at true, held, or at false: then a new found set), -1 on
 * error. */
static int settle(Found *F, int32_t node, uint64_t held)
{
    if (node == 1 || node == GAP)
        return 0;
    int h = found_in(F, held, 0);
    if (h)
        return h < 0 ? -1 : 0;
    if (node == 0) {
        if (reserve((void **)&F->v, &F->cap, F->n + 1, sizeof(uint64_t)) < 0
            || set_put(&F->fresh, held, 2) < 0)
            return -1;
        F->v[F->n++] = held;
        return 0;
    }
    return 1;
}

/* A state being expanded: its node, whose lines were prefetched when the lane moved there,
 * and its set, with the number of found sets when the set was last found to hold none
 * (asking again before more are found would give the same answer). */
typedef struct {
    int32_t node; /* DONE when the lane is free */
    size_t checked;
    uint64_t held;
} Lane;
#define DONE INT32_MIN

/* States expanded at once. The search is bound by memory latency (see the layout): one
 * state at a time, following the instance's child and then the next state, it waits on
 * each miss in turn. LANES states are in flight instead: a lane that moves to a node
 * prefetches the node's first three lines (header, ends and, on nearly every node reached,
 * the children), and is expanded in the next round over the lanes, once the other lanes
 * have been. Lanes done are dropped at the end of a round, keeping the others' order, and
 * new ones are filled from the top of the stack, so that the search still goes depth
 * first: a level's found sets are found early and prune the rest of the level (a queue was
 * slower). The designs tried and measured: docs/decisions.md, "The NR/CE search in C is laid
 * out for cache misses". */
#define LANES 32

/* Whether deviating on `bit` from `held` (a level-k set without it) makes a set holding a
 * found one, for the search's pruning of deviations: found_in's answers, kept per set as
 * two feature masks in a small table (a lane expands the features of a path in turn, with
 * the same set, and siblings share sets): "holds one" for the whole search, "holds none"
 * while no more sets are found. 1 or 0, -1 on error. */
typedef struct {
    uint64_t held, yes, no; /* the set; features whose deviation holds a found set, or not */
    size_t n;               /* the number of found sets `no` was asked with */
} Forbid;
#define FORBID_BITS 8

static int deviation_pruned(Forbid *table, Found *F, uint64_t held, uint64_t bit)
{
    Forbid *fb = &table[(held * 0x9E3779B97F4A7C15ull) >> (64 - FORBID_BITS)];
    if (fb->held != held) {
        *fb = (Forbid){held, 0, 0, F->n};
    } else if (fb->n != F->n) {
        fb->no = 0;
        fb->n = F->n;
    }
    if (fb->yes & bit)
        return 1;
    if (fb->no & bit)
        return 0;
    int pruned = found_in(F, held | bit, 1);
    if (pruned > 0)
        fb->yes |= bit;
    else if (pruned == 0)
        fb->no |= bit;
    return pruned;
}

/* The search of PyStore.min_deviations (core/dgstore.py), level by level, sets in 64 bits,
 * on the roots' layout. x[f] is the instance's state of feature f. Fills *found (PyMem) and
 * *n_found. */
static int min_deviations(Store *S, const int32_t *roots, size_t n_roots, const int32_t *x,
                          uint64_t **found_out, size_t *n_found_out)
{
    struct Search *W = S->search;
    if (W == NULL && (W = S->search = PyMem_Calloc(1, sizeof *W)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    DevVec level = W->level, later = W->later;
    Links E = W->E;
    Found F = W->F;
    level.n = later.n = E.n = E.pool_n = 0;
    F.v = NULL;
    F.n = F.cap = F.n_earlier = 0;
    buckets_reset(&F.earlier);
    int ok = 0;
    uint32_t k = 0; /* the level: the sets in `level` have k features */
    Layout *L = layout_for(S, roots, n_roots);
    if (L == NULL)
        goto fail;
    if (++L->epoch == 0) { /* wrapped: forget all stamps */
        for (size_t o = NODE_ALIGN; o < L->len - SLACK_WORDS;
             o += node_words((uint32_t)L->code[o] >> 8, L->width))
            L->code[o + 1] = 0;
        L->epoch = 1;
    }
    const int32_t *code = L->code;
    const int width = L->width;
    Forbid forbid[1 << FORBID_BITS];
    memset(forbid, 0, sizeof forbid); /* held 0 with no answers yet: right for any set */
    for (size_t i = 0; i < n_roots; i++)
        if (dev_push(&level, L->root_at[i], 0) < 0)
            goto fail;
    while (level.n) {
        for (size_t i = F.n_earlier; i < F.n; i++) /* level k - 1's sets are earlier now */
            if (buckets_add(&F.earlier, F.v[i]) < 0)
                goto fail;
        F.n_earlier = F.n;
        set_clear(&F.memo);
        set_clear(&F.fresh);
        later.n = 0;
        Lane lane[LANES];
        int n_lanes = 0;
        uint64_t clear_held = 0; /* a set found to hold none of the clear_n found ones */
        size_t clear_n = SIZE_MAX;
        while (level.n || n_lanes) {
            while (n_lanes < LANES && level.n) { /* last in, first out */
                DevState st = level.v[--level.n];
                /* siblings pushed together share a set: asked about once */
                int r = st.node > 1 && st.held == clear_held && F.n == clear_n
                        ? 1 : settle(&F, st.node, st.held);
                if (r < 0)
                    goto fail;
                if (r) {
                    clear_held = st.held;
                    clear_n = F.n;
                    lane[n_lanes++] = (Lane){st.node, F.n, st.held};
                    /* the node's three lines, here and below written out: in a static
                     * inline helper GCC 12 emitted no prefetch (1.6 times slower) */
                    __builtin_prefetch(code + st.node);
                    __builtin_prefetch(code + st.node + 16);
                    __builtin_prefetch(code + st.node + 32);
                }
            }
            for (int j = 0; j < n_lanes; j++) {
                Lane *ln = &lane[j];
                const int32_t *at = code + ln->node;
                uint64_t held = ln->held;
                int added = expanded_add(L, &E, ln->node, held, k);
                if (added < 0)
                    goto fail;
                if (added == 0) {
                    ln->node = DONE;
                    continue;
                }
                /* Ctrl-C, but not the compile deadline: searching is not compiling */
                if ((++S->ticks & TICK_MASK) == 0 && PyErr_CheckSignals() < 0)
                    goto fail;
                int32_t nseg = (int32_t)((uint32_t)at[0] >> 8), f = at[0] & 0xff;
                const int32_t *kids = at + NODE_HEADER + end_words((size_t)nseg, width);
                uint64_t bit = (uint64_t)1 << f;
                int32_t seg = segment_of(at, width, nseg, x[f]);
                int32_t own = seg < nseg ? kids[seg] : GAP, next = GAP;
                /* free: the instance's state is not the node's to test, or the feature
                 * deviates already; every child is then reached at this level */
                int free = own == GAP || (held & bit);
                /* a deviation whose set holds a found one is pruned now (as it would be when
                 * popped) to spare the stack: only the instance's child is followed */
                int pruned = free ? 0 : deviation_pruned(forbid, &F, held, bit);
                if (pruned < 0)
                    goto fail;
                if (pruned)
                    next = own;
                else
                    for (int32_t i = 0; i < nseg; i++) {
                        int32_t c = kids[i];
                        if (c == GAP || c == 1) /* true leads nowhere */
                            continue;
                        if (free || c == own) {
                            if (next == GAP)
                                next = c; /* the lane follows it */
                            else if (dev_push(&level, c, held) < 0)
                                goto fail;
                        } else if (dev_push(&later, c, held | bit) < 0)
                            goto fail;
                    }
                int r = next > 1 && F.n == ln->checked ? 1 : settle(&F, next, held);
                if (r < 0)
                    goto fail;
                if (r) {
                    ln->node = next;
                    ln->checked = F.n;
                    __builtin_prefetch(code + next);
                    __builtin_prefetch(code + next + 16);
                    __builtin_prefetch(code + next + 32);
                } else
                    ln->node = DONE;
            }
            /* drop the lanes done, keeping the order: lanes filled next are expanded last */
            int m = 0;
            for (int j = 0; j < n_lanes; j++)
                if (lane[j].node != DONE)
                    lane[m++] = lane[j];
            n_lanes = m;
        }
        DevVec swap = level; /* level is empty: the next level becomes current */
        level = later;
        later = swap;
        k++;
    }
    qsort(F.v, F.n, sizeof(uint64_t), cmp_deviation);
    *found_out = F.v;
    *n_found_out = F.n;
    F.v = NULL;
    ok = 1;
fail:
    PyMem_Free(F.v);
    F.v = NULL;
    *W = (struct Search){level, later, E, F};
    search_trim(W, 0);
    return ok ? 0 : -1;
}

static PyObject *Store_prepare(Store *S, PyObject *arg)
{
    IntVec roots = {NULL, 0, 0};
    if (S->n_features > 64) /* the search of min_deviations runs in Python then */
        Py_RETURN_NONE;
    Layout *L = roots_arg(S, arg, &roots) < 0 ? NULL : layout_for(S, roots.v, roots.n);
    PyMem_Free(roots.v);
    if (L == NULL)
        return NULL;
    Py_RETURN_NONE;
}

/* An instance: a state index per feature, each within its feature's states (PyMem array). */

static PyObject *Store_min_deviations(Store *S, PyObject *args)
{
    PyObject *robj, *xobj, *out = NULL;
    IntVec roots = {NULL, 0, 0};
    int32_t *x = NULL;
    uint64_t *found = NULL;
    size_t n_found = 0;
    if (!PyArg_ParseTuple(args, "OO:min_deviations", &robj, &xobj))
        return NULL;
    if (S->n_features > 64) {
        PyErr_SetString(PyExc_OverflowError, "min_deviations packs feature sets in 64 bits");
        return NULL;
    }
    if (instance_arg(S, xobj, &x) < 0 || roots_arg(S, robj, &roots) < 0
        || min_deviations(S, roots.v, roots.n, x, &found, &n_found) < 0)
        goto done;
    out = PyList_New((Py_ssize_t)n_found);
    if (out == NULL)
        goto done;
    for (size_t i = 0; i < n_found; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(found[i]);
        if (v == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, v);
    }
done:
    PyMem_Free(found);
    PyMem_Free(roots.v);
    PyMem_Free(x);
    return out;
}
