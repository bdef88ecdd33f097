/* Where the general reason can be falsified, on each of some feature sets
 * (PyStore.falsified): what the GSRs on those sets avoid.
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

#define FALSIFIED_BATCH 8 /* feature sets per pass: their results sit side by side per node */

/* PyStore.falsified for the sets j of a batch [first, first + width): one pass over `nodes`
 * (the nodes below the roots, ascending: children first; pos maps a node id to its index)
 * writing res[index * width + j - first]. Leaves swap; a node on a feature of set j keeps
 * its segments, each or-ed with the result of the child x's state leads to; a node on
 * another feature becomes the disjunction of its children's results. A node's segments
 * are copied out before any Apply, which may move the arena. */
static int falsified_batch(Store *S, const IntVec *nodes, const int32_t *pos, const int32_t *x,
                           const uint8_t *on, size_t n_sets, size_t first, size_t width,
                           int32_t *res)
{
    IntVec segs = {NULL, 0, 0}, kids = {NULL, 0, 0};
    for (size_t p = 0; p < nodes->n; p++) {
        int32_t n = nodes->v[p];
        int32_t *here = res + p * width;
        if (n <= 1) {
            for (size_t j = 0; j < width; j++)
                here[j] = 1 - n;
            continue;
        }
        int32_t f = node_feat(S, n), own = GAP, start = 0;
        SegIt it;
        seg_begin(S, n, &it);
        segs.n = 0;
        while (seg_next(&it)) {
            if (vec_push(&segs, it.end) < 0 || vec_push(&segs, it.child) < 0)
                goto fail;
            if (start <= x[f] && x[f] < it.end)
                own = it.child;
            start = it.end;
        }
        for (size_t j = 0; j < width; j++) {
            if (!on[(size_t)f * n_sets + first + j]) {
                kids.n = 0;
                for (size_t i = 1; i < segs.n; i += 2)
                    if (segs.v[i] != GAP
                        && vec_push(&kids, res[(size_t)pos[segs.v[i]] * width + j]) < 0)
                        goto fail;
                if ((here[j] = disjoin(S, &kids)) == ERR)
                    goto fail;
                continue;
            }
            /* false when x's state is not feasible here */
            int32_t mine = own == GAP ? 0 : res[(size_t)pos[own] * width + j];
            size_t base = S->n_scratch;
            for (size_t i = 0; i < segs.n; i += 2) {
                int32_t c = segs.v[i + 1];
                if (c != GAP
                    && (c = apply_rec(S, OP_OR, res[(size_t)pos[c] * width + j], mine)) == ERR) {
                    S->n_scratch = base;
                    goto fail;
                }
                if (push_seg(S, base, segs.v[i], c) < 0) {
                    S->n_scratch = base;
                    goto fail;
                }
            }
            here[j] = make_node(S, f, S->scratch + base, S->n_scratch - base);
            S->n_scratch = base;
            if (here[j] == ERR)
                goto fail;
        }
    }
    PyMem_Free(segs.v);
    PyMem_Free(kids.v);
    return 0;
fail:
    PyMem_Free(segs.v);
    PyMem_Free(kids.v);
    return -1;
}

/* PyStore.falsified: the nodes below the roots listed once, then the sets in batches;
 * on[f * n_sets + j] says whether set j holds feature f. Fills out[j]. */
static int falsified(Store *S, const IntVec *roots, const int32_t *x, const uint8_t *on,
                     size_t n_sets, int32_t *out)
{
    IntVec nodes = {NULL, 0, 0}, kids = {NULL, 0, 0};
    int rc = -1;
    /* Indexed by node id but written and read only below the roots (see exists). */
    int32_t *pos = PyMem_Malloc(S->n_nodes * sizeof(int32_t)), *res = NULL;
    if (pos == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (below(S, roots->v, roots->n, &nodes) < 0)
        goto done;
    for (size_t p = 0; p < nodes.n; p++)
        pos[nodes.v[p]] = (int32_t)p;
    size_t most = n_sets < FALSIFIED_BATCH ? n_sets : FALSIFIED_BATCH;
    res = PyMem_Malloc((nodes.n ? nodes.n : 1) * (most ? most : 1) * sizeof(int32_t));
    if (res == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t first = 0; first < n_sets; first += most) {
        size_t width = n_sets - first < most ? n_sets - first : most;
        if (falsified_batch(S, &nodes, pos, x, on, n_sets, first, width, res) < 0)
            goto done;
        for (size_t j = 0; j < width; j++) {
            kids.n = 0;
            for (size_t i = 0; i < roots->n; i++)
                if (vec_push(&kids, res[(size_t)pos[roots->v[i]] * width + j]) < 0)
                    goto done;
            if ((out[first + j] = disjoin(S, &kids)) == ERR)
                goto done;
        }
    }
    rc = 0;
done:
    PyMem_Free(kids.v);
    PyMem_Free(res);
    PyMem_Free(pos);
    PyMem_Free(nodes.v);
    return rc;
}

static PyObject *Store_falsified(Store *S, PyObject *args)
{
    PyObject *robj, *xobj, *sobj, *sets = NULL, *out = NULL;
    IntVec roots = {NULL, 0, 0};
    int32_t *x = NULL, *found = NULL;
    uint8_t *on = NULL;
    if (!PyArg_ParseTuple(args, "OOO:falsified", &robj, &xobj, &sobj))
        return NULL;
    if (instance_arg(S, xobj, &x) < 0 || roots_arg(S, robj, &roots) < 0)
        goto done;
    for (size_t i = 0; i < roots.n; i++)
        if (!node_ord(S, roots.v[i])) {
            PyErr_SetString(PyExc_ValueError, "falsified needs ordered nodes");
            goto done;
        }
    sets = PySequence_Fast(sobj, "feature sets must be a sequence");
    if (sets == NULL)
        goto done;
    size_t n_sets = (size_t)PySequence_Fast_GET_SIZE(sets);
    on = PyMem_Calloc((size_t)S->n_features * n_sets + 1, 1);
    found = PyMem_Malloc((n_sets ? n_sets : 1) * sizeof(int32_t));
    if (on == NULL || found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t j = 0; j < n_sets; j++) {
        PyObject *set = PySequence_Fast(PySequence_Fast_GET_ITEM(sets, j),
                                        "a feature set must be a sequence");
        if (set == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(set); i++) {
            int32_t f;
            if (feature_arg(S, PySequence_Fast_GET_ITEM(set, i), &f) < 0) {
                Py_DECREF(set);
                goto done;
            }
            on[(size_t)f * n_sets + j] = 1;
        }
        Py_DECREF(set);
    }
    if (falsified(S, &roots, x, on, n_sets, found) < 0)
        goto done;
    out = PyList_New((Py_ssize_t)n_sets);
    for (size_t j = 0; out != NULL && j < n_sets; j++) {
        PyObject *id = PyLong_FromLong(found[j]);
        if (id == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, (Py_ssize_t)j, id);
    }
done:
    Py_XDECREF(sets);
    PyMem_Free(roots.v);
    PyMem_Free(x);
    PyMem_Free(on);
    PyMem_Free(found);
    return out;
}
