/* `build_row` of mcpwall.ledger._event for the usual event, in C.
 *
 * A ledger row is ~40 values made from an Event: texts, JSON of the
 * arguments, response, notes and rule lists, previews, two SHA-256 body ids.
 * In Python that is ~120,000 instructions a row, most of it the interpreter
 * (bench/ledger_write.py; docs/PERFORMANCE.md); here the same steps call
 * orjson, OpenSSL and the Python helpers of _event.py directly.
 *
 * It builds exactly what the Python function builds (tests/ledger/test_rows.py
 * compares the two), and only for events it can build that way: anything
 * unusual (arguments to redact or withhold, DLP findings, texts that need
 * cleaning, types other than the gateway's) returns None, and the caller
 * builds that row in Python. Any exception inside does the same, so the
 * Python function is always the reference.
 *
 *     configure(helpers: dict)        # once, from _event.py
 *     build_row(event, bodies, max_body_bytes, preview_chars, replica, names) -> BuiltRow | None
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* from configure() */
static PyObject *orjson_dumps, *py_dumps, *dumps_default, *dumps_option, *built_row_type, *py_preview, *py_clean,
    *py_rules, *note_skip;
static PyObject *kwnames; /* ("default", "option") */
static EVP_MD *sha256;
static EVP_MD_CTX *sha256_ctx; /* reused under the GIL: a new context per digest costs more than the digest */
static PyTypeObject *body_names_type; /* BodyNames, whose `name` is done here for that exact type */
static PyObject *a_stored, *a_batch, *a_prefix;

/* Random bytes for decision ids, read from the kernel 4 KiB at a time (a getrandom call per row
 * cost more than the rest of the id). Emptied in a forked child, so parent and child never share. */
static unsigned char pool[4096];
static size_t pool_left;

static void pool_forget(void) {
    pool_left = 0;
}

static int random_bytes(unsigned char *out, size_t n) {
    if (pool_left < n) {
        size_t got = 0;
        while (got < sizeof pool) {
            ssize_t r = getrandom(pool + got, sizeof pool - got, 0);
            if (r < 0) return -1;
            got += (size_t)r;
        }
        pool_left = sizeof pool;
    }
    memcpy(out, pool + sizeof pool - pool_left, n);
    memset(pool + sizeof pool - pool_left, 0, n);
    pool_left -= n;
    return 0;
}

/* interned names */
static PyObject *a_method, *a_decision, *a_outcome, *a_ts, *a_session_id, *a_client, *a_client_version, *a_agent_id,
    *a_process_name, *a_peer, *a_server_name, *a_tool_name, *a_request_id, *a_mode, *a_enforced_action,
    *a_policy_revision, *a_rule_ids, *a_reasons, *a_redacted_keys, *a_dlp, *a_notes, *a_params, *a_response,
    *a_duration_ms, *a_upstream_ms, *a_error_message, *a_bytes_in, *a_bytes_out, *a_withhold_arguments,
    *a_decision_id, *a_name_method, *a_round;
static PyObject *k_arguments, *k_name, *k_error, *k_code, *k_message, *k_result, *k_content, *k_isError, *k_type,
    *k_text, *k_method, *k_params;
static PyObject *t_tool_calls, *t_protocol_events, *j_empty_list, *j_no_dlp, *j_empty_obj, *s_ellipsis,
    *three;

/* Marks "build this one in Python": a NULL return with no exception set. */
#define FALLBACK NULL

static int intern(PyObject **slot, const char *text) {
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

static int atomic(PyObject *o) {
    return o == Py_None || PyUnicode_CheckExact(o) || PyLong_CheckExact(o) || PyBytes_CheckExact(o) ||
           PyFloat_CheckExact(o);
}

/* Untrack a list and its tuples when they hold only texts, numbers and bytes (they can never be part
 * of a reference cycle); 0 if something else is in there (then it all stays tracked). */
static int untrack_flat(PyObject *list) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (atomic(item)) continue;
        if (!PyTuple_CheckExact(item)) return 0;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(item); k++) {
            if (!atomic(PyTuple_GET_ITEM(item, k))) return 0;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (PyTuple_CheckExact(item) && PyObject_GC_IsTracked(item)) PyObject_GC_UnTrack(item);
    }
    PyObject_GC_UnTrack(list);
    return 1;
}

/* orjson.dumps(obj, default=..., option=...), else _event.dumps (its fallback for what orjson refuses). */
static PyObject *json(PyObject *obj) {
    PyObject *args[3] = {obj, dumps_default, dumps_option};
    PyObject *out = PyObject_Vectorcall(orjson_dumps, args, 1, kwnames);
    if (out == NULL) {
        PyErr_Clear();
        out = PyObject_CallOneArg(py_dumps, obj);
    }
    return out;
}

/* The JSON of a str, built here when it needs no escaping (printable ASCII but " and \\), as orjson
 * writes it; else orjson's. */
static PyObject *json_str(PyObject *s) {
    if (PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s)) {
        const char *p = (const char *)PyUnicode_DATA(s);
        Py_ssize_t n = PyUnicode_GET_LENGTH(s);
        int simple = 1;
        for (Py_ssize_t i = 0; i < n && simple; i++) simple = p[i] >= 0x20 && p[i] != '"' && p[i] != '\\' && p[i] != 0x7f;
        if (simple) {
            PyObject *out = PyBytes_FromStringAndSize(NULL, n + 2);
            if (out == NULL) return NULL;
            char *q = PyBytes_AS_STRING(out);
            q[0] = '"';
            memcpy(q + 1, p, (size_t)n);
            q[n + 1] = '"';
            return out;
        }
    }
    return json(s);
}

