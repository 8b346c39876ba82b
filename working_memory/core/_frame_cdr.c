/* A WorkingItem's CDR bytes, written in C for ros/wire.py's frame encoder.
 *
 * In core, with the other C modules, though only ros/wire.py calls it: it writes bytes and
 * knows nothing of ROS.
 *
 * Why C: every tick the encoder writes again each item whose value changed (10 of the
 * monitor's 33 at the bench's 100 Hz); in Python each took some twenty calls (strings,
 * alignment, the tail's struct), most of the encoder's cost per tick on a cold cache
 * (BENCHMARKS.md, "Issue 12, fixed tick cost (sixth session)"). `item_split(item, text,
 * phase)` returns exactly what ros/wire.py's `item_split` returns, which stays the one
 * definition: little-endian XCDR1 from `phase` (the payload offset modulo 8), the key, the
 * value text and the source's value each a uint32 length (counting the NUL), the UTF-8
 * bytes and a NUL, aligned to 4; the float64 importance aligned to 8; then last_used (left
 * out: the caller joins the tick's time there) and the stale and exempt bools. The result:
 *   (bytes before last_used, the two flag bytes, the item's whole length [bytes])
 * `item_pieces(items, positions, phase, used, kept, text_of)` is ros/wire.py's `item_pieces`:
 * each item's kept piece (from `used`, else `kept`, while it encodes the very value and
 * source and equal importance and flags; a new one otherwise, put in `used`) and its split
 * at its phase (made with `text_of(value)` once per piece and phase).
 * Pure: no ROS.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *s_value;        /* "_value_": an Enum member's value, without its property */
static PyObject *struct_error;   /* struct.error, what the reference's struct.pack raises */

/* Item fields by position (core/items.py Item). */
enum { KEY = 0, SOURCE = 2, IMPORTANCE = 3, STALE = 6, EXEMPT = 7, ITEM_FIELDS = 8 };
enum { ITEM_PHASE = 2 };   /* where every WorkingItem after a pack's first starts (mod 8) */

static Py_ssize_t padding(Py_ssize_t offset, Py_ssize_t size)
{
    return (size - offset % size) % size;
}

static void put_u32(char *out, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        out[i] = (char)((value >> (8 * i)) & 0xff);
}

/* Write a CDR string at `out + *at`, payload offset `phase + *at`: padding, length, UTF-8, NUL. */
static void put_string(char *out, Py_ssize_t *at, Py_ssize_t phase, const char *text,
                       Py_ssize_t size)
{
    Py_ssize_t pad = padding(phase + *at, 4);
    memset(out + *at, 0, pad);
    put_u32(out + *at + pad, (uint32_t)(size + 1));
    memcpy(out + *at + pad + 4, text, size);
    out[*at + pad + 4 + size] = '\0';
    *at += pad + 4 + size + 1;
}

/* The UTF-8 of a str as the reference's str.encode() gives it; NULL with an error otherwise. */
static const char *utf8(PyObject *text, Py_ssize_t *size, const char *what)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "%s: must be a str, got %.100s", what,
                     Py_TYPE(text)->tp_name);
        return NULL;
    }
    const char *data = PyUnicode_AsUTF8AndSize(text, size);
    /* Compared as 64-bit numbers: on a 32-bit build UINT32_MAX is no Py_ssize_t. */
    if (data && (uint64_t)*size + 1 > (uint64_t)UINT32_MAX) {
        PyErr_Format(struct_error, "%s: too long for a CDR string", what);
        return NULL;
    }
    return data;
}

/* 0 when `item` is a tuple of 8 fields or more (an Item); -1 with an error otherwise. */
static int check_item(PyObject *item)
{
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < ITEM_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "item: must be an Item (a tuple of 8 fields)");
        return -1;
    }
    return 0;
}

static Py_ssize_t read_phase(PyObject *number)
{
    Py_ssize_t phase = PyLong_AsSsize_t(number);
    if (phase == -1 && PyErr_Occurred())
        return -1;
    if (phase < 0 || phase > 7) {
        PyErr_SetString(PyExc_ValueError, "phase: must be in 0..7");
        return -1;
    }
    return phase;
}

