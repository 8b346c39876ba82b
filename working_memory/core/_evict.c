/* The put/evict hot path of core/eviction.py's WorkingSet, in C (CPython C API only), and
 * the touch of the served set an assembler makes every tick (touch_present).
 *
 * Why C: the target is evict within 2x cachetools.LRUCache per op with the audit trail kept;
 * the pure-Python reference costs 2.1-3.2x cachetools, this module 1.2-1.5x (64 to 100,000
 * keys; `make bench` prints both; BENCHMARKS.md, "What each speed mechanism buys"), the
 * interpreter's per-statement cost being the difference. This module does exactly what
 * `PyWorkingSet.put` does for its common call (a str key, the value by position or keyword,
 * a float importance in [0, 1], a Source, no stamp or a finite float one, no size, bool
 * flags; the assembler's call), on the
 * same Python objects: the slot lists, the dicts, `LevelRanking`'s levels and OrderedDicts,
 * `TimeBase`'s fields, the ring log. Any other call, and every rare branch (a
 * settlement, readmitted slots at the bottom level, a level to (re)order, another ranking),
 * calls the Python code it would run, so the reference stays the one definition of behaviour.
 *
 * `WorkingSetCore` is a base class holding the working set's fields as members: Python code
 * reads and writes them as attributes, this file reads them as struct fields. Pure: no ROS.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* Slot fields, as in core/ranking.py. */
enum { KEY, VALUE, SOURCE, IMPORTANCE, STAMP, LAST_USED, STALE, EXEMPT, SIZE, SEQ, ITEM, OUT,
       RECORD, NUMBER, SLOT_FIELDS };

typedef struct {
    PyObject_HEAD
    PyObject *slots, *ranking, *time, *exempt_prefixes, *removed_numbers, *returning;
    PyObject *readmissions, *log, *capacity, *size_budget, *tick, *log_limit;
    PyObject *seq;   /* an object, not a count: touch_many reads and writes it in Python */
    Py_ssize_t present, exempt_count, evictions_total;
    Py_ssize_t size_bytes, exempt_bytes;   /* counts: no int object made per put */
} Core;

/* What configure() was given: the reference put, the classes and the helpers put needs. */
static PyObject *reference_put, *reference_touch, *source_type, *source_default, *record_type, *json_size_py;
static PyObject *encode_ascii, *capacity_reason, *level_ranking_type, *timebase_type, *level_type;
/* items_of's reference (PyWorkingSet.items_of) and the Item class it makes. */
static PyObject *reference_items_of, *item_type;
static unsigned long long fast_items_of, reference_items_ofs;
/* Offsets of the __slots__ fields of TimeBase, LevelRanking and _Level (read in place). */
static Py_ssize_t off_last_ros, off_offset, off_last_effective, off_levels, off_order;
static Py_ssize_t off_used, off_returned, off_ordered;
/* core.frozen.FrozenDict and its `json_text` slot: a frozen value's kept text (items.py). */
static PyObject *frozen_type;
static Py_ssize_t off_json_text;
static unsigned long long fast_puts, reference_puts;
static PyTypeObject *odict_type;
static PyObject *odict_popitem;   /* OrderedDict.popitem */
static PyObject *odict_move_to_end;   /* OrderedDict.move_to_end */
static unsigned long long fast_touches, reference_touches;

static PyObject *s_value, *s_importance, *s_now, *s_source, *s_stamp, *s_stale, *s_exempt, *s_size;
static PyObject *s_defer, *s_settle, *s_last_eviction, *s_order_level, *s_unorder_lowest;
static PyObject *s_pop_lowest, *s_add, *s_discard, *s_popitem, *s_move_to_end, *empty_tuple;
static PyObject *one;

#define FIELD(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* `target(self, *args, **kwnames)`: the reference implementation of a method, counted. */
static PyObject *
call_target(PyObject *target, unsigned long long *counter, PyObject *self,
            PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (!target) {
        PyErr_SetString(PyExc_RuntimeError, "working_memory.core._evict is not configured");
        return NULL;
    }
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[16], **all = small, *result;
    if (total + 1 > 16 && !(all = PyMem_Malloc((total + 1) * sizeof(PyObject *))))
        return PyErr_NoMemory();
    all[0] = self;
    for (Py_ssize_t i = 0; i < total; i++)
        all[i + 1] = args[i];
    (*counter)++;
    result = PyObject_Vectorcall(target, all, nargs + 1, kwnames);
    if (all != small)
        PyMem_Free(all);
    return result;
}

static PyObject *
call_reference(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return call_target(reference_put, &reference_puts, self, args, nargs, kwnames);
}

/* Byte length of the compact JSON of `value`, as items.json_size; -1 with an error set. */
static Py_ssize_t
json_size(PyObject *value)
{
    PyTypeObject *cls = Py_TYPE(value);
    if (cls == &PyLong_Type) {
        int overflow;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred())
            return -1;
        if (!overflow) {   /* else items.json_size below */
            unsigned long long magnitude = number < 0 ? 0ULL - (unsigned long long)number
                                                      : (unsigned long long)number;
            Py_ssize_t length = number < 0 ? 2 : 1;
            while (magnitude >= 10) {
                magnitude /= 10;
                length++;
            }
            return length;
        }
    } else if (cls == &PyFloat_Type) {
        double number = PyFloat_AS_DOUBLE(value);
        if (Py_IS_FINITE(number)) {
            /* float.__repr__ is this call. */
            char *text = PyOS_double_to_string(number, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
            if (!text)
                return -1;
            Py_ssize_t length = (Py_ssize_t)strlen(text);
            PyMem_Free(text);
            return length;
        }
    } else if (cls == &PyUnicode_Type && encode_ascii) {
        PyObject *encoded = PyObject_CallOneArg(encode_ascii, value);
        if (!encoded)
            return -1;
        Py_ssize_t length = PyObject_Length(encoded);
        Py_DECREF(encoded);
        return length;
    } else if (value == Py_None || value == Py_True) {
        return 4;
    } else if (value == Py_False) {
        return 5;
    } else if ((PyObject *)cls == frozen_type) {
        /* The text value_text keeps on the value (ASCII: its length is its byte length). */
        PyObject *text = *(PyObject **)((char *)value + off_json_text);
        if (text && PyUnicode_CheckExact(text))
            return PyUnicode_GET_LENGTH(text);
    }
    PyObject *size = PyObject_CallOneArg(json_size_py, value);
    if (!size)
        return -1;
    Py_ssize_t length = PyLong_AsSsize_t(size);
    Py_DECREF(size);
    return length;
}

