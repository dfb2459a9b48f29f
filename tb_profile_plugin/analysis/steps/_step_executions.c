/* xla_executions.py's passes: the kernels' host calls (kernel_calls), the events'
 * executions (assign) and the runs that make them (run_starts); see _step_sweep.c. */
#include "_step_sweep.h"

/* kernel_calls(out, call_of_id, low, size, correlation, on_device, module, index_of_code):
 * xla_executions.py `_kernel_calls_by_table` in one pass: each device event whose module has
 * calls (index_of_code[module] >= 0; module -1 reads the table's last entry) and whose
 * correlation id is in [low, low + size) takes call_of_id[code * size + id - low]. */
PyObject *sweep_kernel_calls(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer out, call_of_id, correlation, on_device, module, index_of_code;
    long long low, size;
    if (!PyArg_ParseTuple(args, "w*y*LLy*y*y*y*", &out, &call_of_id, &low, &size, &correlation,
                          &on_device, &module, &index_of_code))
        return NULL;
    Py_ssize_t n = out.len / 8, num_codes = index_of_code.len / 4;
    int module_width = group_width(&module, n);
    int ok = module_width && size >= 0 && num_codes > 0
             && check_size(&out, 8, n, "out") && check_size(&correlation, 8, n, "correlation")
             && check_size(&on_device, 1, n, "on_device")
             && check_size(&index_of_code, 4, num_codes, "index_of_code");
    if (!ok && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "kernel_calls: bad sizes");
    int status = SWEEP_OK;
    if (ok) {
        int64_t *calls = out.buf;
        const int64_t *table = call_of_id.buf, *ids = correlation.buf;
        const uint8_t *device = on_device.buf;
        const int32_t *code_of = index_of_code.buf;
        Py_ssize_t entries = call_of_id.len / 8;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            /* (unsigned: no overflow where low is far below zero) */
            uint64_t offset = (uint64_t)ids[i] - (uint64_t)low;
            if (!device[i] || ids[i] < low || offset >= (uint64_t)size) continue;
            int64_t m = group_of(module.buf, module_width, i);
            if (m < 0) m = num_codes - 1;
            if (m >= num_codes) { status = SWEEP_BAD_ROW; break; }
            int64_t code = code_of[m];
            if (code < 0) continue;
            if (code >= entries / size) { status = SWEEP_BAD_ROW; break; }  /* (size > 0 here) */
            int64_t at = code * size + (int64_t)offset;
            if (at >= entries) { status = SWEEP_BAD_ROW; break; }
            calls[i] = table[at];
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&call_of_id);
    PyBuffer_Release(&correlation);
    PyBuffer_Release(&on_device);
    PyBuffer_Release(&module);
    PyBuffer_Release(&index_of_code);
    if (!ok) return NULL;
    if (status != SWEEP_OK)
        return PyErr_Format(PyExc_ValueError, "kernel_calls: a module or call outside the "
                            "tables");
    Py_RETURN_NONE;
}

/* assign(start, begin, end, first, out): xla_executions.py `_assign` for one plane: out[k]
 * (int32) = first + the last execution j with begin[j] <= start[k] (begin ascending), where
 * start[k] < end[j]; untouched elsewhere. A line's starts ascend, so the execution is walked
 * to, not searched (a binary search where a start goes back). */
PyObject *sweep_assign(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer start, begin, end, out;
    Py_ssize_t first;
    if (!PyArg_ParseTuple(args, "y*y*y*nw*", &start, &begin, &end, &first, &out))
        return NULL;
    Py_ssize_t n = start.len / 8, e = begin.len / 8;
    int ok = check_size(&start, 8, n, "start") && check_size(&begin, 8, e, "begin")
             && check_size(&end, 8, e, "end") && check_size(&out, 4, n, "out")
             && first >= 0 && first + e <= INT32_MAX;
    if (!ok && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "assign: bad first");
    if (ok && e) {
        const int64_t *s = start.buf, *b = begin.buf, *f = end.buf;
        int32_t *found = out.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t j = -1;  /* the last execution begun at or before the previous start */
        int64_t previous = INT64_MIN;
        for (Py_ssize_t k = 0; k < n; k++) {
            int64_t x = s[k];
            if (x < previous) {  /* back in time: the last begin <= x by bisection */
                Py_ssize_t lo = 0, hi = e;
                while (lo < hi) {
                    Py_ssize_t mid = lo + (hi - lo) / 2;
                    if (b[mid] <= x) lo = mid + 1; else hi = mid;
                }
                j = lo - 1;
            } else {
                while (j + 1 < e && b[j + 1] <= x) j++;
            }
            previous = x;
            if (j >= 0 && x < f[j]) found[k] = (int32_t)(first + j);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&start);
    PyBuffer_Release(&begin);
    PyBuffer_Release(&end);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* run_starts(order, out, columns): xla_executions.py `_execution_runs`' run starts in one
 * pass: out[k] (bool) = k == 0 or some column differs between rows order[k - 1] and
 * order[k] (columns: a tuple of 1, 2, 4 or 8-byte signed integer columns, one value per row;
 * no gathered copy of each). */
PyObject *sweep_run_starts(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer order, out;
    PyObject *columns;
    if (!PyArg_ParseTuple(args, "y*w*O!", &order, &out, &PyTuple_Type, &columns))
        return NULL;
    Py_ssize_t m = order.len / 8, num_columns = PyTuple_GET_SIZE(columns), n = 0;
    Column cols[3];
    int ok = num_columns >= 1 && num_columns <= 3 && check_size(&order, 8, m, "order")
             && check_size(&out, 1, m, "out");
    int opened = 0;
    for (Py_ssize_t c = 0; c < num_columns && ok; c++) {
        cols[c].view.obj = NULL;
        ok = PyObject_GetBuffer(PyTuple_GET_ITEM(columns, c), &cols[c].view,
                                PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0;
        if (!ok) break;
        opened++;
        Py_ssize_t itemsize = cols[c].view.itemsize;
        n = cols[c].view.len / (itemsize ? itemsize : 1);
        ok = (itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8)
             && (c == 0 || n * itemsize == cols[c].view.len);
        cols[c].width = (int)itemsize;
        if (ok && c > 0 && cols[0].view.len / cols[0].width != n) ok = 0;
    }
    if (!ok && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "run_starts: 1 to 3 integer columns of one length");
    int status = SWEEP_OK;
    if (ok && m) {
        const int64_t *seq = order.buf;
        uint8_t *start = out.buf;
        Py_BEGIN_ALLOW_THREADS
        start[0] = 1;
        if (seq[0] < 0 || seq[0] >= n) status = SWEEP_BAD_ROW;
        for (Py_ssize_t k = 1; k < m && status == SWEEP_OK; k++) {
            int64_t i = seq[k - 1], j = seq[k];
            if (j < 0 || j >= n) { status = SWEEP_BAD_ROW; break; }
            uint8_t differs = 0;
            for (Py_ssize_t c = 0; c < num_columns; c++)
                differs |= group_of(cols[c].view.buf, cols[c].width, i)
                           != group_of(cols[c].view.buf, cols[c].width, j);
            start[k] = differs;
        }
        Py_END_ALLOW_THREADS
    }
    for (int c = 0; c < opened; c++) PyBuffer_Release(&cols[c].view);
    PyBuffer_Release(&order);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    if (status != SWEEP_OK) return PyErr_Format(PyExc_ValueError, "run_starts: a row outside "
                                                "the columns");
    Py_RETURN_NONE;
}