/* (before, flags, length) of a checked `item` with value text `value_text` at `phase`. */
static PyObject *split(PyObject *item, PyObject *value_text, Py_ssize_t phase)
{
    Py_ssize_t key_size, text_size, source_size;
    const char *key = utf8(PyTuple_GET_ITEM(item, KEY), &key_size, "item key");
    if (!key)
        return NULL;
    const char *text = utf8(value_text, &text_size, "value text");
    if (!text)
        return NULL;
    PyObject *source_value = PyObject_GetAttr(PyTuple_GET_ITEM(item, SOURCE), s_value);
    if (!source_value)
        return NULL;
    PyObject *result = NULL, *before = NULL, *flags = NULL;
    const char *source = utf8(source_value, &source_size, "item source value");
    if (!source)
        goto done;
    double importance = PyFloat_AsDouble(PyTuple_GET_ITEM(item, IMPORTANCE));
    if (importance == -1.0 && PyErr_Occurred()) {
        /* struct.pack('<d', x) raises struct.error for whatever float(x) cannot give. */
        PyErr_Clear();
        PyErr_SetString(struct_error, "required argument is not a float");
        goto done;
    }
    int stale = PyObject_IsTrue(PyTuple_GET_ITEM(item, STALE));
    int exempt = stale < 0 ? -1 : PyObject_IsTrue(PyTuple_GET_ITEM(item, EXEMPT));
    if (exempt < 0)
        goto done;
    /* The offsets as the reference's Writer counts them, from `phase`. */
    Py_ssize_t size = padding(phase, 4) + 4 + key_size + 1;
    size += padding(phase + size, 4) + 4 + text_size + 1;
    size += padding(phase + size, 4) + 4 + source_size + 1;
    size += padding(phase + size, 8) + 8;
    if (!(before = PyBytes_FromStringAndSize(NULL, size)))
        goto done;
    char *out = PyBytes_AS_STRING(before);
    Py_ssize_t at = 0;
    put_string(out, &at, phase, key, key_size);
    put_string(out, &at, phase, text, text_size);
    put_string(out, &at, phase, source, source_size);
    Py_ssize_t pad = padding(phase + at, 8);
    memset(out + at, 0, pad);
    at += pad;
    uint64_t bits;
    memcpy(&bits, &importance, 8);
    for (int i = 0; i < 8; i++)
        out[at + i] = (char)((bits >> (8 * i)) & 0xff);
    const char flag_bytes[2] = {(char)stale, (char)exempt};
    if (!(flags = PyBytes_FromStringAndSize(flag_bytes, 2)))
        goto done;
    /* The whole item: these bytes, last_used (8) and the flags (2). */
    result = Py_BuildValue("(OOn)", before, flags, size + 10);
done:
    Py_DECREF(source_value);
    Py_XDECREF(before);
    Py_XDECREF(flags);
    return result;
}

/* 0 when a call has `wanted` arguments; -1 with a TypeError naming `usage` otherwise. */
static int arity(Py_ssize_t nargs, Py_ssize_t wanted, const char *usage)
{
    if (nargs == wanted)
        return 0;
    PyErr_SetString(PyExc_TypeError, usage);
    return -1;
}

static PyObject *
item_split(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity(nargs, 3, "item_split(item, text, phase)") < 0)
        return NULL;
    Py_ssize_t phase = check_item(args[0]) < 0 ? -1 : read_phase(args[2]);
    return phase < 0 ? NULL : split(args[0], args[1], phase);
}

/* 1 when `a == b` is true as Python's `==` then `bool` say (no identity shortcut), 0 when
 * false, -1 on an error. */
