/* Cheapest violated paths of the general reason (PyStore.violations): GSRs.
 * Part of the C store: see core/_dgstore.c. */

#include "store.h"

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
    IntVec nodes = {NULL, 0, 0};
    SegIt *stack = NULL; /* the nodes on the path, each at its next segment */
    size_t depth = 0, cap_stack = 0;
    int32_t *pos = NULL;
    Seen V = {NULL};
    if (seen_init(S, &V) < 0)
        goto fail;
    if (with_leaves(&V, &nodes) < 0)
        goto fail;
    for (size_t r = 0; r < n_roots; r++) {
        if (!seen_add(&V, roots[r]))
            continue;
        if (reserve((void **)&stack, &cap_stack, depth + 1, sizeof(SegIt)) < 0)
            goto fail;
        seg_begin(S, roots[r], &stack[depth++]);
        while (depth) {
            if (!seg_next(&stack[depth - 1])) {
                if (vec_push(&nodes, stack[--depth].n) < 0)
                    goto fail;
                continue;
            }
            int32_t c = stack[depth - 1].child;
            if (c != GAP && seen_add(&V, c)) {
                if (reserve((void **)&stack, &cap_stack, depth + 1, sizeof(SegIt)) < 0)
                    goto fail;
                seg_begin(S, c, &stack[depth++]);
            }
        }
    }
    PyMem_Free(stack);
    stack = NULL;
    PyMem_Free(V.w);
    V.w = NULL;
    size_t len = 0;
    for (size_t i = 0; i < nodes.n; i++)
        len += 2 + 2 * node_nseg(S, nodes.v[i]);
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
        int32_t *c = P->code + len;
        SegIt it;
        int32_t j = 0;
        P->at[i] = len;
        c[0] = node_feat(S, nodes.v[i]);
        seg_begin(S, nodes.v[i], &it);
        while (seg_next(&it)) {
            c[2 + 2 * j] = it.end;
            c[3 + 2 * j] = it.child == GAP ? GAP : pos[it.child];
            j++;
        }
        c[1] = j;
        len += 2 + 2 * (size_t)j;
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
    PyMem_Free(V.w);
    PyMem_Free(nodes.v);
    PyMem_Free(stack);
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
