/* dump and load: the nodes below some roots as int32 words, and back (PyStore.dump and
 * PyStore.load define the words; saved circuits, rfcircuits.circuits, write them to files).
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

/* Words are read and written through memcpy: a buffer given to load need not be aligned. */
static inline uint8_t *word_put(uint8_t *p, int32_t v)
{
    memcpy(p, &v, sizeof v);
    return p + sizeof v;
}

static inline int32_t word_at(const uint8_t *p, size_t i)
{
    int32_t v;
    memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
}

/* PyStore.dump: the nodes below the roots in ascending order (children first), numbered by
 * position as they are written, straight into the bytes returned (their size counted first). */
static PyObject *Store_dump(Store *S, PyObject *arg)
{
    IntVec roots = {NULL, 0, 0}, nodes = {NULL, 0, 0};
    int32_t *number = NULL;
    PyObject *code = NULL, *ids = NULL, *out = NULL;
    if (roots_arg(S, arg, &roots) < 0 || below(S, roots.v, roots.n, &nodes) < 0)
        goto done;
    number = PyMem_Malloc(S->n_nodes * sizeof(int32_t));
    if (number == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    size_t n_words = 0;
    for (size_t i = 0; i < nodes.n; i++)
        if (nodes.v[i] > 1)
            n_words += 2 + 2 * node_nseg(S, nodes.v[i]);
    code = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_words * sizeof(int32_t)));
    if (code == NULL)
        goto done;
    uint8_t *w = (uint8_t *)PyBytes_AS_STRING(code);
    number[0] = 0;
    number[1] = 1;
    int32_t next = 2;
    for (size_t i = 0; i < nodes.n; i++) {
        int32_t n = nodes.v[i];
        if (n < 2)
            continue;
        number[n] = next++;
        w = word_put(w, node_feat(S, n));
        w = word_put(w, (int32_t)node_nseg(S, n));
        SegIt it;
        seg_begin(S, n, &it);
        while (seg_next(&it)) {
            w = word_put(w, it.end);
            w = word_put(w, it.child == GAP ? GAP : number[it.child]);
        }
    }
    ids = PyList_New((Py_ssize_t)roots.n);
    if (ids == NULL)
        goto done;
    for (size_t i = 0; i < roots.n; i++) {
        PyObject *id = PyLong_FromLong(number[roots.v[i]]);
        if (id == NULL)
            goto done;
        PyList_SET_ITEM(ids, (Py_ssize_t)i, id);
    }
    out = PyTuple_Pack(2, code, ids);
done:
    Py_XDECREF(code);
    Py_XDECREF(ids);
    PyMem_Free(roots.v);
    PyMem_Free(nodes.v);
    PyMem_Free(number);
    return out;
}

/* PyStore.load: each node's words checked and its segments, children mapped to this store's
 * ids (equal neighbours merged: two nodes of the dump may be one here), made in turn. */
static PyObject *Store_load(Store *S, PyObject *args)
{
    PyObject *code_obj, *roots_obj, *out = NULL;
    Py_buffer view = {NULL};
    IntVec ids = {NULL, 0, 0};
    Seg *segs = NULL;
    if (!PyArg_ParseTuple(args, "OO:load", &code_obj, &roots_obj)
        || PyObject_GetBuffer(code_obj, &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (view.len % 4) {
        PyErr_Format(PyExc_ValueError, "%zd bytes are not whole 4-byte words", view.len);
        goto done;
    }
    segs = PyMem_Malloc((size_t)S->max_states * sizeof(Seg));
    if (segs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (vec_push(&ids, 0) < 0 || vec_push(&ids, 1) < 0)
        goto done;
    const uint8_t *w = view.buf;
    size_t len = (size_t)view.len / 4, at = 0;
    while (at < len) {
        long long node = (long long)ids.n;
        int32_t f = word_at(w, at), k = at + 1 < len ? word_at(w, at + 1) : 0;
        if (f < 0 || f >= S->n_features) {
            PyErr_Format(PyExc_ValueError, "node %lld: no feature %d", node, f);
            goto done;
        }
        int32_t nst = S->n_states[f];
        if (k < 1 || k > nst || (size_t)k > (len - at - 2) / 2) {
            PyErr_Format(PyExc_ValueError, "node %lld: %d segments, of a feature of %d states, "
                         "in %zd words", node, k, nst, (Py_ssize_t)(len - at) - 2);
            goto done;
        }
        size_t m = 0;
        int32_t previous = 0, feasible = 0;
        for (int32_t j = 0; j < k; j++) {
            int32_t end = word_at(w, at + 2 + 2 * j), child = word_at(w, at + 3 + 2 * j);
            if (end <= previous || end > nst || child < GAP || child >= node) {
                PyErr_Format(PyExc_ValueError, "node %lld: segment (%d, %d) is not after state "
                             "%d or its child not a node before it", node, end, child, previous);
                goto done;
            }
            int32_t mapped = child == GAP ? GAP : ids.v[child];
            feasible |= mapped != GAP;
            if (m && segs[m - 1].child == mapped)
                segs[m - 1].end = end;
            else
                segs[m++] = (Seg){end, mapped};
            previous = end;
        }
        if (previous != nst || !feasible) {
            PyErr_Format(PyExc_ValueError, "node %lld: segments end at state %d of %d, or lead "
                         "to no child", node, previous, nst);
            goto done;
        }
        int32_t n = make_node(S, f, segs, m);
        if (n == ERR || vec_push(&ids, n) < 0)
            goto done;
        at += 2 + 2 * (size_t)k;
    }
    PyObject *seq = PySequence_Fast(roots_obj, "roots must be a sequence of node numbers");
    if (seq == NULL)
        goto done;
    Py_ssize_t n_roots = PySequence_Fast_GET_SIZE(seq);
    out = PyList_New(n_roots);
    for (Py_ssize_t i = 0; out != NULL && i < n_roots; i++) {
        long r = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (r == -1 && PyErr_Occurred()) {
            Py_CLEAR(out);
        } else if (r < 0 || (size_t)r >= ids.n) {
            PyErr_Format(PyExc_ValueError, "roots: not all among the %zd nodes loaded",
                         (Py_ssize_t)ids.n);
            Py_CLEAR(out);
        } else {
            PyObject *id = PyLong_FromLong(ids.v[r]);
            if (id == NULL)
                Py_CLEAR(out);
            else
                PyList_SET_ITEM(out, i, id);
        }
    }
    Py_DECREF(seq);
done:
    PyBuffer_Release(&view);
    PyMem_Free(ids.v);
    PyMem_Free(segs);
    return out;
}