static int equal(PyObject *a, PyObject *b)
{
    PyObject *result = PyObject_RichCompare(a, b, Py_EQ);
    if (!result)
        return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

/* 1 when the kept `piece` (value, source, importance, stale, exempt, by phase) encodes
 * `item` as ros/wire.py's `item_pieces` decides it; 0 when not, -1 on an error. */
static int piece_holds(PyObject *piece, PyObject *item)
{
    if (!PyTuple_Check(piece) || PyTuple_GET_SIZE(piece) != 6
        || !PyDict_Check(PyTuple_GET_ITEM(piece, 5))) {
        PyErr_SetString(PyExc_TypeError, "a kept piece: must be a tuple of 6, a dict last");
        return -1;
    }
    if (PyTuple_GET_ITEM(piece, 0) != PyTuple_GET_ITEM(item, 1)
        || PyTuple_GET_ITEM(piece, 1) != PyTuple_GET_ITEM(item, SOURCE))
        return 0;
    int fields[3][2] = {{2, IMPORTANCE}, {3, STALE}, {4, EXEMPT}};
    for (int f = 0; f < 3; f++) {
        int same = equal(PyTuple_GET_ITEM(piece, fields[f][0]),
                         PyTuple_GET_ITEM(item, fields[f][1]));
        if (same <= 0)
            return same;
    }
    return 1;
}

/* The (piece, split) of one item at `phase`, from `used` or `kept` while it holds; a new
 * reference, or NULL with an error. */
static PyObject *item_piece(PyObject *item, Py_ssize_t phase, PyObject *used, PyObject *kept,
                            PyObject *text_of)
{
    PyObject *key = PyTuple_GET_ITEM(item, KEY);
    PyObject *piece = PyDict_GetItemWithError(used, key);
    if (!piece && !PyErr_Occurred())
        piece = PyDict_GetItemWithError(kept, key);
    if (!piece && PyErr_Occurred())
        return NULL;
    Py_XINCREF(piece);
    if (piece) {
        int holds = piece_holds(piece, item);
        if (holds < 0) {
            Py_DECREF(piece);
            return NULL;
        }
        if (!holds)
            Py_CLEAR(piece);
    }
    if (!piece) {
        PyObject *by_phase = PyDict_New();
        if (!by_phase)
            return NULL;
        piece = PyTuple_Pack(6, PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, SOURCE),
                             PyTuple_GET_ITEM(item, IMPORTANCE), PyTuple_GET_ITEM(item, STALE),
                             PyTuple_GET_ITEM(item, EXEMPT), by_phase);
        Py_DECREF(by_phase);
        if (!piece)
            return NULL;
    }
    PyObject *result = NULL, *phase_key = NULL, *text = NULL, *made = NULL;
    if (PyDict_SetItem(used, key, piece) < 0 || !(phase_key = PyLong_FromSsize_t(phase)))
        goto done;
    PyObject *by_phase = PyTuple_GET_ITEM(piece, 5);
    PyObject *kept_split = PyDict_GetItemWithError(by_phase, phase_key);
    if (!kept_split) {
        if (PyErr_Occurred()
            || !(text = PyObject_CallOneArg(text_of, PyTuple_GET_ITEM(item, 1)))
            || !(made = split(item, text, phase))
            || PyDict_SetItem(by_phase, phase_key, made) < 0)
            goto done;
        kept_split = made;
    }
    result = PyTuple_Pack(2, piece, kept_split);
done:
    Py_DECREF(piece);
    Py_XDECREF(phase_key);
    Py_XDECREF(text);
    Py_XDECREF(made);
    return result;
}

static PyObject *
item_pieces(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity(nargs, 6, "item_pieces(items, positions, phase, used, kept, text_of)") < 0)
        return NULL;
    PyObject *used = args[3], *kept = args[4], *text_of = args[5];
    if (!PyDict_Check(used) || !PyDict_Check(kept)) {
        PyErr_SetString(PyExc_TypeError, "used and kept: must be dicts");
        return NULL;
    }
    Py_ssize_t phase = read_phase(args[2]);
    if (phase < 0)
        return NULL;
    /* A tuple (a pack's items are one): text_of or a field's __eq__ cannot change it. */
    PyObject *items = PySequence_Tuple(args[0]);
    PyObject *positions = items ? PySequence_Fast(args[1], "positions: must be a sequence")
                                : NULL;
    PyObject *result = NULL;
    if (!positions || !(result = PyList_New(0)))
        goto done;
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    for (Py_ssize_t p = 0; p < PySequence_Fast_GET_SIZE(positions); p++) {
        Py_ssize_t at = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(positions, p));
        if (at == -1 && PyErr_Occurred())
            goto fail;
        if (at < 0 || at >= count) {
            PyErr_SetString(PyExc_IndexError, "positions: out of the items' range");
            goto fail;
        }
        PyObject *item = PyTuple_GET_ITEM(items, at);
        /* Every item but a pack's first starts 2 past a multiple of 8 (see ros/wire.py). */
        PyObject *pair = check_item(item) < 0 ? NULL
                         : item_piece(item, at == 0 ? phase : ITEM_PHASE, used, kept, text_of);
        if (!pair || PyList_Append(result, pair) < 0) {
            Py_XDECREF(pair);
            goto fail;
        }
        Py_DECREF(pair);
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    Py_XDECREF(items);
    Py_XDECREF(positions);
    return result;
}

static PyMethodDef module_methods[] = {
    {"item_split", (PyCFunction)(void (*)(void))item_split, METH_FASTCALL,
     "Return a WorkingItem's (bytes before last_used, flags, length) at a phase (see wire)."},
    {"item_pieces", (PyCFunction)(void (*)(void))item_pieces, METH_FASTCALL,
     "Return the (piece, split) of items at positions, kept pieces reused (see wire)."},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "working_memory.core._frame_cdr",
    "A WorkingItem's CDR bytes in C for the frame encoder (see ros/wire.py).", -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__frame_cdr(void)
{
    if (!(s_value = PyUnicode_InternFromString("_value_")))
        return NULL;
    PyObject *struct_module = PyImport_ImportModule("struct");
    if (!struct_module)
        return NULL;
    struct_error = PyObject_GetAttrString(struct_module, "error");
    Py_DECREF(struct_module);
    if (!struct_error)
        return NULL;
    return PyModule_Create(&module_def);
}
