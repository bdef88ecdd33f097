/* Decision-graph node store in C: the same interface and node ids as the reference
 * implementation core/dgstore.py (PyStore), whose docstrings define the semantics; this file
 * only says how it is laid out (docs/algorithms.md; paper §3 "Tractable Class Formulas":
 * the ordered special case of Alg. 4, used as the comparators of the sorting networks of
 * Alg. 3B/3A).
 *
 * Layout. Nodes are appended (and compacted in place by collect): a node id indexes an array
 * of 16-byte records (first segment, feature, number of segments, ordered flag), and the
 * segments of all nodes sit in one pool. A segment is (end_exclusive, child) over the state
 * indices of the node's feature, child GAP for states not feasible at the node. Masks (Python
 * ints of any width) never reach C: the facade core/dgraph.py converts between masks and
 * segments. The unique table and the two computed tables (one per operation) are
 * open-addressing hash tables with linear probing, kept at most half full and doubled when
 * needed. Arrays grow geometrically; dealloc frees everything.
 *
 * Recursion. Ordered Apply recurses in C: every level raises the rank of at least one
 * operand's top feature, so the depth is at most twice the number of features. A call first
 * lists its sub-problems (one per output segment) on a shared job stack, prefetching their
 * computed-table slots, then solves them in order, pushing the output segments on a shared
 * scratch stack. Nested calls may move both stacks and the node arrays (creating nodes), so
 * they are addressed by index across calls. Thresholds (td_rec) recurse too, at most once per
 * feature, and keep their sub-problems in a hash table of their own (TdMemo) for the call.
 * Negation and traversals use explicit stacks.
 *
 * Limits. Node creation checks max_nodes; every 64k Apply steps or node creations the store
 * checks CLOCK_MONOTONIC (the clock of time.monotonic() on Linux) against the deadline and
 * calls PyErr_CheckSignals() so that Ctrl-C interrupts a long Apply, and releases the GIL for
 * a moment so that other threads (a progress bar) run during one. Budget errors raise the
 * exception class given by the facade (BudgetExceeded) with the facade's messages.
 */

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
    int64_t first;     /* index of the node's first segment in the pool */
    int32_t feat;      /* feature tested, LEAF for the leaves */
    uint32_t nseg : 31; /* number of segments */
    uint32_t ord : 1;  /* ordered flag */
} Node;                /* 16 bytes: what Apply and hash-consing read, in one cache line */

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
    int32_t *roots; /* the root list it lays out (NULL: none) */
    size_t n_roots;
    int32_t *root_at; /* positions of the roots */
    int32_t *id;      /* store id of each position */
    size_t *at;       /* offset of each position's code */
    int32_t *code;    /* per position: feature, number of segments, (end, child position) each */
    size_t n;         /* positions: the nodes below the roots, children first, leaves at 0, 1 */
} Program;            /* the graph below a root list as PyStore.violations walks it */

typedef struct {
    PyObject_HEAD
    Py_ssize_t n_features;
    int32_t *n_states; /* per feature */
    int32_t *rank;     /* per feature */
    /* nodes */
    size_t n_nodes, cap_nodes;
    Node *node;
    int32_t *neg;    /* negation, -1 while unknown */
    uint32_t *mark;  /* traversal marks: mark[n] == epoch means visited */
    uint32_t epoch;
    Seg *segs;
    size_t n_segs, cap_segs;
    /* tables */
    Slot *unique; /* the hash beside the id: a probe reads node data only on a hash match */
    size_t unique_mask;
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
    Program program; /* of violations (the last root list) */
    size_t next_layout;
} Store;

typedef struct {
    PyObject_HEAD
    Store *store;
    int kind; /* 0: feature, 1: ordered */
} Column;

static PyTypeObject StoreType;
static PyTypeObject ColumnType;
static int int_array(PyObject *obj, Py_ssize_t n, int32_t **out, const char *what);
static int instance_arg(Store *S, PyObject *obj, int32_t **out);

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

/* -- computed tables ------------------------------------------------------------------- */

