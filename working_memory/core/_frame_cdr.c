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
 * `framed_each(items, used, kept, text_of, escape, sources, fallback)` is core/frames.py's
 * `py_framed_each` for a pack digest: each item's kept encoding (from `used`, else `kept`,
 * while it holds the very value and source and equal other content; a new one otherwise,
 * put in `used`), the common item's text written here ([key, value text, source, importance,
 * stamp, stale, exempt] as compact JSON, `escape` the key's JSON string, `sources` a source's
 * JSON text), any other item's by `fallback(item)`, the reference's `_item_encoding`.
 * After `kept_texts(FrozenDict, value_text)` (core/frames.py calls it), a frozen value's text
 * for that `text_of` is the one it keeps (`json_text`, what `value_text` returns), read
 * without the call; any other `text_of` is called.
 * Pure: no ROS.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static PyObject *s_value;        /* "_value_": an Enum member's value, without its property */
static PyObject *s_json_text;    /* "json_text": a frozen value's kept text (core/items.py) */
static PyObject *frozen_type;    /* core.frozen.FrozenDict once `kept_texts` named it */
static PyObject *kept_text_of;   /* the text_of whose result the kept text is (value_text) */
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

/* The text of `value`: a frozen value's kept text (what core/items.py `value_text` returns
 * for it, read without the call), else `text_of(value)`. A new reference or NULL. */
static PyObject *text_for(PyObject *text_of, PyObject *value)
{
    if (frozen_type && text_of == kept_text_of && (PyObject *)Py_TYPE(value) == frozen_type) {
        PyObject *text = PyObject_GetAttr(value, s_json_text);
        if (text || !PyErr_ExceptionMatches(PyExc_AttributeError))
            return text;
        PyErr_Clear();   /* not kept yet: text_of makes (and keeps) it */
    }
    return PyObject_CallOneArg(text_of, value);
}

static PyObject *
kept_texts(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "kept_texts(cls, text_of): cls must be a class");
        return NULL;
    }
    Py_XSETREF(frozen_type, Py_NewRef(args[0]));
    Py_XSETREF(kept_text_of, Py_NewRef(args[1]));
    Py_RETURN_NONE;
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

/* 1 when `a <op> b` (Py_EQ or Py_NE) is true as Python's operator then `bool` say (no
 * identity shortcut), 0 when false, -1 on an error. */
