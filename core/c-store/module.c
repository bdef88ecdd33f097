/* The Store type's remaining methods, its per-node columns, and the module.
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

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
    PyObject *out = PyTuple_New((Py_ssize_t)node_nseg(S, n));
    if (out == NULL)
        return NULL;
    SegIt it;
    seg_begin(S, n, &it);
    for (Py_ssize_t i = 0; seg_next(&it); i++) {
        PyObject *seg = Py_BuildValue("(ii)", it.end, it.child);
        if (seg == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, seg);
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
    size_t k = node_nseg(S, n), m = 0;
    int32_t *kids = PyMem_Malloc((k ? k : 1) * sizeof(int32_t));
    PyObject **masks = PyMem_Calloc(k ? k : 1, sizeof(PyObject *)), *out = NULL;
    if (kids == NULL || masks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    SegIt it;
    seg_begin(S, n, &it);
    for (int32_t start = 0; seg_next(&it); start = it.end) {
        int32_t child = it.child;
        if (child == GAP)
            continue;
        PyObject *part = state_range(start, it.end);
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

/* Roots walked at once (a projection's rows) share much of their paths: a small direct-mapped
 * memo of the leaf reached from the first EVAL_PATH nodes of each walk spares walking them
 * again. On a store larger than the CPU caches nearly every step is a cache miss: the walks
 * are then interleaved over EVAL_LANES lanes, each prefetching its next node's record and
 * then its code, so that the misses overlap. */
enum { EVAL_MEMO_BITS = 8, EVAL_LANES = 8, EVAL_PATH = 32, EVAL_CACHED_NODES = 1 << 20 };

typedef struct {
    int32_t node[1 << EVAL_MEMO_BITS];
    uint8_t leaf[1 << EVAL_MEMO_BITS];
} EvalMemo;

typedef struct {
    int live;
    size_t root;         /* index in roots; SIZE_MAX: none yet */
    int32_t node;
    int32_t depth;       /* nodes walked so far */
    const uint8_t *code; /* NULL: the record is being fetched */
    int32_t path[EVAL_PATH];
} EvalLane;

static inline uint32_t eval_slot(int32_t n)
{
    return (uint32_t)n * 2654435761u >> (32 - EVAL_MEMO_BITS);
}

static void memo_init(EvalMemo *M)
{
    memset(M->node, 0xff, sizeof M->node);
}

/* leaf[i] = 1 when instance x reaches true from roots[i], else 0; -1 with ValueError set when
 * a state of x is not feasible on a path. M holds what earlier walks at x found. */
static int walk_roots(const Store *S, const int32_t *roots, size_t n_roots, const int32_t *x,
                      uint8_t *leaf, EvalMemo *M)
{
    EvalLane lane[EVAL_LANES];
    int lanes = S->n_nodes > EVAL_CACHED_NODES ? EVAL_LANES : 1, busy = lanes;
    for (int l = 0; l < lanes; l++) { /* each lane starts as a walk ending at a leaf */
        lane[l].live = 1;
        lane[l].root = SIZE_MAX;
        lane[l].node = 0;
        lane[l].depth = 0;
        lane[l].code = NULL;
    }
    size_t next = 0;
    while (busy) {
        for (int l = 0; l < lanes; l++) {
            EvalLane *L = &lane[l];
            if (!L->live)
                continue;
            int32_t n = L->node;
            if (L->code != NULL) { /* its code was prefetched: take the step */
                n = node_child_at(L->code, n, x[node_feat(S, n)]);
                L->code = NULL;
            } else if (n > 1) { /* its record was prefetched: fetch its code */
                if (L->depth < EVAL_PATH)
                    L->path[L->depth] = n;
                L->depth++;
                L->code = node_code(S, n);
                __builtin_prefetch(L->code);
                continue;
            }
            for (;;) {
                if (n > 1) {
                    uint32_t h = eval_slot(n);
                    if (M->node[h] != n) {
                        L->node = n;
                        __builtin_prefetch(&S->rec[n]);
                        break;
                    }
                    n = M->leaf[h];
                }
                if (n == GAP) {
                    PyErr_SetString(PyExc_ValueError,
                                    "the instance's state is not feasible on its path");
                    return -1;
                }
                if (L->root != SIZE_MAX) { /* a walk ends */
                    for (int32_t j = 0; j < L->depth && j < EVAL_PATH; j++) {
                        uint32_t h = eval_slot(L->path[j]);
                        M->node[h] = L->path[j];
                        M->leaf[h] = (uint8_t)n;
                    }
                    leaf[L->root] = (uint8_t)n;
                }
                L->depth = 0;
                if (next == n_roots) {
                    L->live = 0;
                    busy--;
                    break;
                }
                L->root = next;
                n = roots[next++];
            }
        }
    }
    return 0;
}