static int table_init(Table *T, size_t cap)
{
    T->slots = PyMem_Malloc(cap * sizeof(Entry));
    if (T->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(T->slots, 0xff, cap * sizeof(Entry));
    T->mask = cap - 1;
    T->used = 0;
    return 0;
}

static int32_t table_find(const Table *T, int32_t a, int32_t b)
{
    size_t i = pair_hash(a, b) & T->mask;
    for (;;) {
        const Entry *e = &T->slots[i];
        if (e->a < 0)
            return -1;
        if (e->a == a && e->b == b)
            return e->r;
        i = (i + 1) & T->mask;
    }
}

static void table_put(Table *T, int32_t a, int32_t b, int32_t r)
{
    size_t i = pair_hash(a, b) & T->mask;
    while (T->slots[i].a >= 0 && !(T->slots[i].a == a && T->slots[i].b == b))
        i = (i + 1) & T->mask;
    if (T->slots[i].a < 0)
        T->used++;
    T->slots[i] = (Entry){a, b, r};
}

static int table_insert(Table *T, int32_t a, int32_t b, int32_t r)
{
    if (2 * (T->used + 1) > T->mask + 1) {
        Table bigger;
        if (table_init(&bigger, 2 * (T->mask + 1)) < 0)
            return -1;
        for (size_t i = 0; i <= T->mask; i++)
            if (T->slots[i].a >= 0)
                table_put(&bigger, T->slots[i].a, T->slots[i].b, T->slots[i].r);
        PyMem_Free(T->slots);
        *T = bigger;
    }
    table_put(T, a, b, r);
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

/* -- ordered Apply (PyStore._apply) ---------------------------------------------------- */

/* The result when a leaf operand or a == b decides a op b, else -1. */
static inline int32_t terminal(int op, int32_t a, int32_t b)
{
    if (op == OP_AND) {
        if (a == 0 || b == 0)
            return 0;
        if (a == 1 || a == b)
            return b;
        if (b == 1)
            return a;
    }
    else {
        if (a == 1 || b == 1)
            return 1;
        if (a == 0 || a == b)
            return b;
        if (b == 0)
            return a;
    }
    return -1;
}

/* Queue the sub-problem a op b of the segment ending at `end` (a == GAP: infeasible), and
 * prefetch its computed-table slot: the tables outgrow the CPU caches, and issuing all of a
 * node's lookups before the first recursion overlaps their memory latencies. */
static int push_job(Store *S, int op, int32_t end, int32_t a, int32_t b)
{
    if (reserve((void **)&S->jobs, &S->cap_jobs, S->n_jobs + 1, sizeof(Job)) < 0)
        return -1;
    S->jobs[S->n_jobs++] = (Job){end, a, b};
#if defined(__GNUC__)
    if (a != GAP && terminal(op, a, b) < 0) {
        const Table *T = &S->computed[op];
        __builtin_prefetch(&T->slots[(a < b ? pair_hash(a, b) : pair_hash(b, a)) & T->mask]);
        __builtin_prefetch(&S->node[a]);
        __builtin_prefetch(&S->node[b]);
    }
#endif
    return 0;
}

static int32_t apply_rec(Store *S, int op, int32_t a, int32_t b)
{
    int32_t r = terminal(op, a, b);
    if (r >= 0)
        return r;
    if (a > b) { /* commutative: one cache entry per unordered pair */
        int32_t t = a;
        a = b;
        b = t;
    }
    r = table_find(&S->computed[op], a, b);
    if (r >= 0)
        return r;
    if (tick(S) < 0)
        return ERR;
    Node na = S->node[a], nb = S->node[b];
    int32_t ra = S->rank[na.feat], rb = S->rank[nb.feat];
    int32_t f = ra <= rb ? na.feat : nb.feat;
    size_t base = S->n_scratch, jobs = S->n_jobs;
    if (ra == rb) { /* same feature: two-pointer merge of the sorted segment lists */
        const Seg *sa = S->segs + na.first, *sb = S->segs + nb.first;
        for (;;) {
            int32_t end = sa->end < sb->end ? sa->end : sb->end;
            int gap = sa->child == GAP || sb->child == GAP;
            if (push_job(S, op, end, gap ? GAP : sa->child, sb->child) < 0)
                goto fail;
            if (end == S->n_states[f])
                break;
            sa += sa->end == end;
            sb += sb->end == end;
        }
    }
    else { /* the operand testing first branches; the other is constant along its branches */
        Node top = ra < rb ? na : nb;
        int32_t other = ra < rb ? b : a;
        for (const Seg *s = S->segs + top.first; s < S->segs + top.first + top.nseg; s++)
            if (push_job(S, op, s->end, s->child, other) < 0)
                goto fail;
    }
    /* Recursion may move the pool, the job stack and the scratch stack: indices only. */
    for (size_t q = jobs; q < S->n_jobs; q++) {
        Job job = S->jobs[q];
        int32_t child = job.a == GAP ? GAP : apply_rec(S, op, job.a, job.b);
        if (child == ERR || push_seg(S, base, job.end, child) < 0)
            goto fail;
    }
    r = make_node(S, f, S->scratch + base, S->n_scratch - base);
    S->n_scratch = base;
    S->n_jobs = jobs;
    if (r == ERR || table_insert(&S->computed[op], a, b, r) < 0)
        return ERR;
    return r;
fail:
    S->n_scratch = base;
    S->n_jobs = jobs;
    return ERR;
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
static int32_t negate(Store *S, int32_t root)
{
    if (S->neg[root] >= 0)
        return S->neg[root];
    IntVec pending = {NULL, 0, 0};
    uint32_t ep = next_epoch(S);
    S->mark[root] = ep;
    if (vec_push(&pending, root) < 0 || reach(S, &pending, ep, 1) < 0)
        goto fail;
    qsort(pending.v, pending.n, sizeof(int32_t), cmp_int32);
    for (size_t p = 0; p < pending.n; p++) {
        int32_t n = pending.v[p];
        if (S->neg[n] >= 0)
            continue;
        Node d = S->node[n];
        size_t k = d.nseg, base = S->n_scratch;
        if (reserve((void **)&S->scratch, &S->cap_scratch, base + k, sizeof(Seg)) < 0)
            goto fail;
        for (size_t i = 0; i < k; i++) {
            Seg s = S->segs[d.first + i];
            S->scratch[base + i] = (Seg){s.end, s.child == GAP ? GAP : S->neg[s.child]};
        }
        int32_t m = make_node(S, d.feat, S->scratch + base, k);
        if (m == ERR)
            goto fail;
        S->neg[n] = m;
        S->neg[m] = n;
    }
    PyMem_Free(pending.v);
    return S->neg[root];
fail:
    PyMem_Free(pending.v);
    return ERR;
}

/* PyStore.exists: ∃f. root of an ordered root, over the nodes below it in ascending order
 * (children first); a node testing f becomes the disjunction of its children (a balanced
 * tree of them, in segment order), a node above it is rebuilt on its children's results. */
static int32_t exists(Store *S, int32_t root, int32_t f)
{
    IntVec nodes = {NULL, 0, 0}, kids = {NULL, 0, 0};
    int32_t r = ERR, rank = S->rank[f];
    /* Indexed by node id but written and read only below root: the untouched pages of a
     * large allocation are never mapped. */
    int32_t *result = PyMem_Malloc(S->n_nodes * sizeof(int32_t));
    uint32_t ep = next_epoch(S);
    S->mark[root] = ep;
    if (result == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (vec_push(&nodes, root) < 0 || reach(S, &nodes, ep, 0) < 0)
        goto done;
    qsort(nodes.v, nodes.n, sizeof(int32_t), cmp_int32);
    for (size_t p = 0; p < nodes.n; p++) {
        int32_t n = nodes.v[p];
        Node d = S->node[n];
        if (n <= 1 || S->rank[d.feat] > rank) { /* ordered: f is not tested below n */
            result[n] = n;
            continue;
        }
        if (d.feat == f) {
            kids.n = 0;
            for (size_t i = 0; i < d.nseg; i++)
                if (S->segs[d.first + i].child != GAP
                    && vec_push(&kids, S->segs[d.first + i].child) < 0)
                    goto done;
            while (kids.n > 1) { /* Apply may move the pool: kids holds ids */
                size_t m = 0;
                for (size_t i = 0; i < kids.n; i += 2) {
                    int32_t c = i + 1 < kids.n ? apply_rec(S, OP_OR, kids.v[i], kids.v[i + 1])
                                               : kids.v[i];
                    if (c == ERR)
                        goto done;
                    kids.v[m++] = c;
                }
                kids.n = m;
            }
            result[n] = kids.v[0];
            continue;
        }
        size_t base = S->n_scratch;
        for (size_t i = 0; i < d.nseg; i++) {
            Seg s = S->segs[d.first + i];
            if (push_seg(S, base, s.end, s.child == GAP ? GAP : result[s.child]) < 0) {
                S->n_scratch = base;
                goto done;
            }
        }
        result[n] = make_node(S, d.feat, S->scratch + base, S->n_scratch - base);
        S->n_scratch = base;
        if (result[n] == ERR)
            goto done;
    }
    r = result[root];
done:
    PyMem_Free(kids.v);
    PyMem_Free(result);
    PyMem_Free(nodes.v);
    return r;
}

/* -- thresholds by top-down expansion (PyStore.threshold) ------------------------------ */

typedef struct {
    int64_t off; /* the key's residues in the arena */
    int32_t need, len, result;
} TdEntry;

typedef struct {
    Slot *slots; /* entry index and hash */
    size_t mask;
    TdEntry *entries;
    size_t n_entries, cap_entries;
    int32_t *arena; /* the residue lists of the keys, one after another */
    size_t n_arena, cap_arena;
    size_t words; /* the memory it holds, as PyStore counts it (TD_ENTRY_WORDS) */
} TdMemo;

/* The node budget bounds memory: an entry of m residues counts m + TD_ENTRY_WORDS 4-byte
 * words, and every TD_NODE_WORDS of them one node (core/budget.py's 200 bytes per node). */
#define TD_ENTRY_WORDS 12
#define TD_NODE_WORDS 50

/* A multiset's hash is the sum of its elements' (so a block's sub-problem hashes from its
 * node's unmoved residues and its few moved ones); the key's hash adds need. */
static inline uint64_t td_elem(int32_t n)
{
    return mix64(0x9e3779b97f4a7c15ULL + (uint32_t)n);
}

static inline uint32_t td_hash(int32_t need, uint64_t sum)
{
    return (uint32_t)mix64(sum ^ ((uint64_t)(uint32_t)need << 40));
}

/* The slot of the sub-problem (need, rest[0..m)), or the empty slot where it belongs. */
static Slot *td_find(const TdMemo *M, int32_t need, const int32_t *rest, size_t m, uint32_t h)
{
    for (size_t i = h & M->mask;; i = (i + 1) & M->mask) {
        Slot *s = &M->slots[i];
        if (s->id < 0)
            return s;
        const TdEntry *e = &M->entries[s->id];
        if (s->hash == h && e->need == need && (size_t)e->len == m
            && memcmp(M->arena + e->off, rest, m * sizeof(int32_t)) == 0)
            return s;
    }
}

static int td_insert(Store *S, TdMemo *M, int32_t need, const int32_t *rest, size_t m,
                     uint32_t h, int32_t result)
{
    M->words += m + TD_ENTRY_WORDS;
    if (S->max_nodes >= 0
        && (long long)(S->n_nodes - 2) + (long long)(M->words / TD_NODE_WORDS) > S->max_nodes) {
        PyErr_SetObject(S->error, S->nodes_message);
        return -1;
    }
    if (M->n_entries >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many threshold sub-problems");
        return -1;
    }
    if (reserve((void **)&M->arena, &M->cap_arena, M->n_arena + m, sizeof(int32_t)) < 0
        || reserve((void **)&M->entries, &M->cap_entries, M->n_entries + 1, sizeof(TdEntry)) < 0)
        return -1;
    Slot *s = td_find(M, need, rest, m, h);
    memcpy(M->arena + M->n_arena, rest, m * sizeof(int32_t));
    M->entries[M->n_entries] = (TdEntry){(int64_t)M->n_arena, need, (int32_t)m, result};
    *s = (Slot){(int32_t)M->n_entries, h};
    M->n_arena += m;
    if (2 * ++M->n_entries > M->mask + 1)
        return slots_grow(&M->slots, &M->mask);
    return 0;
}

static int cmp_uint64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* The residues at the testing node's current segments, as td_rec's blocks see them: how
 * many are at a gap or at true, and the decision nodes among them, sorted, with their hash. */
typedef struct {
    int32_t gaps, trues, *moved;
    size_t n_moved;
    uint64_t sum;
} TdBlock;

static void td_enter(TdBlock *B, int32_t c, int sign)
{
    if (c == GAP)
        B->gaps += sign;
    else if (c == 1)
        B->trues += sign;
    else if (c > 1) {
        size_t lo = 0, hi = B->n_moved; /* first position holding c or more */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (B->moved[mid] < c)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (sign > 0) {
            memmove(B->moved + lo + 1, B->moved + lo, (B->n_moved - lo) * sizeof(int32_t));
            B->moved[lo] = c;
            B->n_moved++;
            B->sum += td_elem(c);
        }
        else {
            memmove(B->moved + lo, B->moved + lo + 1, (B->n_moved - lo - 1) * sizeof(int32_t));
            B->n_moved--;
            B->sum -= td_elem(c);
        }
    }
}

/* "At least need of rest[0..m) are true": rest is a sorted list of ordered decision nodes
 * (a multiset) whose td_elem hashes add up to sum. The node tests the first feature any of
 * them tests; on each block of its states where no residue changes child, the residues
 * testing it move to those children, leaves leave the list (a true one lowers need), and the
 * list is the block's sub-problem. Blocks are walked by the segment ends of the testing
 * residues, updating only the residues whose segment ends there. Every level raises the first
 * tested rank, so the depth is at most the number of features. */
static int32_t td_rec(Store *S, TdMemo *M, int32_t need, const int32_t *rest, size_t m,
                      uint64_t sum)
{
    if (need <= 0)
        return 1;
    if ((size_t)need > m)
        return 0;
    uint32_t h = td_hash(need, sum);
    const Slot *hit = td_find(M, need, rest, m, h);
    if (hit->id >= 0)
        return M->entries[hit->id].result;
    if (tick(S) < 0)
        return ERR;
    int32_t f = S->node[rest[0]].feat, nst, r = ERR;
    for (size_t i = 1; i < m; i++)
        if (S->rank[S->node[rest[i]].feat] < S->rank[f])
            f = S->node[rest[i]].feat;
    nst = S->n_states[f];
    size_t n_kept = 0, n_segs = 0, n_events = 0, base = S->n_scratch;
    for (size_t i = 0; i < m; i++)
        if (S->node[rest[i]].feat == f)
            n_segs += S->node[rest[i]].nseg;
    /* kept: the residues not testing f; segs: copies of the testing ones' segments, one
     * residue after another; events: (end << 32 | index) of each segment but a last one */
    int32_t *kept = PyMem_Malloc(3 * m * sizeof(int32_t));
    Seg *segs = PyMem_Malloc(n_segs * sizeof(Seg));
    uint64_t *events = PyMem_Malloc(n_segs * sizeof(uint64_t));
    if (kept == NULL || segs == NULL || events == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int32_t *kids = kept + m;
    TdBlock B = {0, 0, kept + 2 * m, 0, 0};
    uint64_t kept_sum = sum;
    n_segs = 0;
    for (size_t i = 0; i < m; i++) {
        Node d = S->node[rest[i]];
        if (d.feat != f) {
            kept[n_kept++] = rest[i];
            continue;
        }
        kept_sum -= td_elem(rest[i]);
        memcpy(segs + n_segs, S->segs + d.first, d.nseg * sizeof(Seg));
        td_enter(&B, segs[n_segs].child, 1);
        for (size_t j = 0; j + 1 < d.nseg; j++)
            events[n_events++] = (uint64_t)segs[n_segs + j].end << 32 | (n_segs + j);
        n_segs += d.nseg;
    }
    qsort(events, n_events, sizeof(uint64_t), cmp_uint64);
    for (int32_t start = 0, e = 0; start < nst;) {
        int32_t end = (size_t)e < n_events ? (int32_t)(events[e] >> 32) : nst, child;
        if (B.gaps)
            child = GAP;
        else { /* merge: runs of kept between the moved children, copied whole */
            size_t k = 0, from = 0;
            for (size_t j = 0; j < B.n_moved; j++) {
                size_t to = from;
                while (to < n_kept && kept[to] < B.moved[j])
                    to++;
                memcpy(kids + k, kept + from, (to - from) * sizeof(int32_t));
                k += to - from;
                kids[k++] = B.moved[j];
                from = to;
            }
            memcpy(kids + k, kept + from, (n_kept - from) * sizeof(int32_t));
            k += n_kept - from;
            child = td_rec(S, M, need - B.trues, kids, k, kept_sum + B.sum);
        }
        if (child == ERR || push_seg(S, base, end, child) < 0)
            goto done;
        for (; (size_t)e < n_events && (int32_t)(events[e] >> 32) == end; e++) {
            uint32_t g = (uint32_t)events[e];
            td_enter(&B, segs[g].child, -1);
            td_enter(&B, segs[g + 1].child, 1);
        }
        start = end;
    }
    r = make_node(S, f, S->scratch + base, S->n_scratch - base);
    if (r != ERR && td_insert(S, M, need, rest, m, h, r) < 0)
        r = ERR;
done:
    S->n_scratch = base;
    PyMem_Free(events);
    PyMem_Free(segs);
    PyMem_Free(kept);
    return r;
}

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
 * "Search layouts on 2 MiB pages"). */
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
    size_t nseg = S->node[n].nseg;
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
        Node d = S->node[order.v[head]];
        for (size_t j = 0; j < d.nseg; j++)
            if (place(S, S->segs[d.first + j].child, width, off, &end, &order) < 0)
                goto fail;
    }
    end += SLACK_WORDS;
    L->code = code_alloc((size_t)end * sizeof(int32_t));
    L->roots = PyMem_Malloc((n_roots ? n_roots : 1) * sizeof(int32_t));
    L->root_at = PyMem_Malloc((n_roots ? n_roots : 1) * sizeof(int32_t));
    if (L->code == NULL || L->roots == NULL || L->root_at == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memset(L->code, 0, (size_t)end * sizeof(int32_t)); /* padding, and stamps: no search yet */
    L->code[0] = L->code[1] = LEAF;
    for (size_t k = 0; k < order.n; k++) {
        Node d = S->node[order.v[k]];
        int32_t *at = L->code + off[order.v[k]];
        at[0] = d.feat | (int32_t)(d.nseg << 8);
        void *ends = at + NODE_HEADER;
        int32_t *kids = at + NODE_HEADER + end_words(d.nseg, width);
        for (size_t i = 0; i < d.nseg; i++) {
            Seg g = S->segs[d.first + i];
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
    PyMem_Free(off);
    PyMem_Free(order.v);
    return 0;
fail:
    PyMem_Free(off);
    PyMem_Free(order.v);
    layout_free(L);
    return -1;
}

static void program_free(Program *P)
{
    PyMem_Free(P->roots);
    PyMem_Free(P->root_at);
    PyMem_Free(P->id);
    PyMem_Free(P->at);
    PyMem_Free(P->code);
    memset(P, 0, sizeof *P);
}

/* Forget the search layouts and the violations program (node ids are about to change). */
static void layouts_clear(Store *S)
{
    for (size_t i = 0; i < N_LAYOUTS; i++)
        layout_free(&S->layouts[i]);
    program_free(&S->program);
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
 * slower). The designs tried and measured: docs/decisions.md, the findings on the NR/CE
 * search on ann-thyroid. */
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

/* -- Python interface ------------------------------------------------------------------ */

static int node_arg(Store *S, PyObject *obj, int32_t *out)
{
    long n = PyLong_AsLong(obj);
    if (n == -1 && PyErr_Occurred())
        return -1;
    if (n < 0 || (size_t)n >= S->n_nodes) {
        PyErr_Format(PyExc_IndexError, "no decision-graph node %ld", n);
        return -1;
    }
    *out = (int32_t)n;
    return 0;
}

/* Append the node ids of a root list to *out (the caller frees out->v); -1 on error. */
static int roots_arg(Store *S, PyObject *obj, IntVec *out)
{
    PyObject *seq = PySequence_Fast(obj, "roots must be a sequence of node ids");
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int32_t n;
        if (node_arg(S, PySequence_Fast_GET_ITEM(seq, i), &n) < 0 || vec_push(out, n) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static int feature_arg(Store *S, PyObject *obj, int32_t *out)
{
    long f = PyLong_AsLong(obj);
    if (f == -1 && PyErr_Occurred())
        return -1;
    if (f < 0 || f >= S->n_features) {
        PyErr_Format(PyExc_IndexError, "no feature %ld", f);
        return -1;
    }
    *out = (int32_t)f;
    return 0;
}

/* Parse canonical segments of feature f onto the scratch stack (the caller pops them). */
static int parse_segments(Store *S, int32_t f, PyObject *obj, size_t *k)
{
    PyObject *seq = PySequence_Fast(obj, "segments must be a sequence of (end, child) pairs");
    if (seq == NULL)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    size_t base = S->n_scratch;
    if (reserve((void **)&S->scratch, &S->cap_scratch, base + (size_t)len, sizeof(Seg)) < 0)
        goto fail;
    long prev_end = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        long end, child;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ll;a segment is (end, child)",
                              &end, &child))
            goto fail;
        if (end <= prev_end || end > S->n_states[f]
            || (child != GAP && (child < 0 || (size_t)child >= S->n_nodes))
            || (i && S->scratch[base + i - 1].child == child)) {
            PyErr_SetString(PyExc_ValueError, "segments are not canonical");
            goto fail;
        }
        S->scratch[base + i] = (Seg){(int32_t)end, (int32_t)child};
        prev_end = end;
    }
    if (prev_end != S->n_states[f]) {
        PyErr_SetString(PyExc_ValueError, "segments must end at the feature's number of states");
        goto fail;
    }
    Py_DECREF(seq);
    *k = (size_t)len;
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

static PyObject *id_result(int32_t n)
{
    return n == ERR ? NULL : PyLong_FromLong(n);
}

static PyObject *Store_make(Store *S, PyObject *args)
{
    PyObject *fobj, *segs;
    int32_t f;
    size_t k, base = S->n_scratch;
    if (!PyArg_ParseTuple(args, "OO:make", &fobj, &segs) || feature_arg(S, fobj, &f) < 0
        || parse_segments(S, f, segs, &k) < 0)
        return NULL;
    int32_t n = make_node(S, f, S->scratch + base, k);
    S->n_scratch = base;
    return id_result(n);
}

static PyObject *Store_lookup(Store *S, PyObject *args)
{
    PyObject *fobj, *segs;
    int32_t f;
    size_t k, slot, base = S->n_scratch;
    if (!PyArg_ParseTuple(args, "OO:lookup", &fobj, &segs) || feature_arg(S, fobj, &f) < 0
        || parse_segments(S, f, segs, &k) < 0)
        return NULL;
    const Seg *s = S->scratch + base;
    int32_t n = unique_find(S, f, s, k, node_hash(f, s, k), &slot);
    S->n_scratch = base;
    return PyLong_FromLong(n);
}

static PyObject *Store_segments(Store *S, PyObject *arg)
{
    int32_t n;
    if (node_arg(S, arg, &n) < 0)
        return NULL;
    size_t lo = (size_t)S->node[n].first, k = S->node[n].nseg;
    PyObject *out = PyTuple_New((Py_ssize_t)k);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < k; i++) {
        PyObject *seg = Py_BuildValue("(ii)", S->segs[lo + i].end, S->segs[lo + i].child);
        if (seg == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, (Py_ssize_t)i, seg);
    }
    return out;
}

/* The states [start, end) as a Python int bitmask. */
static PyObject *state_range(int32_t start, int32_t end)
{
    if (end <= 64) {
        uint64_t hi = end == 64 ? ~0ull : (1ull << end) - 1;
        return PyLong_FromUnsignedLongLong(hi & ~((1ull << start) - 1));
    }
    PyObject *one = PyLong_FromLong(1), *a = NULL, *b = NULL, *out = NULL;
    PyObject *e = PyLong_FromLong(end), *s = PyLong_FromLong(start);
    if (one && e && s && (a = PyNumber_Lshift(one, e)) && (b = PyNumber_Lshift(one, s)))
        out = PyNumber_Subtract(a, b);
    Py_XDECREF(one);
    Py_XDECREF(e);
    Py_XDECREF(s);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return out;
}

/* DG.branches of node n: ((state mask, child), ...), each child's segments joined, in the
 * order of their lowest states (what core/dgraph.py's segments_branches makes of segments). */
static PyObject *Store_branches(Store *S, PyObject *arg)
{
    int32_t n;
    if (node_arg(S, arg, &n) < 0)
        return NULL;
    size_t lo = (size_t)S->node[n].first, k = S->node[n].nseg, m = 0;
    int32_t *kids = PyMem_Malloc((k ? k : 1) * sizeof(int32_t));
    PyObject **masks = PyMem_Calloc(k ? k : 1, sizeof(PyObject *)), *out = NULL;
    if (kids == NULL || masks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0, start = 0; i < k; start = (size_t)S->segs[lo + i++].end) {
        int32_t child = S->segs[lo + i].child;
        if (child == GAP)
            continue;
        PyObject *part = state_range((int32_t)start, S->segs[lo + i].end);
        if (part == NULL)
            goto done;
        size_t j = 0;
        while (j < m && kids[j] != child)
            j++;
        if (j == m) {
            kids[m] = child;
            masks[m++] = part;
        } else {
            PyObject *joined = PyNumber_Or(masks[j], part);
            Py_DECREF(part);
            if (joined == NULL)
                goto done;
            Py_SETREF(masks[j], joined);
        }
    }
    out = PyTuple_New((Py_ssize_t)m);
    for (size_t j = 0; out != NULL && j < m; j++) {
        PyObject *pair = Py_BuildValue("(Oi)", masks[j], kids[j]);
        if (pair == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, (Py_ssize_t)j, pair);
    }
done:
    for (size_t j = 0; masks != NULL && j < m; j++)
        Py_DECREF(masks[j]);
    PyMem_Free(kids);
    PyMem_Free(masks);
    return out;
}

static PyObject *Store_apply(Store *S, PyObject *args)
{
    int op;
    PyObject *aobj, *bobj;
    int32_t a, b;
    if (!PyArg_ParseTuple(args, "iOO:apply", &op, &aobj, &bobj) || node_arg(S, aobj, &a) < 0
        || node_arg(S, bobj, &b) < 0)
        return NULL;
    if (op != OP_AND && op != OP_OR) {
        PyErr_SetString(PyExc_ValueError, "op must be 0 (and) or 1 (or)");
        return NULL;
    }
    if (!S->node[a].ord || !S->node[b].ord) { /* also what bounds the C recursion depth */
        PyErr_SetString(PyExc_ValueError, "ordered Apply needs ordered operands");
        return NULL;
    }
    return id_result(apply_rec(S, op, a, b));
}

static PyObject *Store_negate(Store *S, PyObject *arg)
{
    int32_t n;
    if (node_arg(S, arg, &n) < 0)
        return NULL;
    return id_result(negate(S, n));
}

static PyObject *Store_exists(Store *S, PyObject *args)
{
    PyObject *robj, *fobj;
    int32_t root, f;
    if (!PyArg_ParseTuple(args, "OO", &robj, &fobj) || node_arg(S, robj, &root) < 0
        || feature_arg(S, fobj, &f) < 0)
        return NULL;
    if (!S->node[root].ord) {
        PyErr_SetString(PyExc_ValueError, "exists needs an ordered node");
        return NULL;
    }
    return id_result(exists(S, root, f));
}

static PyObject *Store_threshold(Store *S, PyObject *args)
{
    PyObject *robj, *kobj, *kseq = NULL, *out = NULL;
    IntVec roots = {NULL, 0, 0};
    TdMemo M = {NULL, MIN_TABLE - 1, NULL, 0, 0, NULL, 0, 0, 0};
    if (!PyArg_ParseTuple(args, "OO", &robj, &kobj) || roots_arg(S, robj, &roots) < 0)
        goto done;
    kseq = PySequence_Fast(kobj, "thresholds must be a sequence of integers");
    if (kseq == NULL)
        goto done;
    int32_t trues = 0;
    size_t m = 0;
    for (size_t i = 0; i < roots.n; i++) {
        int32_t n = roots.v[i];
        if (!S->node[n].ord) {
            PyErr_SetString(PyExc_ValueError, "threshold needs ordered nodes");
            goto done;
        }
        if (n == 1)
            trues++;
        else if (n > 1)
            roots.v[m++] = n;
    }
    qsort(roots.v, m, sizeof(int32_t), cmp_int32);
    uint64_t sum = 0;
    for (size_t i = 0; i < m; i++)
        sum += td_elem(roots.v[i]);
    M.slots = PyMem_Malloc(MIN_TABLE * sizeof(Slot));
    if (M.slots == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memset(M.slots, 0xff, MIN_TABLE * sizeof(Slot));
    Py_ssize_t n_ks = PySequence_Fast_GET_SIZE(kseq);
    out = PyList_New(n_ks);
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n_ks; i++) {
        long k = PyLong_AsLong(PySequence_Fast_GET_ITEM(kseq, i));
        if (k == -1 && PyErr_Occurred()) {
            Py_CLEAR(out);
            goto done;
        }
        /* clamped: beyond these bounds the answer is a leaf either way */
        long need = k - trues < 0 ? 0 : k - trues > (long)m + 1 ? (long)m + 1 : k - trues;
        int32_t r = td_rec(S, &M, (int32_t)need, roots.v, m, sum);
        PyObject *id = r == ERR ? NULL : PyLong_FromLong(r);
        if (id == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, id);
    }
done:
    Py_XDECREF(kseq);
    PyMem_Free(M.slots);
    PyMem_Free(M.entries);
    PyMem_Free(M.arena);
    PyMem_Free(roots.v);
    return out;
}

/* -- the tree stage of ordered compiles (rfcircuits.dgcompile) ------------------------------- */

typedef struct {
    int32_t start, end, child;
} Run;

static int cmp_run(const void *x, const void *y)
{
    return ((const Run *)x)->start - ((const Run *)y)->start;
}

/* The node of feature f whose states in runs[0..n) (sorted, disjoint) lead to their children
 * and all others to false: make_node on the segments. */
static int32_t runs_node(Store *S, int32_t f, const Run *runs, size_t n)
{
    size_t base = S->n_scratch;
    int32_t covered = 0;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].start < covered || runs[i].end > S->n_states[f]) {
            PyErr_Format(PyExc_ValueError, "node on feature %d: branch masks overlap or "
                         "name a state that does not exist", f);
            S->n_scratch = base;
            return ERR;
        }
        if ((runs[i].start > covered && push_seg(S, base, runs[i].start, 0) < 0)
            || push_seg(S, base, runs[i].end, runs[i].child) < 0) {
            S->n_scratch = base;
            return ERR;
        }
        covered = runs[i].end;
    }
    if (covered < S->n_states[f] && push_seg(S, base, S->n_states[f], 0) < 0) {
        S->n_scratch = base;
        return ERR;
    }
    int32_t r = make_node(S, f, S->scratch + base, S->n_scratch - base);
    S->n_scratch = base;
    return r;
}

/* One tree's C^c and ¬C^c for every class (rfcircuits.dgcompile.tree_code gives the format),
 * into pos[c] and neg[c]; the same calls, in the same order, as the Python tree stage of
 * rfcircuits.dgcompile (so the same node ids): a node whose children all lie below its feature in
 * the order is made directly (states of no branch lead to false), any other is the
 * disjunction over its branches of (literal ∧ child) by ordered Apply. */
static int tree_stage(Store *S, const int32_t *w, size_t len, int32_t k, int32_t *pos,
                      int32_t *neg)
{
    IntVec off = {NULL, 0, 0};
    int32_t *val = NULL;
    Run *runs = NULL;
    size_t cap_runs = 0;
    int ok = -1;
    for (size_t i = 0; i < len;) { /* the entries' offsets */
        if (vec_push(&off, (int32_t)i) < 0)
            goto done;
        if (w[i] < 0) {
            i++;
            continue;
        }
        size_t p = i + 2;
        for (int32_t b = 0; b < w[i + 1]; b++)
            p += 2 + 2 * (size_t)w[p + 1];
        i = p;
    }
    if (off.n == 0 || (val = PyMem_Malloc(2 * off.n * (size_t)k * sizeof(int32_t))) == NULL) {
        if (off.n == 0)
            PyErr_SetString(PyExc_ValueError, "empty tree code");
        else
            PyErr_NoMemory();
        goto done;
    }
    for (size_t e = 0; e < off.n; e++) {
        const int32_t *at = w + off.v[e];
        for (int pol = 0; pol < 2; pol++) {
            int32_t *V = val + (size_t)pol * off.n * (size_t)k;
            for (int32_t c = 0; c < k; c++) {
                int32_t r;
                if (at[0] < 0) { /* a leaf voting for class -1 - at[0] */
                    r = (c == -1 - at[0]) != pol;
                } else {
                    int32_t f = at[0], fast = 1;
                    size_t n_runs = 0;
                    const int32_t *b = at + 2;
                    for (int32_t j = 0; j < at[1]; j++, b += 2 + 2 * b[1]) {
                        int32_t ch = V[(size_t)b[0] * (size_t)k + c];
                        if (ch > 1 && S->rank[S->node[ch].feat] <= S->rank[f])
                            fast = 0;
                        if (reserve((void **)&runs, &cap_runs, n_runs + (size_t)b[1],
                                    sizeof(Run)) < 0)
                            goto done;
                        for (int32_t q = 0; q < b[1]; q++)
                            runs[n_runs++] = (Run){b[2 + 2 * q], b[3 + 2 * q], ch};
                    }
                    if (fast) {
                        qsort(runs, n_runs, sizeof(Run), cmp_run);
                        r = runs_node(S, f, runs, n_runs);
                    } else {
                        r = 0;
                        size_t first = 0;
                        b = at + 2;
                        for (int32_t j = 0; j < at[1] && r != ERR; j++, b += 2 + 2 * b[1]) {
                            for (int32_t q = 0; q < b[1]; q++)
                                runs[first + q].child = 1;
                            int32_t lit = runs_node(S, f, runs + first, (size_t)b[1]);
                            int32_t ch = V[(size_t)b[0] * (size_t)k + c];
                            int32_t both = lit == ERR ? ERR : apply_rec(S, OP_AND, lit, ch);
                            r = both == ERR ? ERR : apply_rec(S, OP_OR, r, both);
                            first += (size_t)b[1];
                        }
                    }
                }
                if (r == ERR)
                    goto done;
                V[e * (size_t)k + c] = r;
            }
        }
    }
    for (int32_t c = 0; c < k; c++) { /* the root is the last entry */
        pos[c] = val[(off.n - 1) * (size_t)k + c];
        neg[c] = val[(2 * off.n - 1) * (size_t)k + c];
    }
    ok = 0;
done:
    PyMem_Free(off.v);
    PyMem_Free(val);
    PyMem_Free(runs);
    return ok;
}

static PyObject *Store_tree_formulas(Store *S, PyObject *args)
{
    PyObject *cobj, *seq = NULL, *pos = NULL, *neg = NULL, *out = NULL;
    int k;
    int32_t *p = NULL, *q = NULL;
    if (!PyArg_ParseTuple(args, "Oi:tree_formulas", &cobj, &k))
        return NULL;
    if (k < 1) {
        PyErr_SetString(PyExc_ValueError, "tree_formulas needs at least one class");
        return NULL;
    }
    seq = PySequence_Fast(cobj, "codes must be a sequence of bytes");
    p = PyMem_Malloc((size_t)k * sizeof(int32_t));
    q = PyMem_Malloc((size_t)k * sizeof(int32_t));
    if (seq == NULL || p == NULL || q == NULL || (pos = PyList_New(k)) == NULL
        || (neg = PyList_New(k)) == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (int c = 0; c < k; c++) {
        PyObject *a = PyList_New(n), *b = PyList_New(n);
        if (a == NULL || b == NULL) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            goto done;
        }
        PyList_SET_ITEM(pos, c, a);
        PyList_SET_ITEM(neg, c, b);
    }
    for (Py_ssize_t t = 0; t < n; t++) {
        char *bytes;
        Py_ssize_t size;
        if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(seq, t), &bytes, &size) < 0)
            goto done;
        if (size % (Py_ssize_t)sizeof(int32_t) != 0) {
            PyErr_SetString(PyExc_ValueError, "a tree code is a whole number of int32");
            goto done;
        }
        if (tree_stage(S, (const int32_t *)bytes, (size_t)size / sizeof(int32_t), k, p, q) < 0)
            goto done;
        for (int c = 0; c < k; c++) {
            PyObject *a = PyLong_FromLong(p[c]), *b = PyLong_FromLong(q[c]);
            if (a == NULL || b == NULL) {
                Py_XDECREF(a);
                Py_XDECREF(b);
                goto done;
            }
            PyList_SET_ITEM(PyList_GET_ITEM(pos, c), t, a);
            PyList_SET_ITEM(PyList_GET_ITEM(neg, c), t, b);
        }
    }
    out = PyTuple_Pack(2, pos, neg);