static PyObject *json_text(PyObject *obj) {
    PyObject *raw = json(obj);
    if (raw == NULL) return NULL;
    PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw), "strict");
    Py_DECREF(raw);
    return text;
}

/* An exact str that needs no cleaning: ASCII, no NUL (the Python side's test for its texts). */
static int plain(PyObject *s) {
    return PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s) &&
           memchr(PyUnicode_DATA(s), 0, (size_t)PyUnicode_GET_LENGTH(s)) == NULL;
}

/* _clip: the text, or its first `limit` characters and an ellipsis. */
static PyObject *clip(PyObject *text, Py_ssize_t limit) {
    if (PyUnicode_GET_LENGTH(text) <= limit) return Py_NewRef(text);
    PyObject *head = PyUnicode_Substring(text, 0, limit);
    if (head == NULL) return NULL;
    PyObject *out = PyUnicode_Concat(head, s_ellipsis);
    Py_DECREF(head);
    return out;
}

/* The __slots__ of the exact classes of _event.py this module reads and fills (Event, BodyNames,
 * BuiltRow), by offset: PyObject_GetAttr first looks the name up along the type's MRO, and ~45
 * attributes a row made that ~15% of the writer thread's time (perf). An offset is the class's
 * member descriptor's, and is used only for an object of exactly that class while the class is
 * unchanged (its version tag: assigning to a class attribute changes it); anything else, and an
 * unset slot, goes through GetAttr/GenericSetAttr. */
#define SLOTS 64

typedef struct {
    PyTypeObject *type; /* NULL: not in use */
    unsigned int version;
    PyObject *name[SLOTS]; /* interned; open addressing by the name's address */
    Py_ssize_t offset[SLOTS];
} SlotMap;

static SlotMap event_slots, names_slots, row_slots;
static PyObject *event_type;

static int version_valid(PyTypeObject *type) {
#ifdef Py_TPFLAGS_VALID_VERSION_TAG
    return PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG);
#else
    return type->tp_version_tag != 0;
#endif
}

/* Map `type`'s __slots__ (a slotted dataclass's fields); a class it cannot map stays unmapped. */
static int slots_init(SlotMap *map, PyTypeObject *type) {
    for (int i = 0; i < SLOTS; i++) Py_CLEAR(map->name[i]);
    map->type = NULL;
    PyObject *names = PyObject_GetAttrString((PyObject *)type, "__slots__");
    if (names == NULL || !PyTuple_Check(names) || PyTuple_GET_SIZE(names) > SLOTS / 2) {
        Py_XDECREF(names);
        PyErr_Clear();
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_CheckExact(name)) continue;
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        PyObject *descr = _PyType_Lookup(type, name); /* borrowed; also gives the type its version tag */
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
            Py_DECREF(name);
            continue;
        }
        size_t h = ((uintptr_t)name >> 4) & (SLOTS - 1);
        while (map->name[h] != NULL) h = (h + 1) & (SLOTS - 1);
        map->name[h] = name;
        map->offset[h] = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    Py_DECREF(names);
    if (version_valid(type)) {
        map->type = type;
        map->version = type->tp_version_tag;
    }
    return 0;
}

/* Where `obj`'s slot `name` is, or NULL (not of the mapped class, the class changed, no such slot). */
static PyObject **slot_at(const SlotMap *map, PyObject *obj, PyObject *name) {
    PyTypeObject *type = Py_TYPE(obj);
    if (type != map->type || !version_valid(type) || type->tp_version_tag != map->version) return NULL;
    size_t h = ((uintptr_t)name >> 4) & (SLOTS - 1);
    for (int i = 0; i < SLOTS && map->name[h] != NULL; i++, h = (h + 1) & (SLOTS - 1)) {
        if (map->name[h] == name) return (PyObject **)((char *)obj + map->offset[h]);
    }
    return NULL;
}

/* An attribute's value: new reference, NULL on error. */
static PyObject *attr(PyObject *obj, PyObject *name) {
    PyObject **slot = slot_at(&event_slots, obj, name);
    if (slot == NULL) slot = slot_at(&names_slots, obj, name);
    if (slot != NULL && *slot != NULL) return Py_NewRef(*slot);
    return PyObject_GetAttr(obj, name);
}

/* Set a new object's attribute (a BuiltRow's slot, still empty, directly). */
static int set_attr(PyObject *obj, PyObject *name, PyObject *value) {
    PyObject **slot = slot_at(&row_slots, obj, name);
    if (slot != NULL && *slot == NULL) {
        *slot = Py_NewRef(value);
        return 0;
    }
    return PyObject_GenericSetAttr(obj, name, value);
}

static int hex_digest(const char *data, Py_ssize_t n, char out[65]) {
    unsigned char digest[32];
    unsigned int len = 0;
    if (!EVP_DigestInit_ex2(sha256_ctx, sha256, NULL) || !EVP_DigestUpdate(sha256_ctx, data, (size_t)n) ||
        !EVP_DigestFinal_ex(sha256_ctx, digest, &len) || len != 32)
        return -1;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[64] = '\0';
    return 0;
}

