/* event_types: step_db.py `classify`'s per-event rules in one pass (see _step_sweep.c). */
#include "_step_sweep.h"

/* Code `code` (-1: none) of a per-event column of `width` bytes into a table of `size`
 * entries whose last is "none"; -1 where the code is outside the table. */
static inline Py_ssize_t table_row(const void *codes, int width, Py_ssize_t i, Py_ssize_t size) {
    int64_t code = codes ? group_of(codes, width, i) : -1;
    if (code < 0) return size - 1;
    return code < size - 1 ? (Py_ssize_t)code : -1;
}

/* EventType numbers (step_db.py EventType) the rules below read or write. */
enum { HOST_COMPUTE = 1, HOST_PREPARE = 5, DEVICE_COLLECTIVES = 6, DEVICE_TO_DEVICE = 8,
       DEVICE_COMPUTE_32 = 10, DEVICE_COMPUTE_16 = 11, DEVICE_WAIT_DEVICE = 12 };
/* Bits of a canonical text's class (step_db.py `classify`). */
enum { TEXT_STARTS_TRANSFER = 1, TEXT_WAITS_TRANSFER = 2, TEXT_COLLECTIVE = 4 };

static int optional_column(PyObject *object, Column *column, Py_ssize_t n, int is_bool) {
    column->view.buf = NULL;
    column->view.obj = NULL;
    column->width = 0;
    if (object == Py_None) return 1;
    if (PyObject_GetBuffer(object, &column->view, PyBUF_C_CONTIGUOUS) != 0) return 0;
    column->width = is_bool ? (check_size(&column->view, 1, n, "mask") ? 1 : 0)
                            : group_width(&column->view, n);
    return column->width != 0;
}

/* event_types: step_db.py `classify`'s per-event rules in one pass (its numpy version is the
 * reference): by name and plane, then on the host a launch's compute -> kernel launch, on a
 * device the shape's or HLO's 16-bit compute, XLA's transfers and their waits, collectives. */
PyObject *sweep_event_types(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer name_id, plane, accelerator, shape_half, text_class, host_type, device_type,
              name_collective, out;
    PyObject *objects[5];
    int has_device;
    if (!PyArg_ParseTuple(args, "y*y*y*OOy*OOOy*y*y*y*pw*", &name_id, &plane, &accelerator,
                          &objects[0], &objects[1], &shape_half, &objects[2], &objects[3],
                          &objects[4], &text_class, &host_type, &device_type,
                          &name_collective, &has_device, &out))
        return NULL;
    Py_ssize_t n = out.len, num_names = host_type.len, num_planes = accelerator.len;
    Column launch, shape, low, hlo_op, op_type;
    Column *columns[5] = {&launch, &shape, &low, &hlo_op, &op_type};
    int name_width = group_width(&name_id, n);
    int plane_width = name_width ? group_width(&plane, n) : 0;
    int ok = plane_width && check_size(&device_type, 1, num_names, "device_type")
             && check_size(&name_collective, 1, num_names, "name_collective")
             && shape_half.len > 0 && text_class.len > 0;
    for (int k = 0; k < 5; k++) columns[k]->view.obj = NULL;
    for (int k = 0; k < 5 && ok; k++)
        ok = optional_column(objects[k], columns[k], n, k == 0 || k == 2);
    if (!ok && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "event_types: bad tables");
    int status = SWEEP_OK;
    if (ok) {
        const uint8_t *accel = accelerator.buf, *half = shape_half.buf, *text = text_class.buf;
        const uint8_t *is_launch = launch.view.buf, *is_low = low.view.buf;
        const uint8_t *coll = name_collective.buf;
        const int8_t *host = host_type.buf, *device = device_type.buf;
        int8_t *types = out.buf;
        Py_ssize_t num_shapes = shape_half.len, num_texts = text_class.len;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t name = group_of(name_id.buf, name_width, i);
            int64_t p = group_of(plane.buf, plane_width, i);
            if (name < 0 || name >= num_names || p < 0 || p >= num_planes) {
                status = SWEEP_BAD_ROW;
                break;
            }
            int t;
            if (!accel[p]) {
                t = host[name];
                if (has_device && t == HOST_COMPUTE && is_launch && is_launch[i])
                    t = HOST_PREPARE;
                types[i] = (int8_t)t;
                continue;
            }
            t = device[name];
            if (t == DEVICE_COMPUTE_16 || t == DEVICE_COMPUTE_32) {
                Py_ssize_t s = table_row(shape.view.buf, shape.width, i, num_shapes);
                if (s < 0) { status = SWEEP_BAD_ROW; break; }
                if (s < num_shapes - 1) t = half[s] ? DEVICE_COMPUTE_16 : DEVICE_COMPUTE_32;
                if (t == DEVICE_COMPUTE_32 && is_low && is_low[i]) t = DEVICE_COMPUTE_16;
            }
            Py_ssize_t h = table_row(hlo_op.view.buf, hlo_op.width, i, num_texts);
            Py_ssize_t o = table_row(op_type.view.buf, op_type.width, i, num_texts);
            if (h < 0 || o < 0) { status = SWEEP_BAD_ROW; break; }
            if (t == DEVICE_COMPUTE_16 || t == DEVICE_COMPUTE_32) {
                if (text[h] & TEXT_WAITS_TRANSFER) t = DEVICE_WAIT_DEVICE;
                else if (text[h] & TEXT_STARTS_TRANSFER) t = DEVICE_TO_DEVICE;
            }
            if (t >= 0 && (coll[name] || (text[h] & TEXT_COLLECTIVE) || (text[o] & TEXT_COLLECTIVE)))
                t = DEVICE_COLLECTIVES;
            types[i] = (int8_t)t;
        }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 5; k++)
        if (columns[k]->view.obj) PyBuffer_Release(&columns[k]->view);
    PyBuffer_Release(&name_id);
    PyBuffer_Release(&plane);
    PyBuffer_Release(&accelerator);
    PyBuffer_Release(&shape_half);
    PyBuffer_Release(&text_class);
    PyBuffer_Release(&host_type);
    PyBuffer_Release(&device_type);
    PyBuffer_Release(&name_collective);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    if (status != SWEEP_OK)
        return PyErr_Format(PyExc_ValueError, "event_types: a name, plane or code outside "
                            "its table");
    Py_RETURN_NONE;
}