done:
    Py_XDECREF(seq);
    Py_XDECREF(pos);
    Py_XDECREF(neg);
    PyMem_Free(p);
    PyMem_Free(q);
    return out;
}

static PyObject *Store_evaluate(Store *S, PyObject *args)
{
    PyObject *robj, *xobj, *out = NULL;
    IntVec roots = {NULL, 0, 0};
    int32_t *x = NULL;
    if (!PyArg_ParseTuple(args, "OO", &robj, &xobj) || roots_arg(S, robj, &roots) < 0
        || instance_arg(S, xobj, &x) < 0)
        goto done;
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(roots.n + 7) / 8);
    if (out == NULL)
        goto done;
    unsigned char *value = (unsigned char *)PyBytes_AS_STRING(out);
    memset(value, 0, (roots.n + 7) / 8);
    for (size_t i = 0; i < roots.n; i++) {
        int32_t n = roots.v[i];
        while (n > 1) {
            const Seg *s = S->segs + S->node[n].first;
            int32_t state = x[S->node[n].feat];
            while (s->end <= state)
                s++;
            n = s->child;
        }
        if (n == GAP) {
            PyErr_SetString(PyExc_ValueError, "the instance's state is not feasible on its path");
            Py_CLEAR(out);
            goto done;
        }
        value[i / 8] |= (unsigned char)(n << (i % 8));
    }
