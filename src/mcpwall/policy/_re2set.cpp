// A thin binding of RE2::Set for the policy engine's fast path (see _match.PatternSet).
//
// google-re2's pybind11 binding costs about 3,900 instructions per text on top of
// RE2's own ~1,500 (bench/policy_eval.py under valgrind): the pybind dispatcher,
// a Py_buffer and its shape vectors, a bytes copy of the text, a result list, and
// the GIL released and taken back around a match of a few hundred nanoseconds.
// Here a match reads the str's UTF-8 in place and returns the owners' bit set
// directly. Built by tools/build_native.py when the RE2 headers are there
// (Debian libre2-dev); without it PatternSet uses google-re2 (same answers).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

struct MaskSet {
    PyObject_HEAD
    re2::RE2::Set* set;
    std::vector<int>* hits;     // reused: the GIL is held throughout a match
    std::vector<long>* owners;  // pattern -> owner
    bool small;                 // every owner < 64: the bit set fits in 64 bits
};

void MaskSet_dealloc(MaskSet* self) {
    delete self->set;
    delete self->hits;
    delete self->owners;
    Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

PyObject* MaskSet_mask(MaskSet* self, PyObject* text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "mask() takes a str");
        return nullptr;
    }
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(text, &size);  // ASCII: the str's own bytes
    PyObject* encoded = nullptr;
    if (data == nullptr) {  // lone surrogates: the same bytes as text.encode("utf-8", "surrogatepass")
        PyErr_Clear();
        encoded = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
        if (encoded == nullptr) {
            return nullptr;
        }
        data = PyBytes_AS_STRING(encoded);
        size = PyBytes_GET_SIZE(encoded);
    }
    std::vector<int>& hits = *self->hits;
    hits.clear();
    re2::RE2::Set::ErrorInfo error;
    error.kind = re2::RE2::Set::kNoError;
    bool matched = self->set->Match(re2::StringPiece(data, static_cast<size_t>(size)), &hits, &error);
    Py_XDECREF(encoded);
    if (!matched) {
        if (error.kind != re2::RE2::Set::kNoError) {
            // Out of memory in RE2's DFA: say so rather than answer "no rule matches".
            PyErr_Format(PyExc_RuntimeError, "RE2 set match failed (error %d)", static_cast<int>(error.kind));
            return nullptr;
        }
        return PyLong_FromLong(0);
    }
    const std::vector<long>& owners = *self->owners;
    if (self->small) {
        unsigned long long found = 0;
        for (int i : hits) {
            found |= 1ULL << owners[static_cast<size_t>(i)];
        }
        return PyLong_FromUnsignedLongLong(found);
    }
    // Owners past bit 63 (large policies): Python ints, a shift per pattern matched.
    PyObject* found = PyLong_FromLong(0);
    PyObject* one = PyLong_FromLong(1);
    for (int i : hits) {
        if (found == nullptr || one == nullptr) {
            break;
        }
        PyObject* shift = PyLong_FromLong(owners[static_cast<size_t>(i)]);
        PyObject* bit = shift != nullptr ? PyNumber_Lshift(one, shift) : nullptr;
        PyObject* next = bit != nullptr ? PyNumber_Or(found, bit) : nullptr;
        Py_XDECREF(shift);
        Py_XDECREF(bit);
        Py_DECREF(found);
        found = next;
    }
    Py_XDECREF(one);
    if (one == nullptr) {
        Py_XDECREF(found);
        return nullptr;
    }
    return found;
}

// Match(data) -> list[int]: the indices of the patterns `data` (bytes or str) matches, ascending:
// google-re2's Set.Match without releasing the GIL. Released, every match of a microsecond hands
// the GIL to whichever thread waits for it (the ledger's writer) and waits to get it back, which
// cost the gateway's DLP and poisoning scans tens of microseconds a text (bench/stage_costs.py).
PyObject* MaskSet_match(MaskSet* self, PyObject* data) {
    const char* bytes = nullptr;
    Py_ssize_t size = 0;
    PyObject* encoded = nullptr;
    if (PyBytes_Check(data)) {
        bytes = PyBytes_AS_STRING(data);
        size = PyBytes_GET_SIZE(data);
    } else if (PyUnicode_Check(data)) {
        bytes = PyUnicode_AsUTF8AndSize(data, &size);
        if (bytes == nullptr) {  // lone surrogates: as text.encode("utf-8", "surrogatepass")
            PyErr_Clear();
            encoded = PyUnicode_AsEncodedString(data, "utf-8", "surrogatepass");
            if (encoded == nullptr) {
                return nullptr;
            }
            bytes = PyBytes_AS_STRING(encoded);
            size = PyBytes_GET_SIZE(encoded);
        }
    } else {
        PyErr_SetString(PyExc_TypeError, "Match() takes bytes or str");
        return nullptr;
    }
    std::vector<int>& hits = *self->hits;
    hits.clear();
    re2::RE2::Set::ErrorInfo error;
    error.kind = re2::RE2::Set::kNoError;
    bool matched = self->set->Match(re2::StringPiece(bytes, static_cast<size_t>(size)), &hits, &error);
    Py_XDECREF(encoded);
    if (!matched && error.kind != re2::RE2::Set::kNoError) {
        PyErr_Format(PyExc_RuntimeError, "RE2 set match failed (error %d)", static_cast<int>(error.kind));
        return nullptr;
    }
    std::sort(hits.begin(), hits.end());
    PyObject* out = PyList_New(static_cast<Py_ssize_t>(hits.size()));
    if (out == nullptr) {
        return nullptr;
    }
    for (size_t i = 0; i < hits.size(); ++i) {
        PyObject* index = PyLong_FromLong(hits[i]);
        if (index == nullptr) {
            Py_DECREF(out);
            return nullptr;
        }
        PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), index);
    }
    return out;
}

