/* Decision-graph node store in C: the same interface and node ids as the reference
 * implementation core/dgstore.py (PyStore), whose docstrings define the semantics; these files
 * only say how it is laid out (docs/algorithms.md; paper §3 "Tractable Class Formulas":
 * the ordered special case of Alg. 4, used as the comparators of the sorting networks of
 * Alg. 3B/3A).
 *
 * Files. One concept per file under core/csrc/, compiled as one translation unit (this file
 * includes them in dependency order, so that their static functions stay inlinable):
 *   store.h       the types: nodes, segments, tables, the Store object;
 *   nodes.c       memory, the node arena and unique table, limits, traversals;
 *   args.c        Python arguments: node ids, root lists, features, segments, instances;
 *   apply.c       ordered Apply and its computed tables, negation, existential projection;
 *   threshold.c   "at least k of these graphs" by top-down expansion (the vote counter);
 *   trees.c       the tree stage of ordered compiles (each tree's C^c and ¬C^c);
 *   search.c      minimal deviation sets (NRs, CEs) on search layouts of the graphs;
 *   violations.c  cheapest violated paths of the general reason (GSRs);
 *   hitting.c     minimal hitting sets (MMCS, the SR dualisation);
 *   module.c      the Store type's remaining methods and the module.
 *
 * Layout. Nodes are appended (and compacted in place by collect): a node id indexes an array
 * of 16-byte records (first segment, feature, number of segments, ordered flag), and the
 * segments of all nodes sit in one pool. A segment is (end_exclusive, child) over the state
 * indices of the node's feature, child GAP for states not feasible at the node. Masks (Python
 * ints of any width) never reach C: the facade core/dgraph.py converts between masks and
 * segments. The unique table and the two computed tables (one per operation) are
 * open-addressing hash tables with linear probing, kept at most half full and doubled when
 * needed. Arrays grow geometrically; dealloc frees everything.
 *
 * Recursion. Ordered Apply recurses in C: every level raises the rank of at least one
 * operand's top feature, so the depth is at most twice the number of features. A call first
 * lists its sub-problems (one per output segment) on a shared job stack, prefetching their
 * computed-table slots, then solves them in order, pushing the output segments on a shared
 * scratch stack. Nested calls may move both stacks and the node arrays (creating nodes), so
 * they are addressed by index across calls. Thresholds (td_rec) recurse too, at most once per
 * feature, and keep their sub-problems in a hash table of their own (TdMemo) for the call.
 * Negation and traversals use explicit stacks.
 *
 * Limits. Node creation checks max_nodes; every 64k Apply steps or node creations the store
 * checks CLOCK_MONOTONIC (the clock of time.monotonic() on Linux) against the deadline and
 * calls PyErr_CheckSignals() so that Ctrl-C interrupts a long Apply, and releases the GIL for
 * a moment so that other threads (a progress bar) run during one. Budget errors raise the
 * exception class given by the facade (BudgetExceeded) with the facade's messages.
 */

#include "csrc/store.h"
#include "csrc/nodes.c"
#include "csrc/args.c"
#include "csrc/apply.c"
#include "csrc/threshold.c"
#include "csrc/trees.c"
#include "csrc/search.c"
#include "csrc/violations.c"
#include "csrc/hitting.c"
#include "csrc/module.c"