/* `*field += sign * amount` for a slot's size (an int); -1 with an error. */
static int
add_to(Py_ssize_t *field, PyObject *amount, int sign)
{
    Py_ssize_t size = PyLong_AsSsize_t(amount);
    if (size == -1 && PyErr_Occurred())
        return -1;
    *field += sign > 0 ? size : -size;
    return 0;
}

/* The LevelRanking level of `importance`, borrowed; NULL without an error if absent. */
static PyObject *
level_of(PyObject *ranking, PyObject *importance)
{
    PyObject *levels = FIELD(ranking, off_levels);
    if (!levels || !PyDict_CheckExact(levels)) {
        PyErr_SetString(PyExc_RuntimeError, "LevelRanking._levels is not a dict");
        return NULL;
    }
    return PyDict_GetItemWithError(levels, importance);
}

/* ranking.add(slot): LevelRanking's in place, any other's by its method. */
static int
ranking_add(PyObject *ranking, PyObject *slot)
{
    if (Py_TYPE(ranking) != (PyTypeObject *)level_ranking_type) {
        PyObject *done = PyObject_CallMethodOneArg(ranking, s_add, slot);
        Py_XDECREF(done);
        return done ? 0 : -1;
    }
    PyObject *importance = PyList_GET_ITEM(slot, IMPORTANCE);
    PyObject *level = level_of(ranking, importance), *made = NULL;
    if (!level && PyErr_Occurred())
        return -1;
    if (!level || FIELD(level, off_ordered) != Py_True) {
        made = level = PyObject_CallMethodOneArg(ranking, s_order_level, importance);
        if (!made)
            return -1;
    }
    PyObject *used = FIELD(level, off_used);
    int failed = PyObject_SetItem(used, PyList_GET_ITEM(slot, KEY), slot);
    Py_XDECREF(made);
    return failed;
}

/* The LevelRanking level of a present slot, borrowed; NULL with KeyError if it has none. */
static PyObject *
slot_level(PyObject *ranking, PyObject *slot)
{
    PyObject *level = level_of(ranking, PyList_GET_ITEM(slot, IMPORTANCE));
    if (!level && !PyErr_Occurred())
        PyErr_SetObject(PyExc_KeyError, PyList_GET_ITEM(slot, IMPORTANCE));
    return level;
}

/* New references to the `used` and `returned` dicts of a present slot's LevelRanking level,
 * held while a key's __eq__ (a dict lookup) may change the ranking; -1 with an error. */
static int
slot_dicts(PyObject *ranking, PyObject *slot, PyObject **used, PyObject **returned)
{
    PyObject *level = slot_level(ranking, slot);
    if (!level)
        return -1;
    *used = FIELD(level, off_used);
    *returned = FIELD(level, off_returned);
    if (!*used || !*returned) {
        PyErr_SetString(PyExc_AttributeError, "a ranking level lost its used or returned dict");
        return -1;
    }
    Py_INCREF(*used);
    Py_INCREF(*returned);
    return 0;
}

/* ranking.discard(slot) of a present slot. */
static int
ranking_discard(PyObject *ranking, PyObject *slot)
{
    if (Py_TYPE(ranking) != (PyTypeObject *)level_ranking_type) {
        PyObject *done = PyObject_CallMethodOneArg(ranking, s_discard, slot);
        Py_XDECREF(done);
        return done ? 0 : -1;
    }
    PyObject *key = PyList_GET_ITEM(slot, KEY), *used, *returned;
    if (slot_dicts(ranking, slot, &used, &returned) < 0)
        return -1;
    int found = PyDict_Contains(used, key);   /* an OrderedDict is a dict underneath */
    int failed = found < 0 ? -1 : PyObject_DelItem(found ? used : returned, key);
    Py_DECREF(used);
    Py_DECREF(returned);
    return failed;
}

/* ranking.pop_lowest(): a new reference to the lowest slot, removed from the ranking. */
static PyObject *
ranking_pop_lowest(PyObject *ranking)
{
    if (Py_TYPE(ranking) != (PyTypeObject *)level_ranking_type)
        return PyObject_CallMethodNoArgs(ranking, s_pop_lowest);
    for (;;) {
        PyObject *order = FIELD(ranking, off_order);
        if (!order || !PyList_CheckExact(order) || PyList_GET_SIZE(order) == 0)
            return PyObject_CallMethodNoArgs(ranking, s_pop_lowest);
        PyObject *level = level_of(ranking, PyList_GET_ITEM(order, 0));
        if (!level)
            return PyErr_Occurred() ? NULL : PyObject_CallMethodNoArgs(ranking, s_pop_lowest);
        PyObject *returned = FIELD(level, off_returned);
        /* Readmitted slots rank in between: Python's way. */
        int any_returned = returned ? PyObject_IsTrue(returned) : 1;
        if (any_returned < 0)
            return NULL;
        if (any_returned)
            return PyObject_CallMethodNoArgs(ranking, s_pop_lowest);
        PyObject *used = FIELD(level, off_used);
        if (PyDict_GET_SIZE(used)) {
            /* used.popitem(last=False), without looking the method up when it is an OrderedDict */
            PyObject *args[2] = {used, Py_False};
            PyObject *pair = Py_TYPE(used) == odict_type
                ? PyObject_Vectorcall(odict_popitem, args, 2, NULL)
                : PyObject_VectorcallMethod(s_popitem, args, 2, NULL);
            if (!pair)
                return NULL;
            PyObject *slot = PyTuple_GET_ITEM(pair, 1);
            Py_INCREF(slot);
            Py_DECREF(pair);
            return slot;
        }
        PyObject *done = PyObject_CallMethodNoArgs(ranking, s_unorder_lowest);
        if (!done)
            return NULL;
        Py_DECREF(done);
    }
}