PyMethodDef MaskSet_methods[] = {
    {"mask", reinterpret_cast<PyCFunction>(MaskSet_mask), METH_O,
     "mask(text) -> int: the owners of the patterns text matches, as a bit set (bit i: owner i)."},
    {"Match", reinterpret_cast<PyCFunction>(MaskSet_match), METH_O,
     "Match(data) -> list[int]: the indices of the patterns data (bytes or str) matches, ascending."},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject MaskSetType = {
    PyVarObject_HEAD_INIT(nullptr, 0)
    "mcpwall.policy._re2set.MaskSet",  // tp_name
    sizeof(MaskSet),                   // tp_basicsize
};

// compile_set(patterns, owners, max_mem) -> MaskSet; ValueError names a pattern RE2 refuses.
PyObject* compile_set(PyObject*, PyObject* args) {
    PyObject* patterns = nullptr;
    PyObject* owners = nullptr;
    long long max_mem = 0;
    if (!PyArg_ParseTuple(args, "O!O!L", &PyTuple_Type, &patterns, &PyTuple_Type, &owners, &max_mem)) {
        return nullptr;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(patterns);
    if (PyTuple_GET_SIZE(owners) != n) {
        PyErr_SetString(PyExc_ValueError, "patterns and owners differ in length");
        return nullptr;
    }
    re2::RE2::Options options;
    options.set_max_mem(max_mem);
    options.set_log_errors(false);
    auto* set = new re2::RE2::Set(options, re2::RE2::UNANCHORED);
    auto* owner_of = new std::vector<long>(static_cast<size_t>(n));
    bool small = true;
    for (Py_ssize_t i = 0; i < n; ++i) {
        Py_ssize_t size = 0;
        const char* source = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(patterns, i), &size);
        long owner = PyLong_AsLong(PyTuple_GET_ITEM(owners, i));
        if (source == nullptr || (owner == -1 && PyErr_Occurred()) || owner < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "owners must be non-negative ints");
            }
            delete set;
            delete owner_of;
            return nullptr;
        }
        std::string error;
        if (set->Add(re2::StringPiece(source, static_cast<size_t>(size)), &error) != static_cast<int>(i)) {
            PyErr_Format(PyExc_ValueError, "RE2 refuses %R: %s", PyTuple_GET_ITEM(patterns, i), error.c_str());
            delete set;
            delete owner_of;
            return nullptr;
        }
        (*owner_of)[static_cast<size_t>(i)] = owner;
        small = small && owner < 64;
    }
    MaskSet* self = nullptr;
    if (n == 0 || !set->Compile()) {
        PyErr_SetString(PyExc_ValueError, n == 0 ? "no patterns" : "RE2 could not compile the set (max_mem?)");
    } else {
        self = PyObject_New(MaskSet, &MaskSetType);
    }
    if (self == nullptr) {
        delete set;
        delete owner_of;
        return nullptr;
    }
    self->set = set;
    self->hits = new std::vector<int>();
    self->owners = owner_of;
    self->small = small;
    return reinterpret_cast<PyObject*>(self);
}

PyMethodDef module_methods[] = {
    {"compile_set", compile_set, METH_VARARGS,
     "compile_set(patterns: tuple[str, ...], owners: tuple[int, ...], max_mem: int) -> MaskSet"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "mcpwall.policy._re2set", "RE2::Set for the policy fast path.", -1, module_methods,
};

}  // namespace

PyMODINIT_FUNC PyInit__re2set(void) {
    MaskSetType.tp_dealloc = reinterpret_cast<destructor>(MaskSet_dealloc);
    MaskSetType.tp_flags = Py_TPFLAGS_DEFAULT;
    MaskSetType.tp_doc = "A compiled RE2::Set; mask(text) answers which owners' patterns match.";
    MaskSetType.tp_methods = MaskSet_methods;
    if (PyType_Ready(&MaskSetType) < 0) {
        return nullptr;
    }
    PyObject* module = PyModule_Create(&module_def);
    if (module == nullptr) {
        return nullptr;
    }
    Py_INCREF(&MaskSetType);
    if (PyModule_AddObject(module, "MaskSet", reinterpret_cast<PyObject*>(&MaskSetType)) < 0) {
        Py_DECREF(&MaskSetType);
        Py_DECREF(module);
        return nullptr;
    }
    return module;
}
