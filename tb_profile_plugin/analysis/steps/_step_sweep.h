/* Declarations the sources of tb_profile_plugin.analysis.steps._step_sweep share (one
 * extension module built from _step_sweep.c, _step_type_unions.c, _step_counted.c,
 * _step_event_types.c and _step_executions.c; see _step_sweep.c): the module's functions
 * (the sweep_ prefix, hidden visibility: nothing but PyInit__step_sweep leaves the module),
 * and the small helpers every entry uses, static inline as when the module was one source
 * (a group's column read once an event, the argument checks, the errors). */
#ifndef TB_PROFILE_STEP_SWEEP_H
#define TB_PROFILE_STEP_SWEEP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP_INTERNAL __attribute__((visibility("hidden")))

#define NUM_TYPES 14

/* What a run can fail on, reported once the GIL is back. */
enum { SWEEP_OK = 0, SWEEP_BAD_TYPE, SWEEP_BAD_GROUP, SWEEP_BAD_ROW, SWEEP_NO_MEMORY };

/* Group of event i from a column of signed integers of `width` bytes (1, 2, 4 or 8). */
static inline int64_t group_of(const void *groups, int width, int64_t i) {
    switch (width) {
        case 1: return ((const int8_t *)groups)[i];
        case 2: return ((const int16_t *)groups)[i];
        case 4: return ((const int32_t *)groups)[i];
        default: return ((const int64_t *)groups)[i];
    }
}

/* One optional per-event column: its buffer and width (buf NULL: absent). */
typedef struct {
    Py_buffer view;
    int width;
} Column;

static inline int check_size(const Py_buffer *buffer, Py_ssize_t itemsize, Py_ssize_t count,
                             const char *name) {
    if (buffer->len != itemsize * count) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items of %zd bytes", name, count,
                     itemsize);
        return 0;
    }
    return 1;
}

/* The width of a column of n signed integers (1, 2, 4 or 8 bytes), or 0 with the error set. */
static inline int group_width(const Py_buffer *groups, Py_ssize_t n) {
    for (int width = 1; width <= 8; width *= 2)
        if (groups->len == width * n && (n || width == 8)) return width;
    PyErr_SetString(PyExc_ValueError, "groups: expected one signed integer of 1, 2, 4 or 8 "
                    "bytes per event");
    return 0;
}

/* None, or the error a run ended on. */
static inline PyObject *report(int status, Py_ssize_t num_groups) {
    switch (status) {
        case SWEEP_BAD_TYPE: return PyErr_Format(PyExc_ValueError, "type outside 0..%d",
                                                 NUM_TYPES - 1);
        case SWEEP_BAD_GROUP: return PyErr_Format(PyExc_ValueError, "group outside 0..%zd",
                                                  num_groups - 1);
        case SWEEP_BAD_ROW: return PyErr_Format(PyExc_ValueError,
                                                  "a row outside the events");
        case SWEEP_NO_MEMORY: return PyErr_NoMemory();
        default: Py_RETURN_NONE;
    }
}

/* The module's functions (the method table is _step_sweep.c's). */
SWEEP_INTERNAL PyObject *sweep_assign(PyObject *self, PyObject *args);
SWEEP_INTERNAL PyObject *sweep_core_spans(PyObject *self, PyObject *args);
SWEEP_INTERNAL PyObject *sweep_counted_events(PyObject *self, PyObject *args);
SWEEP_INTERNAL PyObject *sweep_event_types(PyObject *self, PyObject *args);
SWEEP_INTERNAL PyObject *sweep_group_unions(PyObject *self, PyObject *args);
SWEEP_INTERNAL PyObject *sweep_kernel_calls(PyObject *self, PyObject *args);
SWEEP_INTERNAL PyObject *sweep_plane_unions(PyObject *self, PyObject *args);
SWEEP_INTERNAL PyObject *sweep_run_starts(PyObject *self, PyObject *args);
SWEEP_INTERNAL PyObject *sweep_type_unions(PyObject *self, PyObject *args);

#endif