/* BodyNames.name(digest) -> (id, whether the body still has to be written), for the exact type. */
static PyObject *name_body(PyObject *names, PyObject *digest) {
    if (Py_TYPE(names) != body_names_type) return PyObject_CallMethodOneArg(names, a_name_method, digest);
    PyObject *out = NULL, *stored = attr(names, a_stored), *batch = stored ? attr(names, a_batch) : NULL;
    if (batch == NULL || !PyDict_Check(stored) || !PyDict_Check(batch)) {
        Py_XDECREF(stored);
        Py_XDECREF(batch);
        return PyErr_Occurred() ? NULL : PyObject_CallMethodOneArg(names, a_name_method, digest);
    }
    PyObject *found = PyDict_GetItemWithError(stored, digest);
    if (found != NULL) {
        if (PyDict_SetItem(batch, digest, found) == 0) out = PyTuple_Pack(2, found, Py_False);
    } else if (!PyErr_Occurred()) {
        found = PyDict_GetItemWithError(batch, digest);
        if (found != NULL) {
            out = PyTuple_Pack(2, found, Py_True);
        } else if (!PyErr_Occurred()) {
            PyObject *prefix = attr(names, a_prefix);
            PyObject *id = prefix ? PyUnicode_Concat(prefix, digest) : NULL;
            if (id != NULL && PyDict_SetItem(batch, digest, id) == 0) out = PyTuple_Pack(2, id, Py_True);
            Py_XDECREF(prefix);
            Py_XDECREF(id);
        }
    }
    Py_DECREF(stored);
    Py_DECREF(batch);
    return out;
}

/* _body: the body's id; the row to write joins `bodies` unless the writer already stored it. */
static PyObject *body(PyObject *content, Py_ssize_t limit, PyObject *names, PyObject *bodies) {
    char digest[65 + 65 + 1 + 24];
    const char *data = PyBytes_AS_STRING(content);
    Py_ssize_t size = PyBytes_GET_SIZE(content);
    if (hex_digest(data, size, digest) < 0) return NULL;
    int truncated = size > limit;
    PyObject *stored = NULL;
    if (truncated) {
        /* <sha256>.<sha256 of the stored part>.<size>: the id (MAC'd in its row) covers the size too */
        digest[64] = '.';
        if (hex_digest(data, limit, digest + 65) < 0) return NULL;
        snprintf(digest + 129, sizeof digest - 129, ".%zd", size);
        stored = PyBytes_FromStringAndSize(data, limit);
        if (stored == NULL) return NULL;
    } else {
        stored = Py_NewRef(content);
    }
    PyObject *digest_obj = PyUnicode_FromString(digest);
    PyObject *named = digest_obj ? name_body(names, digest_obj) : NULL;
    Py_XDECREF(digest_obj);
    PyObject *body_id = NULL;
    if (named != NULL && PyTuple_Check(named) && PyTuple_GET_SIZE(named) == 2) {
        body_id = Py_NewRef(PyTuple_GET_ITEM(named, 0));
        int is_new = PyObject_IsTrue(PyTuple_GET_ITEM(named, 1));
        PyObject *row = NULL;
        if (is_new < 0) {
            Py_CLEAR(body_id);
        } else if (is_new) {
            Py_ssize_t kept = truncated ? limit : size;
            row = Py_BuildValue("(OnnnO)", body_id, size, kept, (Py_ssize_t)truncated, stored);
            if (row == NULL || PyList_Append(bodies, row) < 0) Py_CLEAR(body_id);
            Py_XDECREF(row);
        }
    }
    Py_XDECREF(named);
    Py_DECREF(stored);
    return body_id;
}

/* dumps of a sequence of plain strs as text; FALLBACK if one is not. */
static PyObject *json_list(PyObject *values) {
    int truth = PyObject_IsTrue(values);
    if (truth <= 0) return truth < 0 ? NULL : Py_NewRef(j_empty_list);
    if (!PyTuple_CheckExact(values) && !PyList_CheckExact(values)) return FALLBACK;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(values);
    PyObject **items = PySequence_Fast_ITEMS(values);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_CheckExact(items[i]) || !PyUnicode_IS_ASCII(items[i])) return FALLBACK;
    }
    return json_text(values);
}

/* round(float(x), 3), or None. */
static PyObject *rounded(PyObject *x) {
    if (x == Py_None) return Py_NewRef(Py_None);
    PyObject *f = PyNumber_Float(x);
    if (f == NULL) return NULL;
    PyObject *out = PyObject_CallMethodOneArg(f, a_round, three);
    Py_DECREF(f);
    return out;
}

/* int(x or otherwise) for None and exact ints; FALLBACK otherwise. */
static PyObject *count(PyObject *x, Py_ssize_t otherwise) {
    if (x == Py_None) return PyLong_FromSsize_t(otherwise);
    if (!PyLong_CheckExact(x)) return FALLBACK;
    return PyObject_IsTrue(x) ? Py_NewRef(x) : PyLong_FromSsize_t(otherwise);
}