done:
    PyMem_Free(roots.v);
    PyMem_Free(x);
    return out;
}

static PyObject *Store_reachable(Store *S, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "roots must be a sequence of node ids");
    if (seq == NULL)
        return NULL;
    IntVec nodes = {NULL, 0, 0};
    PyObject *out = NULL;
    uint32_t ep = next_epoch(S);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int32_t n;
        if (node_arg(S, PySequence_Fast_GET_ITEM(seq, i), &n) < 0)
            goto done;
        if (S->mark[n] != ep) {
            S->mark[n] = ep;
            if (vec_push(&nodes, n) < 0)
                goto done;
        }
    }
    if (reach(S, &nodes, ep, 0) < 0)
        goto done;
    qsort(nodes.v, nodes.n, sizeof(int32_t), cmp_int32);
    out = PyList_New((Py_ssize_t)nodes.n);
    if (out == NULL)
        goto done;
    for (size_t i = 0; i < nodes.n; i++) {
        PyObject *id = PyLong_FromLong(nodes.v[i]);
        if (id == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, id);
    }
done:
    PyMem_Free(nodes.v);
    Py_DECREF(seq);
    return out;
}

static int reset_computed(Store *S)
{
    for (int op = 0; op < 2; op++) {
        Table fresh;
        if (table_init(&fresh, MIN_TABLE) < 0)
            return -1;
        PyMem_Free(S->computed[op].slots);
        S->computed[op] = fresh;
    }
    return 0;
}

