/* The events the step database counts (counted_events) and their first start and last end
 * per group and device plane (core_spans); see _step_sweep.c. */
#include "_step_sweep.h"

/* Whether event i counts in the step database: classified, in a group, and not enclosed by
 * its parent of the same group with a type at least its own (step_db.py
 * `_enclosed_by_own_kind`); `parent` NULL where the nesting is not known. -1: its parent is
 * not one of the n events. */
static inline int counted(const int8_t *types, const void *groups, int width,
                          const void *parent, int parent_width, Py_ssize_t i, Py_ssize_t n) {
    int64_t g = group_of(groups, width, i);
    if (types[i] < 0 || g < 0) return 0;
    if (!parent) return 1;
    int64_t up = group_of(parent, parent_width, i);
    if (up >= n) return -1;
    return !(up >= 0 && group_of(groups, width, up) == g && types[up] >= types[i]);
}

PyObject *sweep_counted_events(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer types, groups, parent = {0}, out = {0};
    PyObject *parent_object, *out_object;
    if (!PyArg_ParseTuple(args, "y*y*OO", &types, &groups, &parent_object, &out_object))
        return NULL;
    Py_ssize_t n = types.len, found = 0;
    int width = group_width(&groups, n), parent_width = 0;
    int ok = width != 0;
    if (ok && parent_object != Py_None) {
        ok = PyObject_GetBuffer(parent_object, &parent, PyBUF_C_CONTIGUOUS) == 0;
        parent_width = ok ? group_width(&parent, n) : 0;
        ok = parent_width != 0;
    }
    if (ok && out_object != Py_None)
        ok = PyObject_GetBuffer(out_object, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) == 0;
    int status = SWEEP_OK;
    if (ok) {
        const void *up = parent.obj ? parent.buf : NULL;
        int64_t *at = out.obj ? out.buf : NULL;
        Py_ssize_t room = out.obj ? out.len / 8 : 0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int counts = counted(types.buf, groups.buf, width, up, parent_width, i, n);
            if (counts < 0) { status = SWEEP_BAD_GROUP; break; }
            if (!counts) continue;
            if (at) {
                if (found >= room) { status = SWEEP_BAD_ROW; break; }
                at[found] = i;
            }
            found++;
        }
        Py_END_ALLOW_THREADS
    }
    if (out.obj) PyBuffer_Release(&out);
    if (parent.obj) PyBuffer_Release(&parent);
    PyBuffer_Release(&types);
    PyBuffer_Release(&groups);
    if (!ok) return NULL;
    if (status != SWEEP_OK)
        return PyErr_Format(PyExc_ValueError, "counted_events: %s",
                            status == SWEEP_BAD_GROUP ? "a parent outside the events"
                                                      : "out is too short");
    return PyLong_FromSsize_t(found);
}

/* Per (group, plane) cell g * num_planes + p, the first start and last end of the group's
 * classified events on device plane p (step_db.py `_longest_core_spans`). */
PyObject *sweep_core_spans(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer types, groups, plane, on_device, start, end, first, last;
    Py_ssize_t num_planes;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*nw*w*", &types, &groups, &plane, &on_device,
                          &start, &end, &num_planes, &first, &last))
        return NULL;
    Py_ssize_t n = types.len, cells = first.len / 8;
    int width = group_width(&groups, n);
    int plane_width = width ? group_width(&plane, n) : 0;
    int ok = plane_width && num_planes > 0 && check_size(&on_device, 1, n, "on_device")
             && check_size(&start, 8, n, "start") && check_size(&end, 8, n, "end")
             && check_size(&first, 8, cells, "first") && check_size(&last, 8, cells, "last")
             && cells % num_planes == 0;
    if (!ok && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "core_spans: cells are not groups x planes");
    int status = SWEEP_OK;
    if (ok) {
        const int8_t *type = types.buf;
        const uint8_t *device = on_device.buf;
        const int64_t *s = start.buf, *e = end.buf;
        int64_t *lo = first.buf, *hi = last.buf;
        Py_ssize_t num_groups = cells / num_planes;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!device[i] || type[i] < 0) continue;
            int64_t g = group_of(groups.buf, width, i);
            if (g < 0) continue;
            int64_t p = group_of(plane.buf, plane_width, i);
            if (g >= num_groups || p < 0 || p >= num_planes) { status = SWEEP_BAD_GROUP; break; }
            Py_ssize_t cell = (Py_ssize_t)(g * num_planes + p);
            if (s[i] < lo[cell]) lo[cell] = s[i];
            if (e[i] > hi[cell]) hi[cell] = e[i];
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&types);
    PyBuffer_Release(&groups);
    PyBuffer_Release(&plane);
    PyBuffer_Release(&on_device);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&first);
    PyBuffer_Release(&last);
    if (!ok) return NULL;
    if (status != SWEEP_OK)
        return PyErr_Format(PyExc_ValueError, "core_spans: a group or plane outside the cells");
    Py_RETURN_NONE;
}
