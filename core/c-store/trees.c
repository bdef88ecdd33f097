/* The tree stage of ordered compiles (PyStore.tree_formulas).
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

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
                        if (ch > 1 && S->rank[node_feat(S, ch)] <= S->rank[f])
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