/* PyStore.collect. Ascending renumbering lets one forward pass compact the node records,
 * the segment pool and the negations in place: a kept node's new id and segment offset are
 * never above its old ones, and a node's children are renumbered before it. */
static PyObject *Store_collect(Store *S, PyObject *arg)
{
    IntVec roots = {NULL, 0, 0}, keep = {NULL, 0, 0};
    int32_t *map = NULL;
    Slot *unique = NULL;
    Table fresh[2] = {{NULL, 0, 0}, {NULL, 0, 0}};
    PyObject *out = NULL;
    if (roots_arg(S, arg, &roots) < 0)
        goto done;
    layouts_clear(S); /* node ids change */
    uint32_t ep = next_epoch(S);
    for (int32_t leaf = 0; leaf < 2; leaf++) {
        S->mark[leaf] = ep;
        if (vec_push(&keep, leaf) < 0)
            goto done;
    }
    for (size_t i = 0; i < roots.n; i++)
        if (S->mark[roots.v[i]] != ep) {
            S->mark[roots.v[i]] = ep;
            if (vec_push(&keep, roots.v[i]) < 0)
                goto done;
        }
    if (reach(S, &keep, ep, 0) < 0)
        goto done;
    qsort(keep.v, keep.n, sizeof(int32_t), cmp_int32);
    size_t count = keep.n, slots = MIN_TABLE;
    while (slots < 2 * count)
        slots *= 2;
    map = PyMem_Malloc(S->n_nodes * sizeof(int32_t));
    unique = PyMem_Malloc(slots * sizeof(Slot));
    if (map == NULL || unique == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memset(map, 0xff, S->n_nodes * sizeof(int32_t));
    for (size_t i = 0; i < count; i++)
        map[keep.v[i]] = (int32_t)i;
    if (table_init(&fresh[0], MIN_TABLE) < 0 || table_init(&fresh[1], MIN_TABLE) < 0
        || (out = PyList_New((Py_ssize_t)roots.n)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)roots.n; i++) {
        PyObject *id = PyLong_FromLong(map[roots.v[i]]);
        if (id == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, id);
    }
    /* Nothing below can fail: the store is rewritten from here on. */
    memset(unique, 0xff, slots * sizeof(Slot));
    int64_t pos = 0;
    for (size_t i = 0; i < count; i++) {
        int32_t old = keep.v[i];
        Node d = S->node[old];
        Seg *s = S->segs + pos;
        memmove(s, S->segs + d.first, d.nseg * sizeof(Seg));
        for (uint32_t j = 0; j < d.nseg; j++)
            if (s[j].child != GAP)
                s[j].child = map[s[j].child];
        S->node[i] = (Node){pos, d.feat, d.nseg, d.ord};
        S->neg[i] = S->neg[old] >= 0 ? map[S->neg[old]] : -1;
        S->mark[i] = 0;
        pos += d.nseg;
        if (i >= 2) {
            uint32_t h = node_hash(d.feat, s, d.nseg);
            size_t k = h & (slots - 1);
            while (unique[k].id >= 0)
                k = (k + 1) & (slots - 1);
            unique[k] = (Slot){(int32_t)i, h};
        }
    }
    S->n_nodes = count;
    S->n_segs = (size_t)pos;
    S->epoch = 0;
    PyMem_Free(S->unique);
    S->unique = unique;
    S->unique_mask = slots - 1;
    unique = NULL;
    for (int op = 0; op < 2; op++) {
        PyMem_Free(S->computed[op].slots);
        S->computed[op] = fresh[op];
        fresh[op].slots = NULL;
    }
done:
    PyMem_Free(roots.v);
    PyMem_Free(keep.v);
    PyMem_Free(map);
    PyMem_Free(unique);
    PyMem_Free(fresh[0].slots);
    PyMem_Free(fresh[1].slots);
    return out;
}

static PyObject *Store_clear(Store *S, PyObject *Py_UNUSED(ignored))
{
    if (reset_computed(S) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static Py_ssize_t Store_len(Store *S)
{
    return (Py_ssize_t)S->n_nodes;
}

static PyObject *Store_column(Store *S, void *kind)
{
    Column *c = PyObject_New(Column, &ColumnType);
    if (c == NULL)
        return NULL;
    Py_INCREF(S);
    c->store = S;
    c->kind = (int)(intptr_t)kind;
    return (PyObject *)c;
}

/* Fill a per-feature int array from a Python sequence of length n_features. */
static int int_array(PyObject *obj, Py_ssize_t n, int32_t **out, const char *what)
{
    PyObject *seq = PySequence_Fast(obj, what);
    if (seq == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd values", what, n);
        Py_DECREF(seq);
        return -1;
    }
    *out = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (*out == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if ((v == -1 && PyErr_Occurred()) || v < 0 || v > INT32_MAX - 1) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "%s: value out of range", what);
            Py_DECREF(seq);
            return -1;
        }
        (*out)[i] = (int32_t)v;
    }
    Py_DECREF(seq);
    return 0;
}

static PyObject *Store_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"n_states", "rank", "max_nodes", "deadline", "error",
                             "nodes_message", "time_message", NULL};
    PyObject *n_states, *rank, *max_nodes, *deadline, *error, *nodes_message, *time_message;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOUU:Store", kwlist, &n_states, &rank,
                                     &max_nodes, &deadline, &error, &nodes_message,
                                     &time_message))
        return NULL;
    Py_ssize_t k = PyObject_Length(n_states);
    if (k < 0)
        return NULL;
    Store *S = (Store *)type->tp_alloc(type, 0); /* zeroed: dealloc is safe at any point */
    if (S == NULL)
        return NULL;
    S->n_features = k;
    Py_INCREF(error);
    S->error = error;
    Py_INCREF(nodes_message);
    S->nodes_message = nodes_message;
    Py_INCREF(time_message);
    S->time_message = time_message;
    S->max_nodes = -1;
    if (max_nodes != Py_None) {
        S->max_nodes = PyLong_AsLongLong(max_nodes);
        if (S->max_nodes == -1 && PyErr_Occurred())
            goto fail;
        if (S->max_nodes < 0)
            S->max_nodes = 0;
    }
    if (deadline != Py_None) {
        S->deadline = PyFloat_AsDouble(deadline);
        if (S->deadline == -1.0 && PyErr_Occurred())
            goto fail;
        S->has_deadline = 1;
    }
    if (int_array(n_states, k, &S->n_states, "n_states") < 0
        || int_array(rank, k, &S->rank, "rank") < 0)
        goto fail;
    for (Py_ssize_t f = 0; f < k; f++)
        if (S->n_states[f] < 1 || S->rank[f] >= k) {
            PyErr_SetString(PyExc_ValueError, "bad n_states or rank");
            goto fail;
        }
    S->unique = PyMem_Malloc(MIN_TABLE * sizeof(Slot));
    if (S->unique == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memset(S->unique, 0xff, MIN_TABLE * sizeof(Slot));
    S->unique_mask = MIN_TABLE - 1;
    if (table_init(&S->computed[0], MIN_TABLE) < 0 || table_init(&S->computed[1], MIN_TABLE) < 0
        || reserve_nodes(S, 2) < 0)
        goto fail;
    for (int n = 0; n < 2; n++) { /* the leaves: false (0) and true (1) */
        S->node[n] = (Node){0, LEAF, 0, 1};
        S->neg[n] = 1 - n;
        S->mark[n] = 0;
    }
    S->n_nodes = 2;
    return (PyObject *)S;
fail:
    Py_DECREF(S);
    return NULL;
}