/* _response_preview's usual cases; the others go to the Python function. */
static PyObject *response_preview(PyObject *response, Py_ssize_t limit, PyObject *raw) {
    PyObject *err = PyDict_GetItemWithError(response, k_error);
    if (err == NULL && PyErr_Occurred()) return NULL;
    if (err != NULL && PyDict_Check(err)) {
        PyObject *message = PyDict_GetItemWithError(err, k_message);
        if (message != NULL && PyUnicode_CheckExact(message)) return clip(message, limit);
        if (PyErr_Occurred()) return NULL;
    } else if (err == NULL) {
        PyObject *result = PyDict_GetItemWithError(response, k_result);
        if (result == NULL && PyErr_Occurred()) return NULL;
        PyObject *content = result != NULL && PyDict_Check(result) ? PyDict_GetItemWithError(result, k_content) : NULL;
        if (content == NULL && PyErr_Occurred()) return NULL;
        if (content == NULL || !PyList_Check(content)) {
            PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw), "replace");
            if (text == NULL) return NULL;
            PyObject *out = clip(text, limit);
            Py_DECREF(text);
            return out;
        }
        PyObject *is_error = PyDict_GetItemWithError(result, k_isError);
        if (is_error == NULL && PyErr_Occurred()) return NULL;
        if (PyList_GET_SIZE(content) == 1 && (is_error == NULL || is_error == Py_False || is_error == Py_None)) {
            PyObject *item = PyList_GET_ITEM(content, 0);
            if (PyDict_Check(item)) {
                PyObject *type = PyDict_GetItemWithError(item, k_type);
                PyObject *text = type != NULL ? PyDict_GetItemWithError(item, k_text) : NULL;
                if (PyErr_Occurred()) return NULL;
                if (type != NULL && PyUnicode_CheckExact(type) && PyUnicode_Compare(type, k_text) == 0 &&
                    text != NULL && PyUnicode_Check(text))
                    return clip(text, limit);
            }
        }
    }
    PyObject *limit_obj = PyLong_FromSsize_t(limit);
    if (limit_obj == NULL) return NULL;
    PyObject *out = PyObject_CallFunctionObjArgs(py_preview, response, limit_obj, raw, NULL);
    Py_DECREF(limit_obj);
    return out;
}

/* _rule_rows: (idx, rule_id, action, layer, compliance JSON, owasp JSON) per rule id; FALLBACK for
 * anything but plain ids and RuleInfo-like infos with tuple or list lists. */
static PyObject *a_rules_attr, *a_action, *a_layer, *a_compliance, *a_owasp, *a_table_attr, *a_values_attr,
    *a_values_json_attr, *a_bodies_attr;

static PyObject *rule_list_json(PyObject *info, PyObject *name) {
    PyObject *items = PyObject_GetAttr(info, name);
    if (items == NULL) return NULL;
    PyObject *out = FALLBACK;
    if (PyTuple_CheckExact(items) || PyList_CheckExact(items)) {
        out = PySequence_Fast_GET_SIZE(items) == 0 ? Py_NewRef(j_empty_list) : json_text(items);
    }
    Py_DECREF(items);
    return out;
}

static PyObject *rule_rows(PyObject *event, PyObject *rule_ids) {
    if (!PyTuple_CheckExact(rule_ids) && !PyList_CheckExact(rule_ids)) return FALLBACK;
    PyObject *infos = attr(event, a_rules_attr);
    if (infos == NULL) return NULL;
    if (infos != Py_None && !PyDict_Check(infos)) {
        Py_DECREF(infos);
        return FALLBACK;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rule_ids);
    PyObject *out = PyList_New(n), *fallback_action = NULL;
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *rule_id = PySequence_Fast_GET_ITEM(rule_ids, i);
        PyObject *info = NULL, *row = NULL;
        if (!plain(rule_id)) goto bad;
        info = infos != Py_None ? PyDict_GetItemWithError(infos, rule_id) : NULL;
        if (info == NULL && PyErr_Occurred()) goto bad;
        if (info != NULL) {
            PyObject *action = attr(info, a_action), *layer = action ? attr(info, a_layer) : NULL;
            PyObject *compliance = layer ? rule_list_json(info, a_compliance) : NULL;
            PyObject *owasp = compliance ? rule_list_json(info, a_owasp) : NULL;
            if (owasp != NULL && PyUnicode_CheckExact(action) && PyUnicode_CheckExact(layer))
                row = Py_BuildValue("(nOOOOO)", i, rule_id, action, layer, compliance, owasp);
            Py_XDECREF(action);
            Py_XDECREF(layer);
            Py_XDECREF(compliance);
            Py_XDECREF(owasp);
        } else {
            /* RuleInfo(enforced_action or decision, "builtin" if "." in rule_id else "unknown") */
            if (fallback_action == NULL) {
                PyObject *enforced = attr(event, a_enforced_action);
                if (enforced == NULL) goto bad;
                int truth = PyObject_IsTrue(enforced);
                if (truth > 0) fallback_action = enforced;
                else {
                    Py_DECREF(enforced);
                    if (truth < 0 || (fallback_action = attr(event, a_decision)) == NULL) goto bad;
                }
                if (!PyUnicode_CheckExact(fallback_action)) goto bad;
            }
            int dotted = PyUnicode_FindChar(rule_id, '.', 0, PyUnicode_GET_LENGTH(rule_id), 1) >= 0;
            row = Py_BuildValue("(nOOsOO)", i, rule_id, fallback_action, dotted ? "builtin" : "unknown", j_empty_list,
                                j_empty_list);
        }
        if (row == NULL) goto bad;
        PyList_SET_ITEM(out, i, row);
        continue;
    bad:
        Py_CLEAR(out);
    }
    Py_DECREF(infos);
    Py_XDECREF(fallback_action);
    return out;
}

/* _request_id: None, str(int), or its JSON. */
static PyObject *request_id(PyObject *rid) {
    if (rid == Py_None) return Py_NewRef(Py_None);
    if (PyLong_CheckExact(rid)) return PyObject_Str(rid);
    return json_text(rid);
}