static PyObject *Store_evaluate(Store *S, PyObject *args)
{
    PyObject *robj, *xobj, *out = NULL;
    IntVec roots = {NULL, 0, 0};
    int32_t *x = NULL;
    uint8_t *leaf = NULL;
    EvalMemo M;
    if (!PyArg_ParseTuple(args, "OO", &robj, &xobj) || roots_arg(S, robj, &roots) < 0
        || instance_arg(S, xobj, &x) < 0)
        goto done;
    leaf = PyMem_Malloc(roots.n ? roots.n : 1);
    if (leaf == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memo_init(&M);
    if (walk_roots(S, roots.v, roots.n, x, leaf, &M) < 0)
        goto done;
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(roots.n + 7) / 8);
    if (out == NULL)
        goto done;
    unsigned char *value = (unsigned char *)PyBytes_AS_STRING(out);
    memset(value, 0, (roots.n + 7) / 8);
    for (size_t i = 0; i < roots.n; i++)
        value[i / 8] |= (unsigned char)(leaf[i] << (i % 8));
done:
    PyMem_Free(roots.v);
    PyMem_Free(x);
    PyMem_Free(leaf);
    return out;
}

/* The sets d (bitmasks indexing rows) whose row holds at x while no proper subset's does, by
 * size then value. Sets are taken a size at a time, so that a set with a subset known to hold
 * (then one of its own, d minus one element, is marked) is never walked: the projection NRs'
 * rows are upward closed, and most of them hold. */