static int
set_slot(PyObject *slot, int field, PyObject *value)
{
    Py_INCREF(value);
    return PyList_SetItem(slot, field, value);
}

/* WorkingSet._evict_lowest(reason, records, stamp) while `_returning` is empty. */
static int
evict_lowest(Core *self, PyObject *reason, PyObject *records, PyObject *stamp)
{
    PyObject *slot = ranking_pop_lowest(self->ranking);
    if (!slot)
        return -1;
    if (!PyList_CheckExact(slot) || PyList_GET_SIZE(slot) != SLOT_FIELDS) {
        Py_DECREF(slot);
        PyErr_SetString(PyExc_RuntimeError, "the ranking returned something else than a slot");
        return -1;
    }
    int failed = -1;
    set_slot(slot, OUT, Py_True);
    self->present--;
    if (add_to(&self->size_bytes, PyList_GET_ITEM(slot, SIZE), -1) < 0)
        goto done;
    PyObject *key = PyList_GET_ITEM(slot, KEY);
    if (PyDict_GET_SIZE(self->readmissions)) {
        int found = PyDict_Contains(self->readmissions, key);
        if (found < 0 || (found && PyDict_DelItem(self->readmissions, key) < 0))
            goto done;
    }
    /* No returning check: put evicts here only when nothing is returning (else it settles). */
    PyObject *record = ((PyTypeObject *)record_type)->tp_alloc((PyTypeObject *)record_type, 6);
    if (!record)
        goto done;
    PyObject *fields[6] = {self->tick, key, PyList_GET_ITEM(slot, IMPORTANCE),
                           PyList_GET_ITEM(slot, LAST_USED), reason, stamp};
    for (int i = 0; i < 6; i++) {
        Py_INCREF(fields[i]);
        PyTuple_SET_ITEM(record, i, fields[i]);
    }
    Py_ssize_t number = self->evictions_total;
    PyObject *number_object = PyLong_FromSsize_t(number);
    Py_ssize_t limit = PyLong_AsSsize_t(self->log_limit);
    if (!number_object || (limit == -1 && PyErr_Occurred())) {
        Py_XDECREF(number_object);
        Py_DECREF(record);
        goto done;
    }
    set_slot(slot, RECORD, record);
    PyList_SetItem(slot, NUMBER, number_object);
    self->evictions_total = number + 1;
    if (number < limit)
        failed = PyList_Append(self->log, record);
    else
        failed = PyList_SetItem(self->log, number % limit, Py_NewRef(record));
    if (!failed)
        failed = PyList_Append(records, record);
    Py_DECREF(record);
done:
    Py_DECREF(slot);
    return failed;
}

static int
is_exempt_key(Core *self, PyObject *key)
{
    PyObject *prefixes = self->exempt_prefixes;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(prefixes); i++) {
        Py_ssize_t match = PyUnicode_Tailmatch(key, PyTuple_GET_ITEM(prefixes, i), 0,
                                               PY_SSIZE_T_MAX, -1);
        if (match)
            return (int)match;
    }
    return 0;
}

static PyObject *
settle_evicted(Core *self)
{
    PyObject *pair = PyObject_CallMethodOneArg((PyObject *)self, s_settle, empty_tuple);
    if (!pair)
        return NULL;
    PyObject *evicted = PyTuple_GetItem(pair, 0);
    Py_XINCREF(evicted);
    Py_DECREF(pair);
    return evicted;
}

/* The interned name of keyword `name` among put's, or NULL when it is none of them. */
static PyObject *
put_keyword(PyObject *name)
{
    PyObject *known[] = {s_value, s_importance, s_now, s_source, s_stamp, s_stale, s_exempt,
                         s_size, s_defer};
    const size_t count = sizeof(known) / sizeof(known[0]);
    for (size_t i = 0; i < count; i++) {
        if (name == known[i])
            return name;
    }
    /* A name made at run time (not interned): compare the text. */
    for (size_t i = 0; PyUnicode_Check(name) && i < count; i++) {
        if (PyUnicode_Compare(name, known[i]) == 0)
            return known[i];
    }
    return NULL;
}

/* The effective time of ROS `now` on the set's TimeBase, observed, for TimeBase.observe's
 * forward case (a float `now` not before the last one); NULL without an error otherwise, when
 * the reference must observe it. A new reference. */
