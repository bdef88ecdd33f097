/* Minimal hitting sets (rfcircuits.primes.hitting_sets' C twin): MMCS.
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

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
