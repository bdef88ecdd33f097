/* Thresholds by top-down expansion (PyStore.threshold): the vote counter of Alg. 3B.
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

/* -- thresholds by top-down expansion (PyStore.threshold) ------------------------------ */

typedef struct {
    uint64_t off;    /* the key's code in the arena */
    uint32_t len;    /* its bytes */
    int32_t need, result;
} TdEntry;

typedef struct {
    Slot *slots; /* entry index and hash */
    size_t mask;
    TdEntry *entries;
    size_t n_entries, cap_entries;
    uint8_t *arena; /* the keys' codes, one after another */
    size_t n_arena, cap_arena;
    uint8_t *key; /* the code of the key being looked up */
    size_t cap_key;
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

/* Encode the sorted residues rest[0..m) into M->key as varints of their differences (the
 * first from 0): residues mostly come one per tree, in the order the tree stage made the
 * trees' nodes, so a difference takes one or two bytes instead of four. Returns the length,
 * or -1 when out of memory. */
static Py_ssize_t td_key(TdMemo *M, const int32_t *rest, size_t m)
{
    if (reserve((void **)&M->key, &M->cap_key, 5 * m + 1, 1) < 0)
        return -1;
    uint8_t *p = M->key;
    for (size_t i = 0, prev = 0; i < m; prev = (size_t)rest[i++])
        p += varint_put(p, (uint32_t)((size_t)rest[i] - prev));
    return (Py_ssize_t)(p - M->key);
}

/* The slot of the sub-problem whose key code is M->key[0..len), or the empty slot where it
 * belongs. */
static Slot *td_find(const TdMemo *M, int32_t need, size_t len, uint32_t h)
{
    for (size_t i = h & M->mask;; i = (i + 1) & M->mask) {
        Slot *s = &M->slots[i];
        if (s->id < 0)
            return s;
        const TdEntry *e = &M->entries[s->id];
        if (s->hash == h && e->need == need && e->len == len
            && memcmp(M->arena + e->off, M->key, len) == 0)
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
    Py_ssize_t len = td_key(M, rest, m); /* nested calls used M->key since the lookup */
    if (len < 0 || reserve((void **)&M->arena, &M->cap_arena, M->n_arena + (size_t)len, 1) < 0
        || reserve((void **)&M->entries, &M->cap_entries, M->n_entries + 1, sizeof(TdEntry)) < 0)
        return -1;
    Slot *s = td_find(M, need, (size_t)len, h);
    memcpy(M->arena + M->n_arena, M->key, (size_t)len);
    M->entries[M->n_entries] = (TdEntry){M->n_arena, (uint32_t)len, need, result};
    *s = (Slot){(int32_t)M->n_entries, h};
    M->n_arena += (size_t)len;
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
    Py_ssize_t len = td_key(M, rest, m);
    if (len < 0)
        return ERR;
    const Slot *hit = td_find(M, need, (size_t)len, h);
    if (hit->id >= 0)
        return M->entries[hit->id].result;
    if (tick(S) < 0)
        return ERR;
    int32_t f = node_feat(S, rest[0]), nst, r = ERR;
    for (size_t i = 1; i < m; i++)
        if (S->rank[node_feat(S, rest[i])] < S->rank[f])
            f = node_feat(S, rest[i]);
    nst = S->n_states[f];
    size_t n_kept = 0, n_segs = 0, n_events = 0, base = S->n_scratch;
    size_t cap_segs = 0, cap_events = 0;
    /* kept: the residues not testing f; segs: the testing ones' segments, one residue after
     * another; events: (end << 32 | index) of each segment but a last one */
    int32_t *kept = PyMem_Malloc(3 * m * sizeof(int32_t));
    Seg *segs = NULL;
    uint64_t *events = NULL;
    if (kept == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int32_t *kids = kept + m;
    TdBlock B = {0, 0, kept + 2 * m, 0, 0};
    uint64_t kept_sum = sum;
    for (size_t i = 0; i < m; i++) {
        if (node_feat(S, rest[i]) != f) {
            kept[n_kept++] = rest[i];
            continue;
        }
        kept_sum -= td_elem(rest[i]);
        size_t first = n_segs;
        SegIt it;
        seg_begin(S, rest[i], &it);
        while (seg_next(&it)) {
            if (reserve((void **)&segs, &cap_segs, n_segs + 1, sizeof(Seg)) < 0
                || reserve((void **)&events, &cap_events, n_segs + 1, sizeof(uint64_t)) < 0)
                goto done;
            if (n_segs > first) /* the previous segment was not the last */
                events[n_events++] = (uint64_t)segs[n_segs - 1].end << 32 | (n_segs - 1);
            segs[n_segs++] = (Seg){it.end, it.child};
        }
        td_enter(&B, segs[first].child, 1);
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

static PyObject *Store_threshold(Store *S, PyObject *args)
{
    PyObject *robj, *kobj, *kseq = NULL, *out = NULL;
    IntVec roots = {NULL, 0, 0};
    TdMemo M = {NULL, MIN_TABLE - 1, NULL, 0, 0, NULL, 0, 0, NULL, 0, 0};
    if (!PyArg_ParseTuple(args, "OO", &robj, &kobj) || roots_arg(S, robj, &roots) < 0)
        goto done;
    kseq = PySequence_Fast(kobj, "thresholds must be a sequence of integers");
    if (kseq == NULL)
        goto done;
    int32_t trues = 0;
    size_t m = 0;
    for (size_t i = 0; i < roots.n; i++) {
        int32_t n = roots.v[i];
        if (!node_ord(S, n)) {
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
    PyMem_Free(M.key);
    PyMem_Free(roots.v);
    return out;
}