/* iso(): UTC ISO 8601 with microseconds; FALLBACK outside the usual range. */
static PyObject *iso(PyObject *ts_obj) {
    if (!PyFloat_CheckExact(ts_obj)) return FALLBACK;
    double ts = PyFloat_AS_DOUBLE(ts_obj);
    if (!(ts >= 0.0 && ts < 253402300800.0)) return FALLBACK; /* 1970 .. 9999 */
    long long whole = (long long)ts;
    int micro = (int)((ts - (double)whole) * 1000000.0);
    /* the formatted second is reused: rows come many per second (under the GIL) */
    static long long second = -1;
    static char text[40];
    static size_t text_n;
    if (whole != second) {
        time_t t = (time_t)whole;
        struct tm tm;
        if (gmtime_r(&t, &tm) == NULL) return FALLBACK;
        text_n = strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
        if (text_n == 0) return FALLBACK;
        second = whole;
    }
    char out[48];
    memcpy(out, text, text_n);
    out[text_n] = '.';
    for (int i = 6; i >= 1; i--, micro /= 10) out[text_n + i] = (char)('0' + micro % 10);
    out[text_n + 7] = 'Z';
    return PyUnicode_FromStringAndSize(out, (Py_ssize_t)text_n + 8);
}

#define TEXTS 17