static PyObject *
observe_forward(Core *self, PyObject *now)
{
    PyObject *time = self->time;
    if (!time || Py_TYPE(time) != (PyTypeObject *)timebase_type || Py_TYPE(now) != &PyFloat_Type)
        return NULL;
    PyObject *last_ros = FIELD(time, off_last_ros), *offset = FIELD(time, off_offset);
    PyObject *last_effective = FIELD(time, off_last_effective);
    double now_s = PyFloat_AS_DOUBLE(now);
    if (!last_ros || Py_TYPE(last_ros) != &PyFloat_Type || !(PyFloat_AS_DOUBLE(last_ros) <= now_s)
        || !(now_s < Py_HUGE_VAL) || !offset || Py_TYPE(offset) != &PyFloat_Type
        || !last_effective || Py_TYPE(last_effective) != &PyFloat_Type)
        return NULL;
    double effective_s = now_s + PyFloat_AS_DOUBLE(offset);
    PyObject *effective;
    if (effective_s < PyFloat_AS_DOUBLE(last_effective))
        effective = Py_NewRef(last_effective);
    else if (effective_s == now_s && now_s != 0.0)   /* no offset: the same float, no new one */
        effective = Py_NewRef(now);
    else if (!(effective = PyFloat_FromDouble(effective_s)))
        return NULL;
    Py_SETREF(FIELD(time, off_last_ros), Py_NewRef(now));
    Py_SETREF(FIELD(time, off_last_effective), Py_NewRef(effective));
    return effective;
}

/* WorkingSet.put: the common call here, any other by the reference. */
static PyObject *
core_put(Core *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *value = nargs == 2 ? args[1] : NULL, *importance = NULL, *now = NULL;
    PyObject *source = source_default, *stale = Py_False, *stamp = Py_None;
    PyObject *exempt_arg = Py_False, *defer = Py_False;
    /* put(key, value, **keywords) or, as the assembler calls it, put(key, value=..., ...). */
    if (nargs < 1 || nargs > 2 || !kwnames || !reference_put)
        return call_reference((PyObject *)self, args, nargs, kwnames);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *name = put_keyword(PyTuple_GET_ITEM(kwnames, i)), *given = args[nargs + i];
        if (name == s_value && nargs == 1) value = given;
        else if (name == s_importance) importance = given;
        else if (name == s_now) now = given;
        else if (name == s_source) source = given;
        else if (name == s_stale) stale = given;
        else if (name == s_exempt) exempt_arg = given;
        else if (name == s_defer) defer = given;
        else if (name == s_stamp) stamp = given;
        else if (name == s_size && given == Py_None) continue;
        else return call_reference((PyObject *)self, args, nargs, kwnames);
    }
    /* A stamp [s] given as a finite float is kept as it is (the reference's float(stamp)). */
    PyObject *key = args[0];
    if (!value || !importance || !now || Py_TYPE(key) != &PyUnicode_Type
        || PyUnicode_GET_LENGTH(key) == 0 || Py_TYPE(importance) != &PyFloat_Type
        || !(PyFloat_AS_DOUBLE(importance) >= 0.0 && PyFloat_AS_DOUBLE(importance) <= 1.0)
        || Py_TYPE(source) != (PyTypeObject *)source_type || !PyBool_Check(stale)
        || !PyBool_Check(exempt_arg) || !PyBool_Check(defer) || Py_TYPE(now) != &PyFloat_Type
        || !(stamp == Py_None || (Py_TYPE(stamp) == &PyFloat_Type
                                  && Py_IS_FINITE(PyFloat_AS_DOUBLE(stamp)))))
        return call_reference((PyObject *)self, args, nargs, kwnames);
    /* The size first, as the reference: a dict or list value runs Python code (the JSON
     * encoder), which may change this set, so no field of it is read before. */
    Py_ssize_t size = json_size(value);
    if (size < 0) {
        /* Not strict JSON (what the reference catches): the reference raises its ValueError. */
        if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_ValueError))
            return NULL;
        PyErr_Clear();
        return call_reference((PyObject *)self, args, nargs, kwnames);
    }
    if (!self->slots || !PyDict_CheckExact(self->slots) || !self->exempt_prefixes
        || !PyTuple_CheckExact(self->exempt_prefixes) || !self->ranking || !self->log
        || !PyList_CheckExact(self->log) || !self->returning || !PyDict_CheckExact(self->returning)
        || !self->readmissions || !PyDict_CheckExact(self->readmissions)
        || !self->removed_numbers || !PyDict_CheckExact(self->removed_numbers) || !self->seq
        || !self->capacity || !self->size_budget
        || !self->tick || !self->log_limit)
        return call_reference((PyObject *)self, args, nargs, kwnames);
    /* Exemption before anything changes; an error (a prefix that is no str) is the reference's
     * to raise, from the state it raises it in. */
    int exempt = exempt_arg == Py_True ? 1 : is_exempt_key(self, key);
    if (exempt < 0) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError))
            return NULL;
        PyErr_Clear();
        return call_reference((PyObject *)self, args, nargs, kwnames);
    }
    /* TimeBase.observe's forward case; any other time is the reference's to check. */
    PyObject *effective = observe_forward(self, now);
    if (!effective)
        return PyErr_Occurred() ? NULL : call_reference((PyObject *)self, args, nargs, kwnames);
    fast_puts++;
    /* From here on the put happens: the checks above are the reference's. */
    PyObject *result = NULL, *slot = NULL, *size_object = NULL, *seq_object = NULL;
    if (!(seq_object = PyNumber_Add(self->seq, one)))
        goto done;
    Py_SETREF(self->seq, Py_NewRef(seq_object));
    if (!(size_object = PyLong_FromSsize_t(size)) || !(slot = PyList_New(SLOT_FIELDS)))
        goto done;
    PyObject *fields[SLOT_FIELDS] = {key, value, source, importance,
                                     stamp == Py_None ? now : stamp, effective, stale,
                                     exempt ? Py_True : Py_False, size_object, seq_object,
                                     Py_None, Py_False, Py_None, Py_None};
    for (int i = 0; i < SLOT_FIELDS; i++)
        PyList_SET_ITEM(slot, i, Py_NewRef(fields[i]));
    /* One lookup in the dict of every key ever put: it inserts a new key's slot. */
    PyObject *old = PyDict_SetDefault(self->slots, key, slot);
    if (!old)
        goto done;
    if (old != slot) {
        Py_INCREF(old);
        int out = PyObject_IsTrue(PyList_GET_ITEM(old, OUT));
        set_slot(slot, RECORD, PyList_GET_ITEM(old, RECORD));
        set_slot(slot, NUMBER, PyList_GET_ITEM(old, NUMBER));
        int failed = out < 0;
        if (out > 0) {
            self->present++;
            failed = PyDict_SetItem(self->returning, key, PyList_GET_ITEM(old, RECORD));
        } else if (!failed) {   /* WorkingSet._forget(old) */
            PyObject *old_size = PyList_GET_ITEM(old, SIZE);
            failed = add_to(&self->size_bytes, old_size, -1);
            if (!failed && PyList_GET_ITEM(old, EXEMPT) == Py_True) {
                self->exempt_count--;
                failed = add_to(&self->exempt_bytes, old_size, -1);
            } else if (!failed) {
                failed = ranking_discard(self->ranking, old);
            }
        }
        Py_DECREF(old);
        if (failed || PyDict_SetItem(self->slots, key, slot) < 0)
            goto done;
    } else {
        self->present++;
        if (PyDict_GET_SIZE(self->removed_numbers)) {
            PyObject *number = PyDict_GetItemWithError(self->removed_numbers, key);
            if (!number && PyErr_Occurred())
                goto done;
            if (number) {
                set_slot(slot, NUMBER, number);
                if (PyDict_DelItem(self->removed_numbers, key) < 0)
                    goto done;
                PyObject *record = PyObject_CallMethodOneArg((PyObject *)self, s_last_eviction,
                                                             key);
                if (!record || PyList_SetItem(slot, RECORD, record) < 0)
                    goto done;
            }
        }
    }
    self->size_bytes += size;
    if (exempt) {
        self->exempt_count++;
        self->exempt_bytes += size;
    } else if (ranking_add(self->ranking, slot) < 0) {
        goto done;
    }
    if (defer == Py_True) {
        result = PyList_New(0);
        goto done;
    }
    if (PyDict_GET_SIZE(self->returning) || self->size_budget != Py_None) {
        result = settle_evicted(self);
        goto done;
    }
    int overflow;
    long long capacity = PyLong_AsLongLongAndOverflow(self->capacity, &overflow);
    if (capacity == -1 && PyErr_Occurred())
        goto done;
    if (overflow > 0 || self->present - capacity <= 0) {
        result = PyList_New(0);
        goto done;
    }
    if (self->present - capacity > 1 || self->present == self->exempt_count) {
        result = settle_evicted(self);
        goto done;
    }
    /* The steady churn: one item over capacity, one eviction. */
    if (!(result = PyList_New(0)))
        goto done;
    if (evict_lowest(self, capacity_reason, result, effective) < 0)
        Py_CLEAR(result);
