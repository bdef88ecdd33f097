/* Ordered Apply (PyStore.apply) with its computed tables, negation (PyStore.negate) and
 * existential projection (PyStore.exists).
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

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
        __builtin_prefetch(&S->rec[a]);
        __builtin_prefetch(&S->rec[b]);
    }
#endif
    return 0;
}

/* Queue the sub-problems of a op b, f the first feature either tests (ranks ra and rb). */
static inline int push_jobs(Store *S, int op, int32_t a, int32_t b, int32_t ra, int32_t rb,
                            int32_t f)
{
    SegIt sa, sb;
    if (ra == rb) { /* same feature: two-pointer merge of the sorted segment lists */
        seg_begin(S, a, &sa);
        seg_begin(S, b, &sb);
        seg_next(&sa);
        seg_next(&sb);
        for (;;) {
            int32_t end = sa.end < sb.end ? sa.end : sb.end;
            int gap = sa.child == GAP || sb.child == GAP;
            if (push_job(S, op, end, gap ? GAP : sa.child, sb.child) < 0)
                return -1;
            if (end == S->n_states[f])
                break;
            if (sa.end == end)
                seg_next(&sa);
            if (sb.end == end)
                seg_next(&sb);
        }
    }
    else { /* the operand testing first branches; the other is constant along its branches */
        int32_t other = ra < rb ? b : a;
        seg_begin(S, ra < rb ? a : b, &sa);
        while (seg_next(&sa))
            if (push_job(S, op, sa.end, sa.child, other) < 0)
                return -1;
    }
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
    int32_t fa = node_feat(S, a), fb = node_feat(S, b);
    int32_t ra = S->rank[fa], rb = S->rank[fb];
    int32_t f = ra <= rb ? fa : fb;
    size_t base = S->n_scratch, jobs = S->n_jobs;
    if (push_jobs(S, op, a, b, ra, rb, f) < 0)
        goto fail;
    /* Recursion may move the arena, the job stack and the scratch stack: indices only. */
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

static int32_t negate(Store *S, int32_t root)
{
    if (S->neg[root] >= 0)
        return S->neg[root];
    IntVec pending = {NULL, 0, 0};
    Seen V;
    if (seen_init(S, &V) < 0)
        return ERR;
    seen_add(&V, root);
    int failed = vec_push(&pending, root) < 0 || reach(S, &pending, &V, 1) < 0;
    PyMem_Free(V.w);
    if (failed)
        goto fail;
    qsort(pending.v, pending.n, sizeof(int32_t), cmp_int32);
    for (size_t p = 0; p < pending.n; p++) {
        int32_t n = pending.v[p];
        if (S->neg[n] >= 0)
            continue;
        size_t base = S->n_scratch;
        if (reserve((void **)&S->scratch, &S->cap_scratch, base + (size_t)S->max_states,
                    sizeof(Seg)) < 0)
            goto fail;
        Seg *s = S->scratch + base;
        size_t k = node_segs(S, n, s);
        for (size_t i = 0; i < k; i++)
            if (s[i].child != GAP)
                s[i].child = S->neg[s[i].child];
        int32_t m = make_node(S, node_feat(S, n), s, k);
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

/* PyStore._disjoin: the disjunction of the ordered nodes in kids (false for none), a
 * balanced tree of them in list order; kids is overwritten. */
static int32_t disjoin(Store *S, IntVec *kids)
{
    if (kids->n == 0)
        return 0;
    while (kids->n > 1) { /* Apply may move the pool: kids holds ids */
        size_t m = 0;
        for (size_t i = 0; i < kids->n; i += 2) {
            int32_t c = i + 1 < kids->n ? apply_rec(S, OP_OR, kids->v[i], kids->v[i + 1])
                                        : kids->v[i];
            if (c == ERR)
                return ERR;
            kids->v[m++] = c;
        }
        kids->n = m;
    }
    return kids->v[0];
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
    if (result == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (below(S, &root, 1, &nodes) < 0)
        goto done;
    for (size_t p = 0; p < nodes.n; p++) {
        int32_t n = nodes.v[p];
        if (n <= 1 || S->rank[node_feat(S, n)] > rank) { /* ordered: f is not tested below n */
            result[n] = n;
            continue;
        }
        SegIt it;
        seg_begin(S, n, &it);
        if (node_feat(S, n) == f) {
            kids.n = 0;
            while (seg_next(&it))
                if (it.child != GAP && vec_push(&kids, it.child) < 0)
                    goto done;
            if ((result[n] = disjoin(S, &kids)) == ERR)
                goto done;
            continue;
        }
        size_t base = S->n_scratch;
        while (seg_next(&it))
            if (push_seg(S, base, it.end, it.child == GAP ? GAP : result[it.child]) < 0) {
                S->n_scratch = base;
                goto done;
            }
        result[n] = make_node(S, node_feat(S, n), S->scratch + base, S->n_scratch - base);
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
    if (!node_ord(S, a) || !node_ord(S, b)) { /* also what bounds the C recursion depth */
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
    if (!node_ord(S, root)) {
        PyErr_SetString(PyExc_ValueError, "exists needs an ordered node");
        return NULL;
    }
    return id_result(exists(S, root, f));
}