static PyObject *build_row(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "build_row(event, bodies, max_body_bytes, preview_chars, replica, names)");
        return NULL;
    }
    if (orjson_dumps == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    PyObject *event = args[0], *replica = args[4], *names = args[5];
    int keep_bodies = PyObject_IsTrue(args[1]);
    Py_ssize_t max_body = PyLong_AsSsize_t(args[2]), preview_chars = PyLong_AsSsize_t(args[3]);
    if (keep_bodies < 0 || PyErr_Occurred()) return NULL;

    PyObject *out = NULL;
    PyObject *method = NULL, *decision_id = NULL, *ts = NULL, *params = NULL, *args_map = NULL, *response = NULL;
    PyObject *redacted = NULL, *withhold = NULL, *dlp = NULL, *notes = NULL, *arg_keys = NULL, *bodies = NULL;
    PyObject *args_json = NULL, *request_body = NULL, *request_body_id = NULL, *response_json = NULL;
    PyObject *response_body_id = NULL, *error_code = NULL, *notes_json = NULL, *values = NULL, *rules = NULL;
    PyObject *values_json = NULL, *rule_ids = NULL, *reasons = NULL, *owned_params = NULL;
    PyObject *texts[TEXTS] = {NULL};
    PyObject *v[12] = {NULL}; /* computed values, see the list below */

#define TRY(expr)                                                                                                      \
    do {                                                                                                               \
        if ((expr) == NULL) {                                                                                          \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)
#define GIVE_UP goto done

    TRY(method = attr(event, a_method));
    if (!PyUnicode_CheckExact(method)) GIVE_UP;
    TRY(withhold = attr(event, a_withhold_arguments));
    if (withhold != Py_False) GIVE_UP;
    TRY(redacted = attr(event, a_redacted_keys));
    TRY(dlp = attr(event, a_dlp));
    {
        int r = PyObject_IsTrue(redacted), d = PyObject_IsTrue(dlp);
        if (r != 0 || d != 0) GIVE_UP; /* redaction and DLP findings: the Python function */
    }
    TRY(decision_id = attr(event, a_decision_id));
    {
        int truth = PyObject_IsTrue(decision_id);
        if (truth < 0) GIVE_UP;
        if (truth) {
            if (!PyUnicode_CheckExact(decision_id)) GIVE_UP;
        } else {
            unsigned char raw[16];
            char hex[33];
            static const char digits[] = "0123456789abcdef";
            if (random_bytes(raw, sizeof raw) < 0) GIVE_UP;
            for (int i = 0; i < 16; i++) {
                hex[2 * i] = digits[raw[i] >> 4];
                hex[2 * i + 1] = digits[raw[i] & 15];
            }
            hex[32] = '\0';
            Py_DECREF(decision_id);
            TRY(decision_id = PyUnicode_FromString(hex));
        }
    }
    {
        PyObject *ts_obj;
        TRY(ts_obj = attr(event, a_ts));
        ts = iso(ts_obj);
        Py_DECREF(ts_obj);
        TRY(ts);
    }
    TRY(params = attr(event, a_params));
    if (params == Py_None) {
        Py_DECREF(params);
        TRY(params = owned_params = PyDict_New());
        Py_INCREF(owned_params);
    } else if (!PyDict_Check(params)) {
        GIVE_UP;
    }
    int in_arguments = PyUnicode_CompareWithASCIIString(method, "tools/call") == 0 ||
                       PyUnicode_CompareWithASCIIString(method, "prompts/get") == 0;
    if (in_arguments) {
        PyObject *raw = PyDict_GetItemWithError(params, k_arguments);
        if (raw == NULL && PyErr_Occurred()) GIVE_UP;
        if (raw != NULL && PyDict_Check(raw)) {
            args_map = Py_NewRef(raw);
        } else if (raw == NULL || raw == Py_None || !PyMapping_Check(raw)) {
            TRY(args_map = PyDict_New());
        } else {
            GIVE_UP; /* another kind of Mapping */
        }
    } else {
        args_map = Py_NewRef(params);
    }
    TRY(arg_keys = PyDict_Keys(args_map));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(arg_keys); i++) {
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(arg_keys, i))) GIVE_UP;
    }
    if (PyList_Sort(arg_keys) < 0) GIVE_UP;
    TRY(bodies = PyList_New(0));
    TRY(args_json = json(args_map));
    if (keep_bodies) {
        PyObject *in_params = PyDict_GetItemWithError(params, k_arguments);
        PyObject *name = PyDict_GetItemWithError(params, k_name);
        if (PyErr_Occurred()) GIVE_UP;
        if (in_params == args_map && PyDict_GET_SIZE(params) == 2 && name != NULL && PyUnicode_Check(name)) {
            PyObject *m = json_str(method), *n = m ? json_str(name) : NULL;
            if (n != NULL) {
                request_body = PyBytes_FromFormat("{\"method\":%s,\"params\":{\"name\":%s,\"arguments\":",
                                                  PyBytes_AS_STRING(m), PyBytes_AS_STRING(n));
                if (request_body != NULL) {
                    PyBytes_Concat(&request_body, args_json);
                    if (request_body != NULL) {
                        PyObject *tail = PyBytes_FromStringAndSize("}}", 2);
                        if (tail == NULL) Py_CLEAR(request_body);
                        else PyBytes_ConcatAndDel(&request_body, tail);
                    }
                }
            }
            Py_XDECREF(m);
            Py_XDECREF(n);
            TRY(request_body);
        } else {
            PyObject *whole = Py_BuildValue("{OOOO}", k_method, method, k_params, params);
            TRY(whole);
            request_body = json(whole);
            Py_DECREF(whole);
            TRY(request_body);
        }
        TRY(request_body_id = body(request_body, max_body, names, bodies));
    } else {
        request_body_id = Py_NewRef(Py_None);
    }
    TRY(response = attr(event, a_response));
    if (response == Py_None) {
        TRY(response_json = PyBytes_FromStringAndSize("", 0));
        response_body_id = Py_NewRef(Py_None);
        error_code = Py_NewRef(Py_None);
        v[5] = Py_NewRef(Py_None); /* response preview */
    } else {
        if (!PyDict_Check(response)) GIVE_UP;
        TRY(response_json = json(response));
        if (keep_bodies) TRY(response_body_id = body(response_json, max_body, names, bodies));
        else response_body_id = Py_NewRef(Py_None);
        PyObject *err = PyDict_GetItemWithError(response, k_error);
        if (err == NULL && PyErr_Occurred()) GIVE_UP;
        error_code = Py_NewRef(Py_None);
        if (err != NULL && !PyDict_Check(err) && PyMapping_Check(err)) GIVE_UP; /* another kind of Mapping */
        if (err != NULL && PyDict_Check(err)) {
            PyObject *code = PyDict_GetItemWithError(err, k_code);
            if (code == NULL && PyErr_Occurred()) GIVE_UP;
            if (code != NULL && PyLong_Check(code) && !PyBool_Check(code)) Py_SETREF(error_code, Py_NewRef(code));
        }
        PyObject *preview;
        TRY(preview = response_preview(response, preview_chars, response_json));
        if (preview == Py_None || plain(preview)) {
            v[5] = preview;
        } else {
            v[5] = PyObject_CallOneArg(py_clean, preview);
            Py_DECREF(preview);
            TRY(v[5]);
        }
    }
    {
        PyObject *raw_notes;
        TRY(raw_notes = attr(event, a_notes));
        int truth = PyObject_IsTrue(raw_notes);
        if (truth > 0 && !PyDict_Check(raw_notes)) truth = -1;
        if (truth > 0) {
            notes = PyDict_New();
            PyObject *key, *value;
            Py_ssize_t pos = 0;
            while (notes != NULL && PyDict_Next(raw_notes, &pos, &key, &value)) {
                int skip = PySet_Contains(note_skip, key);
                if (skip < 0 || (!skip && PyDict_SetItem(notes, key, value) < 0)) Py_CLEAR(notes);
            }
        }
        Py_DECREF(raw_notes);
        if (truth < 0) GIVE_UP;
        if (notes != NULL && PyDict_GET_SIZE(notes) > 0) TRY(notes_json = json_text(notes));
        else if (truth > 0 && notes == NULL) GIVE_UP;
        else notes_json = Py_NewRef(j_empty_obj);
    }
    {
        PyObject *const names_[TEXTS - 2] = {a_session_id, a_client, a_client_version, a_agent_id, a_process_name,
                                             a_peer, a_server_name, NULL, a_tool_name, a_request_id, a_decision,
                                             a_outcome, a_mode, a_enforced_action, a_policy_revision};
        for (int i = 0; i < TEXTS - 2; i++) {
            if (i == 7) {
                texts[i] = Py_NewRef(method);
            } else if (i == 9) {
                PyObject *rid;
                TRY(rid = attr(event, a_request_id));
                texts[i] = request_id(rid);
                Py_DECREF(rid);
                TRY(texts[i]);
            } else {
                TRY(texts[i] = attr(event, names_[i]));
            }
        }
        TRY(texts[15] = attr(event, a_error_message));
        texts[16] = Py_NewRef(replica);
        for (int i = 0; i < TEXTS; i++) {
            if (texts[i] != Py_None && !plain(texts[i])) GIVE_UP; /* to clean: the Python function */
        }
    }
    TRY(rule_ids = attr(event, a_rule_ids));
    TRY(reasons = attr(event, a_reasons));
    TRY(v[0] = json_list(rule_ids));
    TRY(v[1] = json_list(reasons));
    TRY(v[2] = json_list(redacted)); /* empty: redaction went to Python */
    v[3] = Py_NewRef(j_no_dlp);
    if (PyList_GET_SIZE(arg_keys) == 0) v[4] = Py_NewRef(j_empty_list);
    else TRY(v[4] = json_text(arg_keys));
    {
        PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(args_json), PyBytes_GET_SIZE(args_json), "strict");
        TRY(text);
        v[6] = clip(text, preview_chars);
        Py_DECREF(text);
        TRY(v[6]);
    }
    {
        PyObject *x;
        TRY(x = attr(event, a_duration_ms));
        v[7] = rounded(x);
        Py_DECREF(x);
        TRY(v[7]);
        TRY(x = attr(event, a_upstream_ms));
        v[8] = rounded(x);
        Py_DECREF(x);
        TRY(v[8]);
        TRY(x = attr(event, a_bytes_in));
        v[9] = count(x, 0);
        Py_DECREF(x);
        TRY(v[9]);
        TRY(x = attr(event, a_bytes_out));
        v[10] = count(x, PyBytes_GET_SIZE(response_json));
        Py_DECREF(x);
        TRY(v[10]);
    }
    /* decision_id, ts, texts[:15], rule_ids, reasons, redacted_keys, dlp, notes, arg_keys, args_size,
     * request_preview, response_preview, duration_ms, upstream_ms, error_code, error_message, bytes_in,
     * bytes_out, request_body_id, response_body_id, replica */
    TRY(values = PyList_New(2 + 15 + 18));
    {
        Py_ssize_t i = 0;
#define PUT(x) PyList_SET_ITEM(values, i++, Py_NewRef(x))
        PUT(decision_id);
        PUT(ts);
        for (int t = 0; t < 15; t++) PUT(texts[t]);
        PUT(v[0]);
        PUT(v[1]);
        PUT(v[2]);
        PUT(v[3]);
        PUT(notes_json);
        PUT(v[4]);
        PyList_SET_ITEM(values, i++, PyLong_FromSsize_t(PyBytes_GET_SIZE(args_json)));
        if (PyList_GET_ITEM(values, i - 1) == NULL) goto done;
        PUT(v[6]);
        PUT(v[5]);
        PUT(v[7]);
        PUT(v[8]);
        PUT(error_code);
        PUT(texts[15]);
        PUT(v[9]);
        PUT(v[10]);
        PUT(request_body_id);
        PUT(response_body_id);
        PUT(texts[16]);
#undef PUT
    }
    {
        int truth = PyObject_IsTrue(rule_ids);
        if (truth < 0) GIVE_UP;
        if (truth) {
            rules = rule_rows(event, rule_ids);
            if (rules == NULL && !PyErr_Occurred()) rules = PyObject_CallOneArg(py_rules, event);
            TRY(rules);
        }
        else TRY(rules = PyList_New(0));
    }
    TRY(values_json = json(values));
    {
        PyObject *table = PyUnicode_CompareWithASCIIString(method, "tools/call") == 0 ? t_tool_calls
                                                                                       : t_protocol_events;
        /* BuiltRow(table, values, decision_id, ts, values_json, bodies, rules), its slots set directly
         * rather than through the dataclass's __init__ (a Python frame) */
        PyTypeObject *type = (PyTypeObject *)built_row_type;
        out = type->tp_alloc(type, 0);
        PyObject *fields[7] = {a_table_attr, a_values_attr, a_decision_id, a_ts, a_values_json_attr, a_bodies_attr,
                               a_rules_attr};
        PyObject *given[7] = {table, values, decision_id, ts, values_json, bodies, rules};
        for (int f = 0; out != NULL && f < 7; f++) {
            if (set_attr(out, fields[f], given[f]) < 0) Py_CLEAR(out);
        }
        /* Out of the cyclic GC's sight: a row and its lists hold only texts, numbers, bytes and
         * tuples of those, so they can never be part of a cycle, and a writer keeps a few thousand
         * of them alive while it builds a batch; every collection meanwhile walked them all (with
         * the GC off the benchmark wrote 9% more rows a second). */
        if (out != NULL && untrack_flat(values) & untrack_flat(bodies) & untrack_flat(rules))
            PyObject_GC_UnTrack(out);
    }

