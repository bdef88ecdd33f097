/* Python arguments of the Store's methods: node ids, root lists, features, segments,
 * per-feature arrays and instances.
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

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
    if (PyObject_CheckBuffer(obj)) { /* an array('i') made once (projection rows): no ints */
        Py_buffer view;
        if (PyObject_GetBuffer(obj, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            return -1;
        int ints = view.itemsize == sizeof(int32_t) && view.format != NULL
                   && strcmp(view.format, "i") == 0;
        size_t n = ints ? (size_t)view.len / sizeof(int32_t) : 0;
        if (ints && reserve((void **)&out->v, &out->cap, out->n + n, sizeof(int32_t)) < 0) {
            PyBuffer_Release(&view);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            int32_t v = ((const int32_t *)view.buf)[i];
            if (v < 0 || (size_t)v >= S->n_nodes) {
                PyErr_Format(PyExc_IndexError, "no decision-graph node %ld", (long)v);
                PyBuffer_Release(&view);
                return -1;
            }
            out->v[out->n++] = v;
        }
        PyBuffer_Release(&view);
        if (ints)
            return 0;
    }
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

/* A node budget: None (-1: none) or an int, negative ones meaning 0. */
static int budget_arg(PyObject *obj, long long *out)
{
    *out = -1;
    if (obj == Py_None)
        return 0;
    *out = PyLong_AsLongLong(obj);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    if (*out < 0)
        *out = 0;
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