static PyObject *Store_min_true_sets(Store *S, PyObject *args)
{
    PyObject *robj, *xobj, *out = NULL;
    IntVec rows = {NULL, 0, 0}, batch = {NULL, 0, 0}, sets = {NULL, 0, 0};
    int32_t *x = NULL;
    uint8_t *held = NULL, *leaf = NULL;
    uint32_t *bysize = NULL;
    EvalMemo M;
    if (!PyArg_ParseTuple(args, "OO", &robj, &xobj) || roots_arg(S, robj, &rows) < 0
        || instance_arg(S, xobj, &x) < 0)
        goto done;
    size_t n = rows.n;
    if (n == 0 || (n & (n - 1)) != 0 || n > (size_t)1 << 30) {
        PyErr_SetString(PyExc_ValueError, "rows: expected a power of two of them");
        goto done;
    }
    held = PyMem_Calloc(n, 1); /* the row of d or of a subset of d holds */
    leaf = PyMem_Malloc(n);
    bysize = PyMem_Malloc(n * sizeof(uint32_t));
    if (held == NULL || leaf == NULL || bysize == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memo_init(&M);
    int width = __builtin_ctzll((unsigned long long)n);
    /* The sets by size then value (a counting sort: skipping the other sizes in every pass
     * mispredicted about every other branch) */
    size_t begin[66] = {0}, fill[65];
    for (size_t d = 0; d < n; d++)
        begin[__builtin_popcountll((unsigned long long)d) + 1]++;
    for (int size = 0; size <= width; size++) {
        fill[size] = begin[size];
        begin[size + 1] += begin[size];
    }
    for (size_t d = 0; d < n; d++)
        bysize[fill[__builtin_popcountll((unsigned long long)d)]++] = (uint32_t)d;
    for (int size = 0; size <= width; size++) {
        size_t first = sets.n;
        batch.n = 0;
        for (size_t i = begin[size]; i < begin[size + 1]; i++) {
            size_t d = bysize[i];
            int covered = 0;
            for (size_t rest = d; rest && !covered; rest &= rest - 1)
                covered = held[d ^ (rest & -rest)];
            held[d] = (uint8_t)covered;
            if (!covered && (vec_push(&batch, rows.v[d]) < 0 || vec_push(&sets, (int32_t)d) < 0))
                goto done;
        }
        if (walk_roots(S, batch.v, batch.n, x, leaf, &M) < 0)
            goto done;
        size_t kept = first;
        for (size_t j = 0; j < batch.n; j++)
            if (leaf[j]) {
                held[sets.v[first + j]] = 1;
                sets.v[kept++] = sets.v[first + j];
            }
        sets.n = kept;
    }
    out = PyList_New((Py_ssize_t)sets.n);
    for (size_t i = 0; out != NULL && i < sets.n; i++) {
        PyObject *v = PyLong_FromLong(sets.v[i]);
        if (v == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, (Py_ssize_t)i, v);
    }
done:
    PyMem_Free(rows.v);
    PyMem_Free(batch.v);
    PyMem_Free(sets.v);
    PyMem_Free(x);
    PyMem_Free(held);
    PyMem_Free(leaf);
    PyMem_Free(bysize);
    return out;
}

static PyObject *Store_reachable(Store *S, PyObject *arg)
{
    IntVec roots = {NULL, 0, 0}, nodes = {NULL, 0, 0};
    PyObject *out = NULL;
    if (roots_arg(S, arg, &roots) < 0 || below(S, roots.v, roots.n, &nodes) < 0)
        goto done;
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
    PyMem_Free(roots.v);
    PyMem_Free(nodes.v);
    return out;
}

/* PyStore.collect. Ascending renumbering lets one forward pass compact the node arrays,
 * the arena and the negations in place: a kept node's new id and code offset are never
 * above its old ones, its code never longer (its children's distances shrink or stay), and
 * a node's children are renumbered before it. */
static PyObject *Store_collect(Store *S, PyObject *arg)
{
    IntVec roots = {NULL, 0, 0}, keep = {NULL, 0, 0};
    int32_t *map = NULL;
    uint32_t *uid = NULL;
    uint8_t *utag = NULL;
    uint64_t *at = NULL;
    Seg *buf = NULL;
    Seen V = {NULL};
    Table fresh[2] = {{NULL, 0, 0}, {NULL, 0, 0}};
    PyObject *out = NULL;
    if (roots_arg(S, arg, &roots) < 0)
        goto done;
    layouts_clear(S); /* node ids change */
    if (seen_init(S, &V) < 0)
        goto done;
    if (with_leaves(&V, &keep) < 0)
        goto done;
    for (size_t i = 0; i < roots.n; i++)
        if (seen_add(&V, roots.v[i]) && vec_push(&keep, roots.v[i]) < 0)
            goto done;
    if (reach(S, &keep, &V, 0) < 0)
        goto done;
    qsort(keep.v, keep.n, sizeof(int32_t), cmp_int32);
    size_t count = keep.n, slots = MIN_TABLE;
    while (slots < 2 * count)
        slots *= 2;
    map = PyMem_Malloc(S->n_nodes * sizeof(int32_t));
    uid = PyMem_Calloc(slots, sizeof(uint32_t));
    utag = PyMem_Malloc(slots);
    at = PyMem_Malloc(count * sizeof(uint64_t));
    buf = PyMem_Malloc((size_t)S->max_states * sizeof(Seg));
    if (map == NULL || uid == NULL || utag == NULL || at == NULL || buf == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memset(map, 0xff, S->n_nodes * sizeof(int32_t));
    for (size_t i = 0; i < count; i++) {
        map[keep.v[i]] = (int32_t)i;
        at[i] = S->block[keep.v[i] >> BLOCK_BITS] + S->rec[keep.v[i]].off;
    }
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
    size_t pos = 0;
    for (size_t i = 0; i < count; i++) {
        int32_t old = keep.v[i];
        SegIt it;
        seg_begin_at(S, old, S->arena + at[i], &it);
        size_t k = 0;
        while (seg_next(&it))
            buf[k++] = (Seg){it.end, it.child == GAP ? GAP : map[it.child]};
        if ((i & (BLOCK_NODES - 1)) == 0)
            S->block[i >> BLOCK_BITS] = pos;
        S->rec[i] = (NodeRec){(uint32_t)(pos - S->block[i >> BLOCK_BITS]), S->rec[old].feat};
        S->neg[i] = S->neg[old] >= 0 ? map[S->neg[old]] : -1;
        if (i >= 2)
            pos += encode_segs(S->arena + pos, (int32_t)i, buf, k);
    }
    S->n_nodes = count;
    S->n_arena = pos;
    unique_fill(S, uid, utag, slots, buf);
    PyMem_Free(S->uid);
    PyMem_Free(S->utag);
    S->uid = uid;
    S->utag = utag;
    uid = NULL;
    utag = NULL;
    S->unique_mask = slots - 1;
    S->unique_used = count - 2;
    for (int op = 0; op < 2; op++) {
        PyMem_Free(S->computed[op].slots);
        S->computed[op] = fresh[op];
        fresh[op].slots = NULL;
    }
done:
    PyMem_Free(V.w);
    PyMem_Free(roots.v);
    PyMem_Free(keep.v);
    PyMem_Free(map);
    PyMem_Free(uid);
    PyMem_Free(utag);
    PyMem_Free(at);
    PyMem_Free(buf);
    PyMem_Free(fresh[0].slots);
    PyMem_Free(fresh[1].slots);
    return out;
}

/* PyStore.node_bytes: the per-node arrays, block offsets and arena in use, and the unique
 * table (Apply's computed tables are caches, not nodes). */
static PyObject *Store_node_bytes(Store *S, PyObject *Py_UNUSED(ignored))
{
    size_t per_node = sizeof *S->rec + sizeof *S->neg;
    size_t blocks = (S->n_nodes >> BLOCK_BITS) + 1;
    size_t unique = (S->unique_mask + 1) * (sizeof *S->uid + sizeof *S->utag);
    return PyLong_FromSize_t(S->n_nodes * per_node + blocks * sizeof *S->block + S->n_arena
                             + unique);
}

/* PyStore.set_budget: a new node budget (None: none) and its message. */
static PyObject *Store_set_budget(Store *S, PyObject *args)
{
    PyObject *max_nodes, *message;
    if (!PyArg_ParseTuple(args, "OU:set_budget", &max_nodes, &message))
        return NULL;
    long long limit;
    if (budget_arg(max_nodes, &limit) < 0)
        return NULL;
    S->max_nodes = limit;
    Py_INCREF(message);
    Py_SETREF(S->nodes_message, message);
    Py_RETURN_NONE;
}

/* PyStore.set_deadline: a new deadline (a time.monotonic() value, None: none) and its
   message. */
static PyObject *Store_set_deadline(Store *S, PyObject *args)
{
    PyObject *deadline, *message;
    if (!PyArg_ParseTuple(args, "OU:set_deadline", &deadline, &message))
        return NULL;
    if (deadline == Py_None) {
        S->has_deadline = 0;
    } else {
        double when = PyFloat_AsDouble(deadline);
        if (when == -1.0 && PyErr_Occurred())
            return NULL;
        S->deadline = when;
        S->has_deadline = 1;
    }
    Py_INCREF(message);
    Py_SETREF(S->time_message, message);
    Py_RETURN_NONE;
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
    if (budget_arg(max_nodes, &S->max_nodes) < 0)
        goto fail;
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
    for (Py_ssize_t f = 0; f < k; f++)
        if (S->n_states[f] > S->max_states)
            S->max_states = S->n_states[f];
    S->max_states = S->max_states ? S->max_states : 1;
    S->uid = PyMem_Calloc(MIN_TABLE, sizeof(uint32_t));
    S->utag = PyMem_Malloc(MIN_TABLE);
    if (S->uid == NULL || S->utag == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    S->unique_mask = MIN_TABLE - 1;
    if (table_init(&S->computed[0], MIN_TABLE) < 0 || table_init(&S->computed[1], MIN_TABLE) < 0
        || reserve_nodes(S, 2) < 0)
        goto fail;
    for (int n = 0; n < 2; n++) { /* the leaves: false (0) and true (1) */
        S->rec[n] = (NodeRec){0, LEAF};
        S->neg[n] = 1 - n;
    }
    S->block[0] = 0;
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
    PyMem_Free(S->rec);
    PyMem_Free(S->neg);
    PyMem_Free(S->block);
    PyMem_Free(S->arena);
    PyMem_Free(S->uid);
    PyMem_Free(S->utag);
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
    {"min_true_sets", (PyCFunction)Store_min_true_sets, METH_VARARGS,
     "min_true_sets($self, rows, x, /)\n--\n\n"
     "Sets d (bitmasks) whose rows[d] holds at x and no proper subset's does, by size, value."},
    {"reachable", (PyCFunction)Store_reachable, METH_O,
     "reachable($self, roots, /)\n--\n\n"
     "Ascending ids of all nodes below the roots."},
    {"dump", (PyCFunction)Store_dump, METH_O,
     "dump($self, roots, /)\n--\n\n"
     "(words, roots numbered): the nodes below roots as int32 words (PyStore.dump)."},
    {"load", (PyCFunction)Store_load, METH_VARARGS,
     "load($self, code, roots, /)\n--\n\n"
     "Make the nodes of a dump; the ids of its roots (PyStore.load)."},
    {"collect", (PyCFunction)Store_collect, METH_O,
     "collect($self, roots, /)\n--\n\n"
     "New ids of the roots; keeps only the nodes below them, renumbered."},
    {"node_bytes", (PyCFunction)Store_node_bytes, METH_NOARGS,
     "node_bytes($self, /)\n--\n\n"
     "Bytes the nodes occupy: node arrays, branch lists, unique table."},
    {"set_budget", (PyCFunction)Store_set_budget, METH_VARARGS,
     "set_budget($self, max_nodes, message, /)\n--\n\n"
     "Replace the node budget (None: none) and its error message."},
    {"set_deadline", (PyCFunction)Store_set_deadline, METH_VARARGS,
     "set_deadline($self, deadline, message, /)\n--\n\n"
     "Replace the deadline (a time.monotonic() value; None: none) and its error message."},
    {"clear", (PyCFunction)Store_clear, METH_NOARGS,
     "clear($self, /)\n--\n\n"
     "Drop Apply's computed tables."},
    {"prepare", (PyCFunction)Store_prepare, METH_O,
     "prepare($self, roots, /)\n--\n\n"
     "Lay out the graph below roots for min_deviations now (cached)."},
    {"min_deviations", (PyCFunction)Store_min_deviations, METH_VARARGS,
     "min_deviations($self, roots, x, /)\n--\n\n"
     "Minimal deviation sets of the paths to false (bitmasks)."},
    {"falsified", (PyCFunction)Store_falsified, METH_VARARGS,
     "falsified($self, roots, x, feature_sets, /)\n--\n\n"
     "Per feature set, the ordered node on it of: some world falsifies the general reason."},
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
        return PyLong_FromLong(node_feat(S, (int32_t)i));
    return PyBool_FromLong(node_ord(S, (int32_t)i));
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