done:
#undef TRY
#undef GIVE_UP
    Py_XDECREF(method);
    Py_XDECREF(decision_id);
    Py_XDECREF(ts);
    Py_XDECREF(params);
    Py_XDECREF(owned_params);
    Py_XDECREF(args_map);
    Py_XDECREF(response);
    Py_XDECREF(redacted);
    Py_XDECREF(withhold);
    Py_XDECREF(dlp);
    Py_XDECREF(notes);
    Py_XDECREF(arg_keys);
    Py_XDECREF(bodies);
    Py_XDECREF(args_json);
    Py_XDECREF(request_body);
    Py_XDECREF(request_body_id);
    Py_XDECREF(response_json);
    Py_XDECREF(response_body_id);
    Py_XDECREF(error_code);
    Py_XDECREF(notes_json);
    Py_XDECREF(values);
    Py_XDECREF(rules);
    Py_XDECREF(values_json);
    Py_XDECREF(rule_ids);
    Py_XDECREF(reasons);
    for (int i = 0; i < TEXTS; i++) Py_XDECREF(texts[i]);
    for (int i = 0; i < 12; i++) Py_XDECREF(v[i]);
    if (out != NULL) return out;
    /* Anything this function could not do, or that raised: the Python function decides. */
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyObject *configure(PyObject *module, PyObject *helpers) {
    (void)module;
    if (!PyDict_Check(helpers)) {
        PyErr_SetString(PyExc_TypeError, "configure(helpers: dict)");
        return NULL;
    }
    struct {
        const char *key;
        PyObject **slot;
    } wanted[] = {
        {"orjson_dumps", &orjson_dumps}, {"dumps", &py_dumps}, {"default", &dumps_default},
        {"option", &dumps_option}, {"BuiltRow", &built_row_type}, {"response_preview", &py_preview},
        {"clean", &py_clean}, {"rule_rows", &py_rules}, {"note_skip", &note_skip},
        {"BodyNames", (PyObject **)&body_names_type}, {"Event", &event_type},
    };
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        PyObject *value = PyDict_GetItemString(helpers, wanted[i].key);
        if (value == NULL) {
            PyErr_Format(PyExc_KeyError, "configure() needs %s", wanted[i].key);
            return NULL;
        }
        Py_XSETREF(*wanted[i].slot, Py_NewRef(value));
    }
    if (!PyType_Check(built_row_type) || ((PyTypeObject *)built_row_type)->tp_dictoffset != 0) {
        PyErr_SetString(PyExc_TypeError, "BuiltRow must be a class with __slots__");
        return NULL;
    }
    if (!PyType_Check((PyObject *)body_names_type)) {
        PyErr_SetString(PyExc_TypeError, "BodyNames must be a type");
        return NULL;
    }
    if (!PyAnySet_Check(note_skip)) {
        PyErr_SetString(PyExc_TypeError, "note_skip must be a frozenset");
        return NULL;
    }
    if (!PyType_Check(event_type)) {
        PyErr_SetString(PyExc_TypeError, "Event must be a type");
        return NULL;
    }
    slots_init(&event_slots, (PyTypeObject *)event_type);
    slots_init(&names_slots, body_names_type);
    slots_init(&row_slots, (PyTypeObject *)built_row_type);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "configure(helpers): the Python helpers and options of _event.py"},
    {"build_row", (PyCFunction)(void (*)(void))build_row, METH_FASTCALL,
     "build_row(event, bodies, max_body_bytes, preview_chars, replica, names) -> BuiltRow, or None: build it in "
     "Python"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_rows", "The ledger's build_row for the usual event, in C (see _rows.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__rows(void) {
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {
        {&a_method, "method"}, {&a_decision, "decision"}, {&a_outcome, "outcome"}, {&a_ts, "ts"},
        {&a_session_id, "session_id"}, {&a_client, "client"}, {&a_client_version, "client_version"},
        {&a_agent_id, "agent_id"}, {&a_process_name, "process_name"}, {&a_peer, "peer"},
        {&a_server_name, "server_name"}, {&a_tool_name, "tool_name"}, {&a_request_id, "request_id"},
        {&a_mode, "mode"}, {&a_enforced_action, "enforced_action"}, {&a_policy_revision, "policy_revision"},
        {&a_rule_ids, "rule_ids"}, {&a_reasons, "reasons"}, {&a_redacted_keys, "redacted_keys"}, {&a_dlp, "dlp"},
        {&a_notes, "notes"}, {&a_params, "params"}, {&a_response, "response"}, {&a_duration_ms, "duration_ms"},
        {&a_upstream_ms, "upstream_ms"}, {&a_error_message, "error_message"}, {&a_bytes_in, "bytes_in"},
        {&a_bytes_out, "bytes_out"}, {&a_withhold_arguments, "withhold_arguments"}, {&a_decision_id, "decision_id"},
        {&a_name_method, "name"}, {&a_round, "__round__"}, {&a_stored, "stored"}, {&a_batch, "batch"},
        {&a_prefix, "prefix"}, {&a_rules_attr, "rules"}, {&a_action, "action"}, {&a_layer, "layer"},
        {&a_compliance, "compliance"}, {&a_owasp, "owasp"}, {&a_table_attr, "table"}, {&a_values_attr, "values"},
        {&a_values_json_attr, "values_json"}, {&a_bodies_attr, "bodies"}, {&k_arguments, "arguments"}, {&k_name, "name"},
        {&k_error, "error"}, {&k_code, "code"}, {&k_message, "message"}, {&k_result, "result"},
        {&k_content, "content"}, {&k_isError, "isError"}, {&k_type, "type"}, {&k_text, "text"},
        {&k_method, "method"}, {&k_params, "params"}, {&t_tool_calls, "tool_calls"},
        {&t_protocol_events, "protocol_events"}, {&j_empty_list, "[]"}, {&j_empty_obj, "{}"},
        {&j_no_dlp, "{\"erased\":[],\"masked\":[]}"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (intern(names[i].slot, names[i].text) < 0) return NULL;
    }
    s_ellipsis = PyUnicode_FromString("\xe2\x80\xa6"); /* U+2026, as _clip adds */
    three = PyLong_FromLong(3);
    /* interned: orjson matches keyword names by identity first */
    PyObject *kw_default = PyUnicode_InternFromString("default"), *kw_option = PyUnicode_InternFromString("option");
    kwnames = kw_default && kw_option ? PyTuple_Pack(2, kw_default, kw_option) : NULL;
    Py_XDECREF(kw_default);
    Py_XDECREF(kw_option);
    sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    sha256_ctx = EVP_MD_CTX_new();
    if (s_ellipsis == NULL || three == NULL || kwnames == NULL) return NULL;
    if (pthread_atfork(NULL, NULL, pool_forget) != 0) {
        PyErr_SetString(PyExc_ImportError, "pthread_atfork failed");
        return NULL;
    }
    if (sha256 == NULL || sha256_ctx == NULL) {
        PyErr_SetString(PyExc_ImportError, "OpenSSL has no SHA-256");
        return NULL;
    }
    return PyModule_Create(&module_def);
}