done:
    Py_DECREF(effective);
    Py_XDECREF(slot);
    Py_XDECREF(size_object);
    Py_XDECREF(seq_object);
    return result;
}

/* LevelRanking.use([slot]) of one present slot just used again: the end of its level. */
static int
level_use(PyObject *ranking, PyObject *slot)
{
    PyObject *key = PyList_GET_ITEM(slot, KEY), *used, *returned;
    if (slot_dicts(ranking, slot, &used, &returned) < 0)
        return -1;
    PyObject *args[2] = {used, key};
    PyObject *moved = Py_TYPE(used) == odict_type
        ? PyObject_Vectorcall(odict_move_to_end, args, 2, NULL)
        : PyObject_VectorcallMethod(s_move_to_end, args, 2, NULL);
    int failed = -1;
    if (moved) {
        Py_DECREF(moved);
        failed = 0;
    } else if (PyErr_ExceptionMatches(PyExc_KeyError)) {
        /* Not among the used: a readmitted slot, which joins them now. */
        PyErr_Clear();
        failed = PyObject_DelItem(returned, key) < 0 || PyObject_SetItem(used, key, slot) < 0
            ? -1 : 0;
    }
    Py_DECREF(used);
    Py_DECREF(returned);
    return failed;
}

/* The slot of `keys[i]` in `slots` into `*slot` (a new reference, NULL when absent): 0, or -1
 * with an error (a failed lookup, or something else than a slot list). The key is held while
 * the lookup may run Python code (its __eq__). */
static int
slot_at(PyObject *slots, PyObject *keys, Py_ssize_t i, PyObject **slot)
{
    PyObject *key = Py_NewRef(PySequence_Fast_GET_ITEM(keys, i));
    *slot = Py_XNewRef(PyDict_GetItemWithError(slots, key));
    Py_DECREF(key);
    if (!*slot)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyList_CheckExact(*slot) || PyList_GET_SIZE(*slot) != SLOT_FIELDS) {
        Py_CLEAR(*slot);
        PyErr_SetString(PyExc_RuntimeError, "a working set slot is not a slot list");
        return -1;
    }
    return 0;
}

/* WorkingSet.touch_present(keys, now): a list or tuple of keys, a forward clock and a
 * LevelRanking (the assembler's call, every tick for its whole served set) here; any other
 * call by the reference. The slots are changed and used one after the other, which leaves
 * the ranking as the reference's use of all of them in the same order does. Everything read
 * is held while Python code may run (a key's __eq__ in a dict lookup). */
