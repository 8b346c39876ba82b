/* The fields of a serialized BoardUpdate, read in C for ros/wire_in.py's one-pass batch.
 *
 * Beside ros/wire_in.py, the one module that calls it; it reads bytes and knows nothing of ROS.
 *
 * Why C: at a 1 kHz board the node reads every update's bytes; with this reader the node
 * takes a flood at 19.2 k msg/s, with the Python one at 13.7 k (BENCHMARKS.md, "What each
 * speed mechanism buys"). `update(data)` reads exactly what ros/wire_in.py's `_read_update`
 * reads, the regular update only: little-endian XCDR1, every string ending in its one NUL
 * (or of length 0) and valid UTF-8, nothing past the end. It returns None for anything else,
 * and the node then reads the bytes with rclpy, so rclpy stays the one definition of behaviour.
 * Pure: no ROS. The result:
 *   (header sec, header nanosec,
 *    [(key, value text, tags list, importance, sec, nanosec, ttl sec, ttl nanosec), ...],
 *    removed keys list)
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const unsigned char *data;
    Py_ssize_t size;
    Py_ssize_t at;   /* offset in the bytes: the payload offset + 4 (the encapsulation) */
} Reader;

/* Align `at` to `n` bytes of the payload; 0, or -1 when `n` more bytes do not fit. */
static int align(Reader *r, Py_ssize_t n)
{
    r->at += (n - (r->at - 4) % n) % n;
    return r->at + n <= r->size ? 0 : -1;
}

static int read_u32(Reader *r, uint32_t *out)
{
    if (align(r, 4) < 0)
        return -1;
    memcpy(out, r->data + r->at, 4);
    r->at += 4;
    return 0;
}

/* A new str, or NULL (no exception set) for a string the regular update does not hold. */
static PyObject *read_string(Reader *r)
{
    uint32_t length;
    if (read_u32(r, &length) < 0)
        return NULL;
    if (length == 0)
        return PyUnicode_FromStringAndSize("", 0);
    /* size_t on both sides: a length near 2**32 cannot wrap a 32-bit Py_ssize_t. */
    if ((size_t)length > (size_t)(r->size - r->at) || r->data[r->at + length - 1] != 0)
        return NULL;
    const char *text = (const char *)r->data + r->at;
    if (memchr(text, 0, length - 1) != NULL)
        return NULL;
    PyObject *value = PyUnicode_DecodeUTF8(text, length - 1, NULL);
    if (value == NULL)
        PyErr_Clear();
    r->at += length;
    return value;
}

/* A new list of `read_string`s (a u32 count first), or NULL (no exception set). */
static PyObject *read_strings(Reader *r)
{
    uint32_t count;
    if (read_u32(r, &count) < 0)
        return NULL;
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        PyErr_Clear();
        return NULL;
    }
    for (uint32_t i = 0; i < count; i++) {
        PyObject *text = read_string(r);
        if (text == NULL || PyList_Append(list, text) < 0) {
            Py_XDECREF(text);
            Py_DECREF(list);
            PyErr_Clear();
            return NULL;
        }
        Py_DECREF(text);
    }
    return list;
}

/* importance (f64, 8-aligned), stamp (i32, u32), ttl (i32, u32), as a new tuple's tail. */
static int read_tail(Reader *r, double *importance, int32_t *sec, uint32_t *nanosec,
                     int32_t *ttl_sec, uint32_t *ttl_nanosec)
{
    if (align(r, 8) < 0 || r->at + 24 > r->size)
        return -1;
    const unsigned char *at = r->data + r->at;
    memcpy(importance, at, 8);
    memcpy(sec, at + 8, 4);
    memcpy(nanosec, at + 12, 4);
    memcpy(ttl_sec, at + 16, 4);
    memcpy(ttl_nanosec, at + 20, 4);
    r->at += 24;
    return 0;
}

static PyObject *read_entry(Reader *r)
{
    PyObject *key = NULL, *text = NULL, *tags = NULL;
    double importance;
    int32_t sec, ttl_sec;
    uint32_t nanosec, ttl_nanosec;
    if ((key = read_string(r)) == NULL || (text = read_string(r)) == NULL
        || (tags = read_strings(r)) == NULL
        || read_tail(r, &importance, &sec, &nanosec, &ttl_sec, &ttl_nanosec) < 0) {
        Py_XDECREF(key);
        Py_XDECREF(text);
        Py_XDECREF(tags);
        return NULL;
    }
    PyObject *entry = Py_BuildValue("(NNNdlklk)", key, text, tags, importance, (long)sec,
                                    (unsigned long)nanosec, (long)ttl_sec,
                                    (unsigned long)ttl_nanosec);
    if (entry == NULL)
        PyErr_Clear();
    return entry;
}

static PyObject *update(PyObject *module, PyObject *arg)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Reader r = {view.buf, view.len, 4};
    PyObject *entries = NULL, *removed = NULL, *frame_id = NULL, *result = NULL;
    int32_t sec;
    uint32_t nanosec, count;
    if (view.len < 12 || r.data[0] != 0 || r.data[1] != 1)
        goto irregular;
    memcpy(&sec, r.data + 4, 4);
    memcpy(&nanosec, r.data + 8, 4);
    r.at = 12;
    if ((frame_id = read_string(&r)) == NULL || read_u32(&r, &count) < 0)
        goto irregular;
    if ((entries = PyList_New(0)) == NULL)
        goto done;
    for (uint32_t i = 0; i < count; i++) {
        PyObject *entry = read_entry(&r);
        if (entry == NULL)
            goto irregular;
        int failed = PyList_Append(entries, entry);
        Py_DECREF(entry);
        if (failed < 0)
            goto done;
    }
    if ((removed = read_strings(&r)) == NULL)
        goto irregular;
    result = Py_BuildValue("(lkOO)", (long)sec, (unsigned long)nanosec, entries, removed);
    goto done;
irregular:
    PyErr_Clear();
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(frame_id);
    Py_XDECREF(entries);
    Py_XDECREF(removed);
    PyBuffer_Release(&view);
    return result;
#else
    /* A big-endian host: the Python reader serves. */
    Py_RETURN_NONE;
#endif
}

static PyMethodDef methods[] = {
    {"update", update, METH_O,
     "Return a regular serialized BoardUpdate's fields (see the module comment), else None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "working_memory.ros._board_cdr",
    "A serialized BoardUpdate's fields, read in C (see ros/wire_in.py).", -1, methods,
};

PyMODINIT_FUNC
PyInit__board_cdr(void)
{
    return PyModule_Create(&module_def);
}
