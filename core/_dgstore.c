/* Decision-graph node store in C: the same interface and node ids as the reference
 * implementation core/dgstore.py (PyStore), whose docstrings define the semantics; these files
 * only say how it is laid out (docs/algorithms.md; paper §3 "Tractable Class Formulas":
 * the ordered special case of Alg. 4, used as the comparators of the sorting networks of
 * Alg. 3B/3A).
 *
 * Files. One concept per file under core/c-store/, compiled as one translation unit (this file
 * includes them in dependency order, so that their static functions stay inlinable):
 *   store.h       the types: nodes, segments, tables, the Store object;
 *   nodes.c       memory, the node arena and unique table, limits, traversals;
 *   args.c        Python arguments: node ids, root lists, features, segments, instances;
 *   apply.c       ordered Apply and its computed tables, negation, existential projection;
 *   threshold.c   "at least k of these graphs" by top-down expansion (the vote counter);
 *   trees.c       the tree stage of ordered compiles (each tree's C^c and ¬C^c);
 *   search.c      minimal deviation sets (NRs, CEs) on search layouts of the graphs;
 *   falsified.c   where the general reason can be falsified, on some features (GSRs);
 *   hitting.c     minimal hitting sets (MMCS, the SR dualisation);
 *   serial.c      the nodes below some roots as int32 words and back (saved circuits);
 *   module.c      the Store type's remaining methods and the module.
 *
 * Layout (25-84 bytes a node on the paper's forests, by their segments per node; `bench
 * compile` reports it). Nodes are appended, and compacted in place by collect. Per node id:
 * an 8-byte record (feature, with a flag bit for unordered nodes, and the offset of its code)
 * and its negation; the codes of all nodes sit in one byte arena, offsets counting from a
 * 64-bit base per 4096 nodes. A node's code lists its segments, (end_exclusive, child) over
 * the state indices of its feature, child GAP for states not feasible at the node: up to 16
 * distinct children as a dictionary (decision children by their distances, sorted) and a
 * byte per segment, more as varints per segment (SegIt in core/c-store/store.h decodes both).
 * Masks (Python ints of any width) never reach C: the facade core/dgraph.py converts between
 * masks and segments. The unique table holds 4-byte node ids beside 8 bits of their hashes
 * (a probe decodes a node only on a match), at most three quarters full, and is rebuilt from
 * the codes when it grows; the two computed tables (one per operation) hold (a, b, result)
 * triples, at most half full. All are open-addressing hash tables with linear probing,
 * doubled when full. Arrays grow geometrically; dealloc frees everything.
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

#include "c-store/store.h"
#include "c-store/nodes.c"
#include "c-store/args.c"
#include "c-store/apply.c"
#include "c-store/threshold.c"
#include "c-store/trees.c"
#include "c-store/search.c"
#include "c-store/falsified.c"
#include "c-store/hitting.c"
#include "c-store/serial.c"
#include "c-store/module.c"