static PyObject *
core_touch_present(Core *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs != 2 || kwnames || !self->slots || !PyDict_CheckExact(self->slots)
        || !self->ranking || Py_TYPE(self->ranking) != (PyTypeObject *)level_ranking_type
        || !self->seq || !PyLong_CheckExact(self->seq)
        || !(PyList_CheckExact(args[0]) || PyTuple_CheckExact(args[0])))
        goto reference;
    int overflow;
    long long seq = PyLong_AsLongLongAndOverflow(self->seq, &overflow);
    if (seq == -1 && PyErr_Occurred())
        return NULL;
    if (overflow || seq > LLONG_MAX / 2)
        goto reference;
    PyObject *effective = observe_forward(self, args[1]);
    if (!effective) {
        if (PyErr_Occurred())
            return NULL;
        goto reference;
    }
    fast_touches++;
    PyObject *keys = Py_NewRef(args[0]), *slots = Py_NewRef(self->slots);
    PyObject *ranking = Py_NewRef(self->ranking);
    int failed = 0;
    /* A list may change under us: measured and indexed each time, as its iterator does. */
    for (Py_ssize_t i = 0; !failed && i < PySequence_Fast_GET_SIZE(keys); i++) {
        PyObject *slot;
        if ((failed = slot_at(slots, keys, i, &slot)) < 0 || !slot)
            continue;
        int out = PyObject_IsTrue(PyList_GET_ITEM(slot, OUT)), earlier = 0, exempt = 0;
        if (out == 0)
            earlier = PyObject_RichCompareBool(PyList_GET_ITEM(slot, LAST_USED), effective, Py_LT);
        if (out < 0 || earlier < 0) {
            failed = -1;
        } else if (!out && earlier) {
            set_slot(slot, LAST_USED, effective);
            set_slot(slot, ITEM, Py_None);
            exempt = PyObject_IsTrue(PyList_GET_ITEM(slot, EXEMPT));
            if (exempt < 0) {
                failed = -1;
            } else if (!exempt) {
                PyObject *number = PyLong_FromLongLong(seq + 1);
                if (!number || PyList_SetItem(slot, SEQ, number) < 0) {
                    failed = -1;
                } else {
                    seq++;   /* the slot has it: the counter moves on whatever follows */
                    failed = level_use(ranking, slot);
                }
            }
        }
        Py_DECREF(slot);
    }
    Py_DECREF(effective);
    Py_DECREF(keys);
    Py_DECREF(slots);
    Py_DECREF(ranking);
    /* The uses before an error stand, as in the reference. */
    PyObject *number = PyLong_FromLongLong(seq);
    if (!number)
        return NULL;
    Py_XSETREF(self->seq, number);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
reference:
    return call_target(reference_touch, &reference_touches, (PyObject *)self, args, nargs,
                       kwnames);
}

/* WorkingSet.items_of(keys): a list or tuple of keys here, any other call by the reference.
 * A present slot's Item is made from its fields (as the reference's tuple.__new__ of
 * slot[:SEQ]) when a put or touch dropped it, and kept in the slot. Everything read is held
 * while Python code may run (a key's __eq__ in a dict lookup). */
static PyObject *
core_items_of(Core *self, PyObject *keys)
{
    if (!self->slots || !PyDict_CheckExact(self->slots) || !item_type
        || !(PyList_CheckExact(keys) || PyTuple_CheckExact(keys))) {
        PyObject *args[1] = {keys};
        return call_target(reference_items_of, &reference_items_ofs, (PyObject *)self, args, 1,
                           NULL);
    }
    fast_items_of++;
    PyObject *result = PyList_New(0);
    if (!result)
        return NULL;
    keys = Py_NewRef(keys);
    PyObject *slots = Py_NewRef(self->slots);
    int failed = 0;
    /* A list may change under us: measured and indexed each time, as its iterator does. */
    for (Py_ssize_t i = 0; !failed && i < PySequence_Fast_GET_SIZE(keys); i++) {
        PyObject *slot, *item = NULL;
        int out = 1;
        if ((failed = slot_at(slots, keys, i, &slot)) < 0
            || (slot && (out = PyObject_IsTrue(PyList_GET_ITEM(slot, OUT))) < 0)) {
            failed = -1;
        } else if (!out) {
            item = Py_NewRef(PyList_GET_ITEM(slot, ITEM));
            if (item == Py_None) {
                Py_SETREF(item, ((PyTypeObject *)item_type)->tp_alloc((PyTypeObject *)item_type,
                                                                      SEQ));
                if (item) {
                    for (Py_ssize_t f = 0; f < SEQ; f++)
                        PyTuple_SET_ITEM(item, f, Py_NewRef(PyList_GET_ITEM(slot, f)));
                    failed = set_slot(slot, ITEM, item);
                } else {
                    failed = -1;
                }
            }
        }
        if (!failed)
            failed = PyList_Append(result, item ? item : Py_None);
        Py_XDECREF(item);
        Py_XDECREF(slot);
    }
    Py_DECREF(keys);
    Py_DECREF(slots);
    if (failed)
        Py_CLEAR(result);
    return result;
}

static int
core_traverse(Core *self, visitproc visit, void *arg)
{
    Py_VISIT(self->slots); Py_VISIT(self->ranking); Py_VISIT(self->time);
    Py_VISIT(self->exempt_prefixes); Py_VISIT(self->removed_numbers); Py_VISIT(self->returning);
    Py_VISIT(self->readmissions); Py_VISIT(self->log); Py_VISIT(self->capacity);
    Py_VISIT(self->size_budget); Py_VISIT(self->tick); Py_VISIT(self->log_limit);
    Py_VISIT(self->seq);
    return 0;
}

