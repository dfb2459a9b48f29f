/* Optional accelerator: the step database's per-type unions in one pass over the events
 * (analysis/steps/step_db.py keeps the numpy version, the reference that the tests compare
 * this with, and the fallback when this is not built).
 *
 * type_unions(types, groups, start, end, rows, begin, finish, valid, out)
 *   types:  int8[n], each event's EventType (the counted ones are 0..NUM_TYPES-1);
 *   groups: int8/16/32/64[n], each event's group (0..G-1 for the counted ones);
 *   start, end: int64[n], ps;
 *   rows:   int64[m], the counted events (positions into the columns above), any order;
 *   begin, finish: int64[G], each group's step span; valid: bool[G], whether it is a step;
 *   out:    writable int64[(NUM_TYPES + 1) * G], zeroed: row t (t * G + g) receives the
 *           length of the union of group g's events of type >= t, clipped to its span.
 *
 * The rows are counted into their groups (a stable counting sort); per group, its events are
 * gathered into a local array (the only random reads) and sorted by start (a natural merge
 * sort: a few lines' runs), then:
 * 1. zero-length events get the span the reference's sweep gives them (analysis/steps/
 *    instant_spans.py): an instant x of type t that no longer-than-0 event of type >= t
 *    covers (start <= x < end) ends at the earliest of the first end after x of a longer
 *    event of type t, the first start at or after x of an event of a higher type, and the
 *    group's last end; a forward pass over the blocks of equal starts finds the covered ones,
 *    a backward pass the ends (running minima per type). The span starts at the instant, so
 *    the instant's own event takes its end: no events are added and the order stays.
 * 2. each event is clipped to the step, and one sweep keeps, per threshold t, the running
 *    maximum end of the events of type >= t: what an event adds beyond it is new union.
 * That is step_db.py's sort, selection and union per threshold, with no sort of all the
 * events and no per-threshold copies. O(m * (NUM_TYPES + log of the runs per group)) time.
 *
 * group_unions(groups, start, end, order, out): step_db.py's `union_per_group` /
 *   `union_sorted` (rows through `order`, or as they are with None), one running maximum.
 * counted_events(types, groups, parent, out) -> count: the events the database counts
 *   (`_counted_events`), positions into `out` unless it is None (called once to size it).
 * core_spans(types, groups, plane, on_device, start, end, num_planes, first, last): per
 *   (group, device plane) cell the first start and last end (`_longest_core_spans`).
 * event_types(...): `classify`'s per-event rules (by name, plane, launch, shape, HLO op) in
 *   one pass, not a dozen masks over every event.
 * kernel_calls(...), assign(...), run_starts(...): xla_executions.py's kernels' host calls,
 *   the events' executions and the runs that make them, one pass each (a walk, not a search
 *   per event; no gathered copy per column).
 * plane_unions(...): type_unions of every GPU's own step database at once, or of the
 *   host's as one database of every plane (analysis/steps/core_step_dbs.py): the events
 *   counted once into (group, host or database) cells, each group's host events gathered and
 *   sorted once, then merged with each database's own.
 * All release the GIL; bad input (a type, group, parent, plane or row out of range) raises
 * ValueError, never a wrong figure.
 *
 * The sources, one idea each, share their types through _step_sweep.h: this file (the
 * module and its method table), _step_type_unions.c (one group's passes: sort, instants,
 * unions; type_unions, group_unions and plane_unions), _step_counted.c (counted_events,
 * core_spans), _step_event_types.c (event_types) and _step_executions.c (kernel_calls,
 * assign, run_starts).
 */
#include "_step_sweep.h"

static PyMethodDef methods[] = {
    {"assign", sweep_assign, METH_VARARGS,
     "assign(start, begin, end, first, out): per event, first + the last execution begun at "
     "or before its start, where it has not ended, into out (int32); untouched elsewhere."},
    {"core_spans", sweep_core_spans, METH_VARARGS,
     "core_spans(types, groups, plane, on_device, start, end, num_planes, first, last): per "
     "cell group * num_planes + plane, the least start and greatest end of the group's "
     "classified events on that device plane, folded into first and last (int64)."},
    {"counted_events", sweep_counted_events, METH_VARARGS,
     "counted_events(types, groups, parent, out) -> count: the events the step database "
     "counts (classified, grouped, not enclosed by a parent of their group and at least "
     "their type), their positions written to out (int64) unless it is None."},
    {"event_types", sweep_event_types, METH_VARARGS,
     "event_types(name_id, plane, accelerator, launch, shape, shape_half, low, hlo_op, op_type, "
     "text_class, host_type, device_type, name_collective, has_device, out): step_db.py "
     "classify's per-event types (before markers) into out (int8); None for absent columns."},
    {"group_unions", sweep_group_unions, METH_VARARGS,
     "group_unions(groups, start, end, order, out): adds into out[g] the length of the union "
     "of group g's intervals, rows taken in `order` (None: as they are) sorted by (group, "
     "start)."},
    {"kernel_calls", sweep_kernel_calls, METH_VARARGS,
     "kernel_calls(out, call_of_id, low, size, correlation, on_device, module, index_of_code): "
     "xla_executions.py `_kernel_calls_by_table` in one pass."},
    {"plane_unions", sweep_plane_unions, METH_VARARGS,
     "plane_unions(types, groups, plane, on_device, parent, start, end, slot, num_dbs, begin, "
     "finish, valid, out) -> bool: type_unions of K = num_dbs databases at once, database k "
     "counting the host's events and those of the planes p with slot[p] == k; begin, finish "
     "and valid K x G, out K x (NUM_TYPES + 1) x G. False (out unusable) where a parent on "
     "another device plane encloses an event: the caller builds them one by one."},
    {"run_starts", sweep_run_starts, METH_VARARGS,
     "run_starts(order, out, columns): out[k] = k == 0 or some column of the tuple differs "
     "between rows order[k - 1] and order[k] (bool)."},
    {"type_unions", sweep_type_unions, METH_VARARGS,
     "type_unions(types, groups, start, end, rows, begin, finish, valid, out): per group and "
     "type threshold t, the union of its events of type >= t clipped to its step, added into "
     "out[t * G + g], zero-length events taking the reference's sweep spans."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_step_sweep", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__step_sweep(void) { return PyModule_Create(&module); }