static int compares(PyObject *a, PyObject *b, int op)
{
    PyObject *result = PyObject_RichCompare(a, b, op);
    if (!result)
        return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

/* 1 when a kept tuple holds `item`: its first two fields are the item's very value and
 * source, and each (kept field, item field) pair of `fields` is equal (`op` Py_EQ: `==` is
 * true) or not different (Py_NE: `!=` is false), as the Python reference compares them; 0
 * when not, -1 on an error. */
static int holds(PyObject *kept, PyObject *item, const int fields[][2], int count, int op)
{
    if (PyTuple_GET_ITEM(kept, 0) != PyTuple_GET_ITEM(item, 1)
        || PyTuple_GET_ITEM(kept, 1) != PyTuple_GET_ITEM(item, SOURCE))
        return 0;
    for (int f = 0; f < count; f++) {
        int truth = compares(PyTuple_GET_ITEM(kept, fields[f][0]),
                             PyTuple_GET_ITEM(item, fields[f][1]), op);
        if (truth < 0)
            return -1;
        if (truth != (op == Py_EQ))
            return 0;
    }
    return 1;
}

/* `key`'s entry in `used`, else in `kept`: a new reference, or NULL (with an error set, or
 * none when neither holds it). */
static PyObject *kept_entry(PyObject *key, PyObject *used, PyObject *kept)
{
    PyObject *found = PyDict_GetItemWithError(used, key);
    if (!found && !PyErr_Occurred())
        found = PyDict_GetItemWithError(kept, key);
    Py_XINCREF(found);
    return found;
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
    static const int fields[3][2] = {{2, IMPORTANCE}, {3, STALE}, {4, EXEMPT}};
    return holds(piece, item, fields, 3, Py_EQ);
}

/* The (piece, split) of one item at `phase`, from `used` or `kept` while it holds; a new
 * reference, or NULL with an error. */
static PyObject *item_piece(PyObject *item, Py_ssize_t phase, PyObject *used, PyObject *kept,
                            PyObject *text_of)
{
    PyObject *key = PyTuple_GET_ITEM(item, KEY);
    PyObject *piece = kept_entry(key, used, kept);
    if (!piece && PyErr_Occurred())
        return NULL;
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
            || !(text = text_for(text_of, PyTuple_GET_ITEM(item, 1)))
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

/* -- a pack digest's item encodings (core/frames.py `ItemEncodings._framed_each`) -- */

/* 1 when the kept tuple (value, source, importance, stamp, stale, exempt, framed) encodes
 * `item`'s content as frames.py decides it; 0 when not, -1 on an error. */
static int encoding_holds(PyObject *kept, PyObject *item)
{
    if (!PyTuple_Check(kept) || PyTuple_GET_SIZE(kept) != 7
        || !PyBytes_Check(PyTuple_GET_ITEM(kept, 6))) {
        PyErr_SetString(PyExc_TypeError, "a kept encoding: must be a tuple of 7, bytes last");
        return -1;
    }
    static const int fields[4][2] = {{2, IMPORTANCE}, {3, 4}, {4, STALE}, {5, EXEMPT}};
    return holds(kept, item, fields, 4, Py_NE);
}

static int finite_float(PyObject *number)
{
    return PyFloat_CheckExact(number) && isfinite(PyFloat_AS_DOUBLE(number));
}

/* Append `text` (ASCII or UTF-8 of a str) and then `after` to `out` at `*at`. */
static void append(char *out, Py_ssize_t *at, const char *text, Py_ssize_t size, char after)
{
    memcpy(out + *at, text, size);
    *at += size;
    if (after)
        out[(*at)++] = after;
}

/* Keys' JSON strings and the last importance's repr, kept: the same keys and importances
 * come back every tick (a stamp is new with every reading, so it is written each time). */
static PyObject *escaped_keys, *escaped_by, *last_importance, *last_importance_repr;
enum { ESCAPED_KEYS = 4096 };   /* kept at most; then the keys start over */

/* `escape(key)`, kept by key (an exact str: its hash and equality are the str's). */
static PyObject *escaped_key(PyObject *escape, PyObject *key)
{
    if (escape != escaped_by) {   /* another escape function: the kept strings are not its */
        PyDict_Clear(escaped_keys);
        Py_XSETREF(escaped_by, Py_NewRef(escape));
    }
    PyObject *text = PyDict_GetItemWithError(escaped_keys, key);
    if (text)
        return Py_NewRef(text);
    if (PyErr_Occurred() || !(text = PyObject_CallOneArg(escape, key)))
        return NULL;
    if (PyDict_GET_SIZE(escaped_keys) >= ESCAPED_KEYS)
        PyDict_Clear(escaped_keys);
    if (PyDict_SetItem(escaped_keys, key, text) < 0)
        Py_CLEAR(text);
    return text;
}

/* repr() of an exact float, the last one's kept while the same bits (so -0.0 is not 0.0). */
static PyObject *importance_repr(PyObject *importance)
{
    double value = PyFloat_AS_DOUBLE(importance);
    if (last_importance) {
        double last = PyFloat_AS_DOUBLE(last_importance);
        if (memcmp(&value, &last, sizeof value) == 0)
            return Py_NewRef(last_importance_repr);
    }
    PyObject *text = PyObject_Repr(importance);
    if (text) {
        Py_XSETREF(last_importance, Py_NewRef(importance));
        Py_XSETREF(last_importance_repr, Py_NewRef(text));
    }
    return text;
}

/* New bytes of 8 + `size`, the first 8 `size` in little-endian (frames.py `_framed`). */
static PyObject *framed_bytes(Py_ssize_t size)
{
    PyObject *result = PyBytes_FromStringAndSize(NULL, 8 + size);
    if (result) {
        char *out = PyBytes_AS_STRING(result);
        for (int i = 0; i < 8; i++)
            out[i] = (char)(((uint64_t)size >> (8 * i)) & 0xff);
    }
    return result;
}

/* The framed encoding of one item (8-byte little-endian length, then the text that
 * frames.py `_item_encoding` returns): the common item written here, any other made by
 * `fallback(item)`. A new reference, or NULL with an error. */
static PyObject *item_framed(PyObject *item, PyObject *text_of, PyObject *escape,
                             PyObject *sources, PyObject *fallback)
{
    PyObject *key = PyTuple_GET_ITEM(item, KEY), *importance = PyTuple_GET_ITEM(item, IMPORTANCE);
    PyObject *stamp = PyTuple_GET_ITEM(item, 4), *stale = PyTuple_GET_ITEM(item, STALE);
    PyObject *exempt = PyTuple_GET_ITEM(item, EXEMPT);
    PyObject *parts[5] = {NULL, NULL, NULL, NULL, NULL};   /* key, value, source, imp, stamp */
    PyObject *text = NULL, *result = NULL;
    if (finite_float(importance) && finite_float(stamp) && PyBool_Check(stale)
        && PyBool_Check(exempt) && PyUnicode_CheckExact(key)) {
        parts[1] = text_for(text_of, PyTuple_GET_ITEM(item, 1));
        if (!parts[1]) {
            if (!PyErr_ExceptionMatches(PyExc_ValueError))
                goto done;
            PyErr_Clear();   /* NaN or Infinity: the reference encodes the item as a whole */
        } else {
            parts[2] = PyDict_GetItemWithError(sources, PyTuple_GET_ITEM(item, SOURCE));
            Py_XINCREF(parts[2]);
            if (!parts[2] && PyErr_Occurred())
                goto done;
        }
    }
    if (!parts[2]) {   /* anything else: the reference's text */
        if (!(text = PyObject_CallOneArg(fallback, item)))
            goto done;
        if (!PyBytes_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "an item encoding: must be bytes");
            goto done;
        }
        Py_ssize_t size = PyBytes_GET_SIZE(text);
        if ((result = framed_bytes(size)))
            memcpy(PyBytes_AS_STRING(result) + 8, PyBytes_AS_STRING(text), size);
        goto done;
    }
    if (!(parts[0] = escaped_key(escape, key)) || !(parts[3] = importance_repr(importance))
        || !(parts[4] = PyObject_Repr(stamp)))
        goto done;
    const char *data[5];
    Py_ssize_t sizes[5], size = 0;
    for (int i = 0; i < 5; i++) {
        if (!(data[i] = utf8(parts[i], &sizes[i], "an item encoding part")))
            goto done;
        size += sizes[i] + 1;   /* and its separator */
    }
    const char *flag[2] = {stale == Py_True ? "true" : "false",
                           exempt == Py_True ? "true" : "false"};
    Py_ssize_t flag_size[2] = {(Py_ssize_t)strlen(flag[0]), (Py_ssize_t)strlen(flag[1])};
    size += 1 + flag_size[0] + 1 + flag_size[1] + 1;   /* "[", the flags, "," and "]" */
    if (!(result = framed_bytes(size)))
        goto done;
    char *out = PyBytes_AS_STRING(result);
    Py_ssize_t at = 8;
    out[at++] = '[';
    for (int i = 0; i < 5; i++)
        append(out, &at, data[i], sizes[i], ',');
    append(out, &at, flag[0], flag_size[0], ',');
    append(out, &at, flag[1], flag_size[1], ']');
done:
    for (int i = 0; i < 5; i++)
        Py_XDECREF(parts[i]);
    Py_XDECREF(text);
    return result;
}

static PyObject *
framed_each(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity(nargs, 7, "framed_each(items, used, kept, text_of, escape, sources, fallback)") < 0)
        return NULL;
    PyObject *used = args[1], *kept = args[2];
    if (!PyDict_Check(used) || !PyDict_Check(kept) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "used, kept and sources: must be dicts");
        return NULL;
    }
    /* A tuple: text_of, fallback or a field's __ne__ cannot change it under the loop. */
    PyObject *items = PySequence_Tuple(args[0]);
    if (!items)
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    PyObject *result = PyList_New(count);
    if (!result)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (check_item(item) < 0)
            goto fail;
        PyObject *key = PyTuple_GET_ITEM(item, KEY);
        PyObject *found = kept_entry(key, used, kept);
        if (!found && PyErr_Occurred())
            goto fail;
        if (found) {
            int holds = encoding_holds(found, item);
            if (holds <= 0)
                Py_CLEAR(found);
            if (holds < 0)
                goto fail;
        }
        if (!found) {
            PyObject *framed = item_framed(item, args[3], args[4], args[5], args[6]);
            if (!framed)
                goto fail;
            found = PyTuple_Pack(7, PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, SOURCE),
                                 PyTuple_GET_ITEM(item, IMPORTANCE), PyTuple_GET_ITEM(item, 4),
                                 PyTuple_GET_ITEM(item, STALE), PyTuple_GET_ITEM(item, EXEMPT),
                                 framed);
            Py_DECREF(framed);
            if (!found)
                goto fail;
        }
        if (PyDict_SetItem(used, key, found) < 0) {
            Py_DECREF(found);
            goto fail;
        }
        PyObject *part = PyTuple_GET_ITEM(found, 6);
        Py_INCREF(part);
        PyList_SET_ITEM(result, i, part);
        Py_DECREF(found);
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    Py_DECREF(items);
    return result;
}

static PyMethodDef module_methods[] = {
    {"item_split", (PyCFunction)(void (*)(void))item_split, METH_FASTCALL,
     "Return a WorkingItem's (bytes before last_used, flags, length) at a phase (see wire)."},
    {"item_pieces", (PyCFunction)(void (*)(void))item_pieces, METH_FASTCALL,
     "Return the (piece, split) of items at positions, kept pieces reused (see wire)."},
    {"kept_texts", (PyCFunction)(void (*)(void))kept_texts, METH_FASTCALL,
     "Read a value's kept text (FrozenDict.json_text) for this text_of, without calling it."},
    {"framed_each", (PyCFunction)(void (*)(void))framed_each, METH_FASTCALL,
     "Return each item's framed digest encoding, kept ones reused (see core/frames.py)."},
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
    if (!(s_value = PyUnicode_InternFromString("_value_"))
        || !(s_json_text = PyUnicode_InternFromString("json_text"))
        || !(escaped_keys = PyDict_New()))
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