static void Store_dealloc(Store *S)
{
    PyMem_Free(S->n_states);
    PyMem_Free(S->rank);
    PyMem_Free(S->node);
    PyMem_Free(S->neg);
    PyMem_Free(S->mark);
    PyMem_Free(S->segs);
    PyMem_Free(S->unique);
    PyMem_Free(S->computed[0].slots);
    PyMem_Free(S->computed[1].slots);
    PyMem_Free(S->scratch);
    PyMem_Free(S->jobs);
    layouts_clear(S);
    if (S->search != NULL) {
        search_trim(S->search, 1);
        PyMem_Free(S->search);
    }
    Py_XDECREF(S->error);
    Py_XDECREF(S->nodes_message);
    Py_XDECREF(S->time_message);
    Py_TYPE(S)->tp_free((PyObject *)S);
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
static int instance_arg(Store *S, PyObject *obj, int32_t **out)
{
    if (int_array(obj, S->n_features, out, "instance states") < 0)
        return -1;
    for (Py_ssize_t f = 0; f < S->n_features; f++)
        if ((*out)[f] >= S->n_states[f]) {
            PyErr_Format(PyExc_ValueError, "instance state %d of feature %zd out of range",
                         (*out)[f], f);
            return -1;
        }
    return 0;
}

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

/* -- violated paths of the general reason (PyStore.violations: GSRs) ------------------- */

typedef int16_t Cost; /* 16 bits: eight lanes per SSE2 vector, and half the memory traffic */
#define VIOL_INF (1 << 14) /* no violated path: costs are clamped to it (sums stay below 2^15) */
#define VIOL_LANES 128     /* most boxes per pass over the graph */
#define PREFETCH 2 /* nodes ahead whose children's cost rows are prefetched */
#define VIOL_BYTES ((size_t)1 << 30) /* most bytes of costs per pass (over 8 lanes) */

/* The program of a root list: cached (the GSR search checks boxes below one root list many
 * times), else built from the nodes below the roots in depth-first postorder, children
 * first: a node mostly comes right after one of its children, whose cost row is then still
 * in cache (in ascending id order the rows read are scattered over the whole table). */
static Program *program_for(Store *S, const int32_t *roots, size_t n_roots)
{
    Program *P = &S->program;
    if (P->roots != NULL && P->n_roots == n_roots
        && memcmp(P->roots, roots, n_roots * sizeof(int32_t)) == 0)
        return P;
    program_free(P);
    IntVec nodes = {NULL, 0, 0}, stack = {NULL, 0, 0}; /* stack: (node, next segment) */
    int32_t *pos = NULL;
    uint32_t ep = next_epoch(S);
    for (int32_t leaf = 0; leaf < 2; leaf++) {
        S->mark[leaf] = ep;
        if (vec_push(&nodes, leaf) < 0)
            goto fail;
    }
    for (size_t r = 0; r < n_roots; r++) {
        if (S->mark[roots[r]] == ep)
            continue;
        S->mark[roots[r]] = ep;
        if (vec_push(&stack, roots[r]) < 0 || vec_push(&stack, 0) < 0)
            goto fail;
        while (stack.n) {
            int32_t n = stack.v[stack.n - 2], j = stack.v[stack.n - 1];
            Node d = S->node[n];
            if ((uint32_t)j == d.nseg) {
                stack.n -= 2;
                if (vec_push(&nodes, n) < 0)
                    goto fail;
                continue;
            }
            stack.v[stack.n - 1] = j + 1;
            int32_t c = S->segs[d.first + j].child;
            if (c != GAP && S->mark[c] != ep) {
                S->mark[c] = ep;
                if (vec_push(&stack, c) < 0 || vec_push(&stack, 0) < 0)
                    goto fail;
            }
        }
    }
    PyMem_Free(stack.v);
    stack.v = NULL;
    size_t len = 0;
    for (size_t i = 0; i < nodes.n; i++)
        len += 2 + 2 * (size_t)S->node[nodes.v[i]].nseg;
    pos = PyMem_Malloc(S->n_nodes * sizeof(int32_t));
    P->roots = PyMem_Malloc((n_roots ? n_roots : 1) * sizeof(int32_t));
    P->root_at = PyMem_Malloc((n_roots ? n_roots : 1) * sizeof(int32_t));
    P->at = PyMem_Malloc(nodes.n * sizeof(size_t));
    P->code = PyMem_Malloc(len * sizeof(int32_t));
    if (pos == NULL || P->roots == NULL || P->root_at == NULL || P->at == NULL
        || P->code == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (size_t i = 0; i < nodes.n; i++)
        pos[nodes.v[i]] = (int32_t)i;
    len = 0;
    for (size_t i = 0; i < nodes.n; i++) {
        Node d = S->node[nodes.v[i]];
        int32_t *c = P->code + len;
        P->at[i] = len;
        c[0] = d.feat;
        c[1] = (int32_t)d.nseg;
        for (uint32_t j = 0; j < d.nseg; j++) {
            Seg g = S->segs[d.first + j];
            c[2 + 2 * j] = g.end;
            c[3 + 2 * j] = g.child == GAP ? GAP : pos[g.child];
        }
        len += 2 + 2 * (size_t)d.nseg;
    }
    memcpy(P->roots, roots, n_roots * sizeof(int32_t));
    for (size_t i = 0; i < n_roots; i++)
        P->root_at[i] = pos[roots[i]];
    P->n_roots = n_roots;
    P->id = nodes.v; /* positions to ids: the node list itself */
    P->n = nodes.n;
    PyMem_Free(pos);
    return P;
fail:
    PyMem_Free(nodes.v);
    PyMem_Free(stack.v);
    PyMem_Free(pos);
    program_free(P);
    return NULL;
}

/* The position a node's segments send state s to (GAP when not feasible). */
static int32_t child_at(const int32_t *c, int32_t s)
{
    const int32_t *g = c + 2;
    while (g[0] <= s)
        g += 2;
    return g[1];
}

/* The cheapest violated path of lane b from position i (its cost below VIOL_INF), as a tuple
 * of its deviating edges (node, child) by store id, found the way PyStore.violations finds
 * it. `pre` and `dev` are laid out as in violation_costs. */
static PyObject *violated_path(const Program *P, const int32_t *x, const Cost *cost,
                               const uint16_t *pre, const int32_t *base, const Cost *dev,
                               int width, int b, int32_t i)
{
    PyObject *path = PyList_New(0), *out = NULL;
    if (path == NULL)
        return NULL;
    while (i != 0) {
        const int32_t *c = P->code + P->at[i];
        int32_t f = c[0], own = child_at(c, x[f]), start = 0, next = GAP;
        int32_t here = cost[(size_t)i * width + b];
        for (int32_t j = 0; j < c[1]; start = c[2 + 2 * j++]) {
            int32_t end = c[2 + 2 * j], child = c[3 + 2 * j];
            if (child == GAP || child == 1
                || pre[(size_t)(base[f] + end) * width + b]
                       == pre[(size_t)(base[f] + start) * width + b])
                continue;
            int32_t below = cost[(size_t)child * width + b];
            if (below < VIOL_INF
                && below + (child != own ? dev[(size_t)f * width + b] : 0) == here) {
                next = child;
                break;
            }
        }
        if (next == GAP) {
            PyErr_Format(PyExc_SystemError, "no branch of node %d reaches its cost", P->id[i]);
            goto done;
        }
        if (next != own) {
            PyObject *edge = Py_BuildValue("(ii)", P->id[i], P->id[next]);
            if (edge == NULL || PyList_Append(path, edge) < 0) {
                Py_XDECREF(edge);
                goto done;
            }
            Py_DECREF(edge);
        }
        i = next;
    }
    out = PyList_AsTuple(path);
done:
    Py_DECREF(path);
    return out;
}

/* Lane by lane: here = min(here, below + add, VIOL_INF) where the box meets the branch (it
 * allows a state whose count hi differs from lo, counts modulo 2^16: exact below 2^16
 * states). Branch-free, on restrict parameters: it vectorises. */
static inline void lane_min(int width, Cost *restrict here, const Cost *restrict below,
                            const Cost *restrict add, const uint16_t *restrict hi,
                            const uint16_t *restrict lo)
{
    for (int b = 0; b < width; b++) { /* selects by masks, which -O2 vectorises */
        Cost c = (Cost)(below[b] + add[b]);
        Cost inside = (Cost) - (c < VIOL_INF);
        Cost meets = (Cost) - (hi[b] != lo[b]);
        c = (Cost)((c & inside & meets) | (VIOL_INF & ~(inside & meets)));
        Cost less = (Cost) - (c < here[b]);
        here[b] = (Cost)((c & less) | (here[b] & ~less));
    }
}

/* PyStore.violations for up to `width` boxes at once. Per position, the boxes' costs sit
 * side by side (lane b of position i at cost[i * width + b]), and so do, per feature and
 * state, the numbers of states each box allows below it (pre) and the cost of deviating on
 * each feature (dev), so that the inner loop over the lanes is branch-free and vectorises.
 * Always inlined, so that each constant width of Store_violations gets its own loops. */
static inline __attribute__((always_inline)) void
violation_costs(const Program *P, const int32_t *x, const uint16_t *pre, const int32_t *base,
                const Cost *dev, int width, Cost *cost)
{
    static const Cost no_cost[VIOL_LANES] = {0};
    for (int b = 0; b < width; b++) {
        cost[b] = 0;              /* false */
        cost[width + b] = VIOL_INF; /* true */
    }
    for (size_t i = 2; i < P->n; i++) {
        const int32_t *c = P->code + P->at[i];
        Cost *here = cost + i * width;
        if (i + PREFETCH < P->n) { /* the rows a later node reads: misses are the cost here */
            const int32_t *later = P->code + P->at[i + PREFETCH];
            for (int32_t j = 0; j < later[1]; j++)
                if (later[3 + 2 * j] >= 0)
                    for (int b = 0; b < width; b += 32)
                        __builtin_prefetch(cost + (size_t)later[3 + 2 * j] * width + b);
        }
        int32_t f = c[0], own = child_at(c, x[f]), start = 0;
        for (int b = 0; b < width; b++)
            here[b] = VIOL_INF;
        for (int32_t j = 0; j < c[1]; start = c[2 + 2 * j++]) {
            int32_t end = c[2 + 2 * j], child = c[3 + 2 * j];
            if (child == GAP || child == 1)
                continue;
            lane_min(width, here, cost + (size_t)child * width,
                     child == own ? no_cost : dev + (size_t)f * width,
                     pre + (size_t)(base[f] + end) * width,
                     pre + (size_t)(base[f] + start) * width);
        }
    }
}

static PyObject *Store_violations(Store *S, PyObject *args)
{
    PyObject *robj, *xobj, *bobj, *boxes = NULL, *out = NULL;
    IntVec roots = {NULL, 0, 0};
    int32_t *x = NULL, *base = NULL;
    uint16_t *pre = NULL;
    Cost *cost = NULL, *dev = NULL;
    if (!PyArg_ParseTuple(args, "OOO:violations", &robj, &xobj, &bobj))
        return NULL;
    Py_ssize_t k = S->n_features;
    if (instance_arg(S, xobj, &x) < 0 || roots_arg(S, robj, &roots) < 0)
        goto done;
    boxes = PySequence_Fast(bobj, "boxes must be a sequence of bytes");
    if (boxes == NULL)
        goto done;
    /* a box record: a weight per feature, then per feature a byte per state */
    base = PyMem_Malloc((size_t)(k + 1) * sizeof(int32_t));
    if (base == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t record = k, prefix = 0;
    for (Py_ssize_t f = 0; f < k; f++) {
        base[f] = (int32_t)prefix;
        record += S->n_states[f];
        prefix += S->n_states[f] + 1;
    }
    Py_ssize_t n_boxes = PySequence_Fast_GET_SIZE(boxes);
    for (Py_ssize_t i = 0; i < n_boxes; i++) {
        PyObject *r = PySequence_Fast_GET_ITEM(boxes, i);
        if (!PyBytes_Check(r) || PyBytes_GET_SIZE(r) != record) {
            PyErr_Format(PyExc_ValueError, "box %zd: expected bytes of length %zd", i, record);
            goto done;
        }
    }
    for (Py_ssize_t f = 0; f < k; f++)
        if (S->n_states[f] > UINT16_MAX) { /* counts of allowed states modulo 2^16 */
            PyErr_SetString(PyExc_OverflowError, "violations: a feature has over 65535 states");
            goto done;
        }
    if (k >= VIOL_INF) {
        PyErr_SetString(PyExc_OverflowError, "violations: too many features for 16-bit costs");
        goto done;
    }
    /* the cost of a deviation on a weighted feature (1 on the others), as
     * rfcircuits.dgstore.weighted_deviation: every path costs less than VIOL_INF */
    Cost heavy = (Cost)(k * (k + 1) < VIOL_INF ? k + 1 : (VIOL_INF - 1) / k);
    Program *P = program_for(S, roots.v, roots.n);
    if (P == NULL)
        goto done;
    /* lanes per pass: a power of two from 8 to VIOL_LANES, the least holding all the boxes,
     * and at most VIOL_BYTES of costs unless 8 lanes already take more */
    int width = 8;
    while (width < VIOL_LANES && width < n_boxes
           && P->n * 2 * (size_t)width * sizeof(Cost) <= VIOL_BYTES)
        width *= 2;
    cost = PyMem_Malloc(P->n * width * sizeof(Cost));
    pre = PyMem_Malloc((size_t)(prefix ? prefix : 1) * width * sizeof(uint16_t));
    dev = PyMem_Calloc((size_t)(k ? k : 1) * width, sizeof(Cost));
    if (cost == NULL || pre == NULL || dev == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    out = PyList_New(n_boxes);
    if (out == NULL)
        goto done;
    for (Py_ssize_t first = 0; first < n_boxes; first += width) {
        int lanes = (int)(n_boxes - first < width ? n_boxes - first : width);
        memset(pre, 0, (size_t)prefix * width * sizeof(uint16_t)); /* idle lanes: empty */
        for (int b = 0; b < lanes; b++) {
            const uint8_t *r = (const uint8_t *)PyBytes_AS_STRING(
                PySequence_Fast_GET_ITEM(boxes, first + b));
            const uint8_t *states = r + k;
            for (Py_ssize_t f = 0; f < k; f++) {
                dev[f * width + b] = r[f] ? heavy : 1;
                uint16_t *p = pre + (size_t)base[f] * width + b;
                for (int32_t s = 0; s < S->n_states[f]; s++)
                    p[(s + 1) * width] = (uint16_t)(p[s * width] + (states[s] != 0));
                states += S->n_states[f];
            }
        }
        switch (width) { /* constant widths: loops of known length */
        case 8:
            violation_costs(P, x, pre, base, dev, 8, cost);
            break;
        case 16:
            violation_costs(P, x, pre, base, dev, 16, cost);
            break;
        case 32:
            violation_costs(P, x, pre, base, dev, 32, cost);
            break;
        case 64:
            violation_costs(P, x, pre, base, dev, 64, cost);
            break;
        default:
            violation_costs(P, x, pre, base, dev, VIOL_LANES, cost);
        }
        for (int b = 0; b < lanes; b++) {
            int32_t least = VIOL_INF, root = GAP;
            for (size_t i = 0; i < P->n_roots; i++) {
                int32_t c = cost[(size_t)P->root_at[i] * width + b];
                if (c < least) {
                    least = c;
                    root = P->root_at[i];
                }
            }
            PyObject *item;
            if (root == GAP) {
                Py_INCREF(Py_None);
                item = Py_None;
            } else {
                item = violated_path(P, x, cost, pre, base, dev, width, b, root);
                if (item == NULL) {
                    Py_CLEAR(out);
                    goto done;
                }
            }
            PyList_SET_ITEM(out, first + b, item);
        }
        if (PyErr_CheckSignals() < 0) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    Py_XDECREF(boxes);
    PyMem_Free(roots.v);
    PyMem_Free(x);
    PyMem_Free(base);
    PyMem_Free(pre);
    PyMem_Free(cost);
    PyMem_Free(dev);
    return out;
}

static PyMethodDef Store_methods[] = {
    {"make", (PyCFunction)Store_make, METH_VARARGS,
     "make($self, feature, segments, /)\n--\n\n"
     "The id of the reduced, hash-consed node (segments validated)."},
    {"lookup", (PyCFunction)Store_lookup, METH_VARARGS,
     "lookup($self, feature, segments, /)\n--\n\n"
     "The id of that node, or -1."},
    {"segments", (PyCFunction)Store_segments, METH_O,
     "segments($self, n, /)\n--\n\n"
     "((end, child), ...) of node n (empty for a leaf)."},
    {"branches", (PyCFunction)Store_branches, METH_O,
     "branches($self, n, /)\n--\n\n"
     "((state mask, child), ...) of node n, by lowest state (empty for a leaf)."},
    {"apply", (PyCFunction)Store_apply, METH_VARARGS,
     "apply($self, op, a, b, /)\n--\n\n"
     "a and b (op 0) or a or b (op 1) of two ordered nodes."},
    {"negate", (PyCFunction)Store_negate, METH_O,
     "negate($self, root, /)\n--\n\n"
     "The node with leaves swapped."},
    {"exists", (PyCFunction)Store_exists, METH_VARARGS,
     "exists($self, root, feature, /)\n--\n\n"
     "The ordered node of: some state of feature satisfies root."},
    {"threshold", (PyCFunction)Store_threshold, METH_VARARGS,
     "threshold($self, roots, ks, /)\n--\n\n"
     "Per k the ordered node of: at least k of roots are true."},
    {"tree_formulas", (PyCFunction)Store_tree_formulas, METH_VARARGS,
     "tree_formulas($self, codes, k, /)\n--\n\n"
     "(pos, neg): C^c_l and ¬C^c_l of trees (rfcircuits.dgcompile)."},
    {"evaluate", (PyCFunction)Store_evaluate, METH_VARARGS,
     "evaluate($self, roots, x, /)\n--\n\n"
     "bytes whose bit i (little-endian) is set if x satisfies roots[i]."},
    {"reachable", (PyCFunction)Store_reachable, METH_O,
     "reachable($self, roots, /)\n--\n\n"
     "Ascending ids of all nodes below the roots."},
    {"collect", (PyCFunction)Store_collect, METH_O,
     "collect($self, roots, /)\n--\n\n"
     "New ids of the roots; keeps only the nodes below them, renumbered."},
    {"clear", (PyCFunction)Store_clear, METH_NOARGS,
     "clear($self, /)\n--\n\n"
     "Drop Apply's computed tables."},
    {"prepare", (PyCFunction)Store_prepare, METH_O,
     "prepare($self, roots, /)\n--\n\n"
     "Lay out the graph below roots for min_deviations now (cached)."},
    {"min_deviations", (PyCFunction)Store_min_deviations, METH_VARARGS,
     "min_deviations($self, roots, x, /)\n--\n\n"
     "Minimal deviation sets of the paths to false (bitmasks)."},
    {"violations", (PyCFunction)Store_violations, METH_VARARGS,
     "violations($self, roots, x, boxes, /)\n--\n\n"
     "Per box a cheapest violated path to false, or None."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Store_getset[] = {
    {"feature", (getter)Store_column, NULL, "feature[n]: feature of node n (-1: leaf).",
     (void *)0},
    {"ordered", (getter)Store_column, NULL, "ordered[n]: node n is ordered.", (void *)1},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Store_as_sequence = {.sq_length = (lenfunc)Store_len};

static PyTypeObject StoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rfcircuits._dgstore.Store",
    .tp_doc = "Decision-graph node store (C twin of rfcircuits.dgstore.PyStore).",
    .tp_basicsize = sizeof(Store),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* rfcircuits.cstore extends it */
    .tp_new = Store_new,
    .tp_dealloc = (destructor)Store_dealloc,
    .tp_methods = Store_methods,
    .tp_getset = Store_getset,
    .tp_as_sequence = &Store_as_sequence,
};

/* -- columns: read-only sequence views of per-node data -------------------------------- */

static Py_ssize_t Column_len(Column *c)
{
    return (Py_ssize_t)c->store->n_nodes;
}

static PyObject *Column_item(Column *c, Py_ssize_t i)
{
    Store *S = c->store;
    if (i < 0 || (size_t)i >= S->n_nodes) {
        PyErr_SetString(PyExc_IndexError, "node id out of range");
        return NULL;
    }
    if (c->kind == 0)
        return PyLong_FromLong(S->node[i].feat);
    return PyBool_FromLong(S->node[i].ord);
}

static void Column_dealloc(Column *c)
{
    Py_DECREF(c->store);
    PyObject_Free(c);
}

static PySequenceMethods Column_as_sequence = {
    .sq_length = (lenfunc)Column_len,
    .sq_item = (ssizeargfunc)Column_item,
};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rfcircuits._dgstore.Column",
    .tp_doc = "Read-only view of one per-node array of a Store.",
    .tp_basicsize = sizeof(Column),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Column_dealloc,
    .tp_as_sequence = &Column_as_sequence,
};

/* -- minimal hitting sets (rfcircuits.primes.hitting_sets' C twin) ---------------------------- */

/* One level of the MMCS search (see core/primes.py, whose Python function defines the
 * semantics and the order of the search): the partial set S, the members only each u of S
 * hits (crit, one row of ew words per u, in the order the u were added), the members still
 * unhit, the candidates, and the features left to try at this level. */
typedef struct {
    uint64_t *s, *cand, *uncov, *crit;
    int *todo;
    int n_crit, n_todo, next, ready;
} HsFrame;

/* Level d's arrays (d crit rows), allocated when the search first gets there; 0 or -1. */
static int hs_frame(HsFrame *F, size_t d, size_t fw, size_t ew)
{
    if (F->s != NULL)
        return 0;
    F->s = calloc(2 * fw + ew + d * ew + 1, 8);
    F->todo = malloc((fw * 64 + 1) * sizeof(int));
    if (F->s == NULL || F->todo == NULL)
        return -1;
    F->cand = F->s + fw;
    F->uncov = F->cand + fw;
    F->crit = F->uncov + ew;
    return 0;
}

/* hitting_sets(edges, width) -> bytes: edges is a bytes object of m feature masks of `width`
 * little-endian 64-bit words each, sorted by size, none empty; returns the minimal hitting
 * sets, concatenated in the same format, in the order MMCS finds them. */
static PyObject *hitting_sets(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t fw_arg;
    if (!PyArg_ParseTuple(args, "y*n", &buf, &fw_arg))
        return NULL;
    size_t fw = (size_t)fw_arg, nf = fw * 64;
    size_t m = fw ? (size_t)buf.len / (fw * 8) : 0, ew = (m + 63) / 64;
    const uint64_t *edges = buf.buf;
    PyObject *result = NULL;
    uint64_t *occ = calloc(nf * ew + 1, 8), *out = NULL;
    HsFrame *fr = calloc(nf + 2, sizeof(HsFrame));
    size_t n_out = 0, cap_out = 0;
    unsigned long ticks = 0;
    if (occ == NULL || fr == NULL)
        goto nomem;
    for (size_t i = 0; i < m; i++)
        for (size_t f = 0; f < nf; f++)
            if (edges[i * fw + f / 64] >> (f % 64) & 1)
                occ[f * ew + i / 64] |= 1ULL << (i % 64);
    /* the depth is at most the number of features plus one: each level adds one */
    if (hs_frame(&fr[0], 0, fw, ew) < 0)
        goto nomem;
    {
        HsFrame *R = &fr[0];
        for (size_t i = 0; i < m; i++) {
            R->uncov[i / 64] |= 1ULL << (i % 64);
            for (size_t w = 0; w < fw; w++)
                R->cand[w] |= edges[i * fw + w];
        }
        R->n_crit = 0;
        R->ready = 0;
    }
    size_t depth = 1;
    while (depth) {
        HsFrame *F = &fr[depth - 1];
        if ((++ticks & 0xffff) == 0 && PyErr_CheckSignals() < 0)
            goto done;
        if (!F->ready) {
            size_t i = 0;
            while (i < ew && F->uncov[i] == 0)
                i++;
            if (i == ew) { /* every member is hit: S is a minimal hitting set */
                if (n_out == cap_out) {
                    cap_out = cap_out ? 2 * cap_out : 64;
                    uint64_t *grown = realloc(out, cap_out * fw * 8);
                    if (grown == NULL)
                        goto nomem;
                    out = grown;
                }
                memcpy(out + n_out++ * fw, F->s, fw * 8);
                depth--;
                continue;
            }
            /* the first unhit member (the smallest): its candidates are the branches */
            const uint64_t *c = edges + (i * 64 + (size_t)__builtin_ctzll(F->uncov[i])) * fw;
            F->n_todo = 0;
            for (size_t w = 0; w < fw; w++) {
                uint64_t bitsw = c[w] & F->cand[w];
                F->cand[w] &= ~bitsw;
                while (bitsw) {
                    F->todo[F->n_todo++] = (int)(w * 64 + (size_t)__builtin_ctzll(bitsw));
                    bitsw &= bitsw - 1;
                }
            }
            F->next = 0;
            F->ready = 1;
        }
        if (F->next == F->n_todo) {
            depth--;
            continue;
        }
        int v = F->todo[F->next++];
        HsFrame *N = &fr[depth];
        if (hs_frame(N, depth, fw, ew) < 0)
            goto nomem;
        memcpy(N->cand, F->cand, fw * 8); /* the child's candidates exclude v ... */
        F->cand[v / 64] |= 1ULL << (v % 64); /* ... later siblings may use it */
        const uint64_t *ov = occ + (size_t)v * ew;
        int minimal = 1;
        for (int j = 0; j < F->n_crit && minimal; j++) {
            const uint64_t *cu = F->crit + (size_t)j * ew;
            uint64_t *nu = N->crit + (size_t)j * ew, any = 0;
            for (size_t w = 0; w < ew; w++)
                any |= nu[w] = cu[w] & ~ov[w];
            minimal = any != 0; /* u lost its last critical member: S + v is not minimal */
        }
        if (!minimal)
            continue;
        uint64_t *nv = N->crit + (size_t)F->n_crit * ew;
        for (size_t w = 0; w < ew; w++) {
            nv[w] = F->uncov[w] & ov[w];
            N->uncov[w] = F->uncov[w] & ~ov[w];
        }
        N->n_crit = F->n_crit + 1;
        memcpy(N->s, F->s, fw * 8);
        N->s[v / 64] |= 1ULL << (v % 64);
        N->ready = 0;
        depth++;
    }
    result = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)(n_out * fw * 8));
    goto done;
nomem:
    PyErr_NoMemory();
done:
    if (fr != NULL)
        for (size_t d = 0; d <= nf + 1; d++) {
            free(fr[d].s);
            free(fr[d].todo);
        }
    free(fr);
    free(occ);
    free(out);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef module_methods[] = {
    {"hitting_sets", hitting_sets, METH_VARARGS,
     "hitting_sets(edges: bytes, width: int) -> bytes: minimal hitting sets (rfcircuits.primes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_dgstore",
    .m_doc = "Decision-graph node store with ordered Apply (see core/dgstore.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__dgstore(void)
{
    if (PyType_Ready(&StoreType) < 0 || PyType_Ready(&ColumnType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&StoreType);
    if (PyModule_AddObject(m, "Store", (PyObject *)&StoreType) < 0) {
        Py_DECREF(&StoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