static int
core_clear(Core *self)
{
    Py_CLEAR(self->slots); Py_CLEAR(self->ranking); Py_CLEAR(self->time);
    Py_CLEAR(self->exempt_prefixes); Py_CLEAR(self->removed_numbers); Py_CLEAR(self->returning);
    Py_CLEAR(self->readmissions); Py_CLEAR(self->log); Py_CLEAR(self->capacity);
    Py_CLEAR(self->size_budget); Py_CLEAR(self->tick); Py_CLEAR(self->log_limit);
    Py_CLEAR(self->seq);
    return 0;
}

static void
core_dealloc(Core *self)
{
    PyObject_GC_UnTrack(self);
    core_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define OBJECT_MEMBER(name, field) {name, T_OBJECT_EX, offsetof(Core, field), 0, NULL}
#define COUNT_MEMBER(name, field) {name, T_PYSSIZET, offsetof(Core, field), 0, NULL}

static PyMemberDef core_members[] = {
    OBJECT_MEMBER("_slots", slots), OBJECT_MEMBER("_ranking", ranking),
    OBJECT_MEMBER("_time", time), OBJECT_MEMBER("_exempt_prefixes", exempt_prefixes),
    OBJECT_MEMBER("_removed_numbers", removed_numbers), OBJECT_MEMBER("_returning", returning),
    OBJECT_MEMBER("_readmissions", readmissions), OBJECT_MEMBER("_log", log),
    OBJECT_MEMBER("_capacity", capacity), OBJECT_MEMBER("_size_budget", size_budget),
    OBJECT_MEMBER("_tick", tick), OBJECT_MEMBER("_log_limit", log_limit),
    OBJECT_MEMBER("_seq", seq), COUNT_MEMBER("_present", present),
    COUNT_MEMBER("_exempt_count", exempt_count), COUNT_MEMBER("_evictions_total", evictions_total),
    COUNT_MEMBER("_size_bytes", size_bytes), COUNT_MEMBER("_exempt_bytes", exempt_bytes),
    {NULL}
};

static PyMethodDef core_methods[] = {
    {"put", (PyCFunction)(void (*)(void))core_put, METH_FASTCALL | METH_KEYWORDS,
     "Insert or replace an item, then evict to fit (see PyWorkingSet.put)."},
    {"touch_present", (PyCFunction)(void (*)(void))core_touch_present,
     METH_FASTCALL | METH_KEYWORDS,
     "Touch each present key not yet used now (see PyWorkingSet.touch_present)."},
    {"items_of", (PyCFunction)core_items_of, METH_O,
     "Return the item of each key, None where it is not present (see PyWorkingSet.items_of)."},
    {NULL}
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "working_memory.core._evict.WorkingSetCore",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The fields of a WorkingSet and its put in C.",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_traverse = (traverseproc)core_traverse,
    .tp_clear = (inquiry)core_clear,
    .tp_members = core_members,
    .tp_methods = core_methods,
};

/* The offset of a __slots__ field of a Python class; -1 with an error set. */
static Py_ssize_t
slot_offset(PyObject *cls, const char *name)
{
    PyObject *descriptor = PyObject_GetAttrString(cls, name);
    if (!descriptor)
        return -1;
    Py_ssize_t offset = -1;
    if (Py_TYPE(descriptor) == &PyMemberDescr_Type
        && ((PyMemberDescrObject *)descriptor)->d_member->type == T_OBJECT_EX)
        offset = ((PyMemberDescrObject *)descriptor)->d_member->offset;
    else
        PyErr_Format(PyExc_TypeError, "%R.%s is not a __slots__ field", cls, name);
    Py_DECREF(descriptor);
    return offset;
}

static PyObject *
configure(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"reference_put", "source_type", "source_default", "record_type",
                            "json_size", "encode_ascii", "capacity_reason", "level_ranking",
                            "level", "timebase", "reference_touch", "frozen_type",
                            "reference_items_of", "item_type", NULL};
    PyObject *values[14];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOOOOOOOOO", names, &values[0],
                                     &values[1], &values[2], &values[3], &values[4], &values[5],
                                     &values[6], &values[7], &values[8], &values[9], &values[10],
                                     &values[11], &values[12], &values[13]))
        return NULL;
    for (int i = 7; i < 14; i++) {
        /* 10 and 12: reference_touch and reference_items_of, functions */
        if (i != 10 && i != 12 && !PyType_Check(values[i]))
            return PyErr_Format(PyExc_TypeError, "%s must be a class", names[i]);
    }
    if (!PyType_Check(values[1]) || !PyType_Check(values[3])
        || !PyType_IsSubtype((PyTypeObject *)values[3], &PyTuple_Type)
        || !PyType_IsSubtype((PyTypeObject *)values[13], &PyTuple_Type))
        return PyErr_Format(PyExc_TypeError,
                            "source_type, record_type and item_type (tuples) are classes");
    if ((off_last_ros = slot_offset(values[9], "_last_ros")) < 0
        || (off_offset = slot_offset(values[9], "_offset")) < 0
        || (off_last_effective = slot_offset(values[9], "_last_effective")) < 0
        || (off_levels = slot_offset(values[7], "_levels")) < 0
        || (off_order = slot_offset(values[7], "_order")) < 0
        || (off_used = slot_offset(values[8], "used")) < 0
        || (off_returned = slot_offset(values[8], "returned")) < 0
        || (off_ordered = slot_offset(values[8], "ordered")) < 0
        || (off_json_text = slot_offset(values[11], "json_text")) < 0)
        return NULL;
    PyObject **targets[14] = {&reference_put, &source_type, &source_default, &record_type,
                              &json_size_py, &encode_ascii, &capacity_reason, &level_ranking_type,
                              &level_type, &timebase_type, &reference_touch, &frozen_type,
                              &reference_items_of, &item_type};
    for (int i = 0; i < 14; i++)
        Py_XSETREF(*targets[i], Py_NewRef(values[i]));
    Py_RETURN_NONE;
}

