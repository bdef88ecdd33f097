/* The C store's types (see core/_dgstore.c). */

#ifndef RFC_STORE_H
#define RFC_STORE_H

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

#endif