static PyObject *
counts(PyObject *module, PyObject *unused)
{
    return Py_BuildValue("{sKsKsKsKsKsK}", "fast", fast_puts, "reference", reference_puts,
                         "fast_touches", fast_touches, "reference_touches", reference_touches,
                         "fast_items_of", fast_items_of, "reference_items_of",
                         reference_items_ofs);
}

/* changed_positions(old, new, same, equal): the positions i where old[i] and new[i] (tuples,
 * two sequences of one length) differ: a field in `same` not the very object, or one in
 * `equal` not ==. The per-item compare of a pack's kept parts (core/frames.py), in C. */
static PyObject *
changed_positions(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "changed_positions(old, new, same, equal)");
        return NULL;
    }
    PyObject *old = PySequence_Fast(args[0], "old: must be a sequence");
    PyObject *new = old ? PySequence_Fast(args[1], "new: must be a sequence") : NULL;
    PyObject *same = new ? PySequence_Fast(args[2], "same: must be a sequence") : NULL;
    PyObject *equal = same ? PySequence_Fast(args[3], "equal: must be a sequence") : NULL;
    PyObject *result = NULL;
    if (!equal)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(old), n_same = PySequence_Fast_GET_SIZE(same);
    Py_ssize_t n_equal = PySequence_Fast_GET_SIZE(equal);
    if (PySequence_Fast_GET_SIZE(new) != n) {
        PyErr_SetString(PyExc_ValueError, "old and new: must be of one length");
        goto done;
    }
    Py_ssize_t fields[16];
    if (n_same + n_equal > 16) {
        PyErr_SetString(PyExc_ValueError, "same and equal: at most 16 fields");
        goto done;
    }
    for (Py_ssize_t f = 0; f < n_same + n_equal; f++) {
        PyObject *index = f < n_same ? PySequence_Fast_GET_ITEM(same, f)
                                     : PySequence_Fast_GET_ITEM(equal, f - n_same);
        if ((fields[f] = PyLong_AsSsize_t(index)) < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "same and equal: field indices >= 0");
            goto done;
        }
    }
    if (!(result = PyList_New(0)))
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PySequence_Fast_GET_ITEM(old, i), *b = PySequence_Fast_GET_ITEM(new, i);
        if (!PyTuple_Check(a) || !PyTuple_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "old and new: must hold tuples");
            Py_CLEAR(result);
            goto done;
        }
        int moved = 0;
        for (Py_ssize_t f = 0; f < n_same + n_equal && !moved; f++) {
            if (fields[f] >= PyTuple_GET_SIZE(a) || fields[f] >= PyTuple_GET_SIZE(b)) {
                PyErr_SetString(PyExc_IndexError, "a field index is past an item's end");
                Py_CLEAR(result);
                goto done;
            }
            PyObject *x = PyTuple_GET_ITEM(a, fields[f]), *y = PyTuple_GET_ITEM(b, fields[f]);
            if (f < n_same) {
                moved = x != y;
            } else if (x != y) {
                int same_value = PyObject_RichCompareBool(x, y, Py_EQ);
                if (same_value < 0) {
                    Py_CLEAR(result);
                    goto done;
                }
                moved = !same_value;
            }
        }
        if (moved) {
            PyObject *position = PyLong_FromSsize_t(i);
            if (!position || PyList_Append(result, position) < 0) {
                Py_XDECREF(position);
                Py_CLEAR(result);
                goto done;
            }
            Py_DECREF(position);
        }
    }
done:
    Py_XDECREF(old);
    Py_XDECREF(new);
    Py_XDECREF(same);
    Py_XDECREF(equal);
    return result;
}

static PyMethodDef module_methods[] = {
    {"changed_positions", (PyCFunction)(void (*)(void))changed_positions, METH_FASTCALL,
     "Return the positions where two equally long sequences of tuples differ (see frames)."},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "Give put the reference put, the classes and helpers of eviction.py it works with."},
    {"counts", counts, METH_NOARGS,
     "Return {'fast': puts done here, 'reference': puts passed to the reference} so far."},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "working_memory.core._evict",
    "The WorkingSet's put/evict hot path in C (see core/eviction.py).", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__evict(void)
{
    struct { PyObject **target; const char *text; } strings[] = {
        {&s_value, "value"}, {&s_importance, "importance"}, {&s_now, "now"}, {&s_source, "source"},
        {&s_stamp, "stamp"}, {&s_stale, "stale"}, {&s_exempt, "exempt"}, {&s_size, "size"},
        {&s_defer, "defer_eviction"}, {&s_settle, "_settle"}, {&s_last_eviction, "last_eviction"},
        {&s_order_level, "_order_level"}, {&s_unorder_lowest, "_unorder_lowest"},
        {&s_pop_lowest, "pop_lowest"}, {&s_add, "add"}, {&s_discard, "discard"},
        {&s_popitem, "popitem"}, {&s_move_to_end, "move_to_end"},
    };
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        if (!(*strings[i].target = PyUnicode_InternFromString(strings[i].text)))
            return NULL;
    }
    if (!(empty_tuple = PyTuple_New(0)) || !(one = PyLong_FromLong(1))
        || PyType_Ready(&CoreType) < 0)
        return NULL;
    PyObject *collections = PyImport_ImportModule("collections");
    if (!collections)
        return NULL;
    odict_type = (PyTypeObject *)PyObject_GetAttrString(collections, "OrderedDict");
    Py_DECREF(collections);
    if (!odict_type || !(odict_popitem = PyObject_GetAttrString((PyObject *)odict_type,
                                                                "popitem"))
        || !(odict_move_to_end = PyObject_GetAttrString((PyObject *)odict_type, "move_to_end")))
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (!module)
        return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(module, "WorkingSetCore", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
