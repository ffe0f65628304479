/* The ledger writer's SQLite connection: a batch inserted and committed without the GIL.
 *
 * Python's sqlite3 binds every parameter under the GIL and releases it only
 * around each sqlite3_step: a batch of 5,000 ledger rows of 40 columns is
 * 200,000 bindings of interpreter time, and every step hands the GIL back and
 * forth (each time a thread takes it back from a busy one it may wait the
 * interpreter's 5 ms switch interval). Here the values are taken under the GIL
 * once (a C array of tagged values, each object kept alive by a reference),
 * and everything else runs without it: binds, steps, the HMAC chain
 * (`write_chain`, below) and the WAL checkpoints (on a thread of their own).
 * The ledger's writer thread builds the next batch in Python meanwhile
 * (mcpwall.ledger._writer; bench/ledger_write.py; docs/PERFORMANCE.md).
 *
 * It links the same libsqlite3 as Python's sqlite3 module (mcpwall.ledger._sqlite
 * checks that it is the same library in memory: two copies of SQLite in one
 * process would not see each other's POSIX locks). Values: None, int (64-bit),
 * float, str (UTF-8), bytes; anything else is refused before the database is
 * touched, as sqlite3 refuses it.
 *
 *     conn = Connection(path, busy_timeout_ms)
 *     conn.execute(sql, params=()) -> list[tuple]
 *     conn.executemany(sql, rows) -> None
 *     conn.write_chain(...), prepare_chain(...)   # a ledger batch, below
 *     conn.checkpoint_in_background(threshold, limit)
 *     conn.in_transaction, conn.background_checkpoints, conn.close()
 *
 * Errors raise `Error(message)` with `.code` (SQLite's extended result code).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sqlite3.h>

static PyObject *BulkError;

/* Checkpoints of the WAL on a thread of their own (see Conn_checkpoint_in_background). */
typedef struct {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    sqlite3 *db;        /* the checkpointer's own connection */
    int pending;        /* a checkpoint is asked for */
    int running;        /* the thread is checkpointing */
    int stop;
    int threshold;      /* frames in the WAL that start a checkpoint */
    int limit;          /* frames at which the writer checkpoints itself (the checkpointer fell behind) */
    int backfilled;     /* frames of the WAL in the database after the thread's last checkpoint */
    int last_frames;    /* the WAL's frames after the writer's last commit (written by the hook only) */
    long long runs;     /* checkpoints run, for tests and benchmarks */
} Checkpointer;

/* write_chain's prepared statements and HMAC context, kept from one batch to the next: a gateway
 * commits every 50 ms, and preparing ten statements and fetching HMAC each time cost more than
 * inserting its few dozen rows. */
#define CACHED_STATEMENTS 16

typedef struct {
    char *sql[CACHED_STATEMENTS];
    sqlite3_stmt *stmt[CACHED_STATEMENTS];
    int next; /* the slot replaced when all are taken */
    EVP_MAC *algo;
    EVP_MAC_CTX *mac;
    unsigned char *key;
    size_t key_n;
} ChainCache;

struct ChainCall;

/* The thread that writes start_chain's batches: one per connection, started with its first batch and
 * kept until the connection closes. A thread per batch cost a clone and a join each time, and glibc
 * gave the new threads malloc arenas of their own, whose freed memory stayed in the process: under 8
 * clients the gateway's RSS stepped up by 7-28 MiB and stayed there (bench/soak.py). */
typedef struct {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a batch was handed over, or stop */
    pthread_cond_t done; /* the batch handed over is written */
    struct ChainCall *job;
    int finished;
    int stop;
} ChainWorker;

typedef struct {
    PyObject_HEAD
    sqlite3 *db;
    int busy; /* a call is running with the GIL released, or a batch on its own thread: refuse a second one */
    char *path;
    Checkpointer *ckpt;
    ChainCache cache;
    struct ChainCall *pending; /* the batch start_chain began, until finish_chain */
    ChainWorker *worker;       /* the thread that writes it (see ChainWorker) */
} Conn;

enum { V_NULL, V_INT, V_FLOAT, V_TEXT, V_BLOB };

typedef struct {
    int type;
    union {
        sqlite3_int64 i;
        double d;
        struct {
            const char *p;
            Py_ssize_t n;
        } s;
    } v;
} Val;

/* Values of a batch and the objects that own their bytes, kept alive until the batch is done. */
typedef struct {
    Val *vals;
    PyObject **owners;
    Py_ssize_t n_owners;
} Batch;

static void batch_free(Batch *b) {
    if (b->owners != NULL) {
        for (Py_ssize_t i = 0; i < b->n_owners; i++) Py_DECREF(b->owners[i]);
    }
    PyMem_Free(b->owners);
    PyMem_Free(b->vals);
    b->vals = NULL;
    b->owners = NULL;
    b->n_owners = 0;
}

static PyObject *raise_db(int code, const char *message) {
    PyObject *exc = PyObject_CallFunction(BulkError, "s", message);
    if (exc == NULL) return NULL;
    PyObject *value = PyLong_FromLong(code);
    if (value == NULL || PyObject_SetAttrString(exc, "code", value) < 0) {
        Py_XDECREF(value);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(value);
    PyErr_SetObject(BulkError, exc);
    Py_DECREF(exc);
    return NULL;
}

/* One value into `out`, under the GIL; text and bytes borrow the object's buffer and own a reference. */
static int take_value(PyObject *obj, Val *out, Batch *b) {
    if (obj == Py_None) {
        out->type = V_NULL;
        return 0;
    }
    if (PyLong_Check(obj)) {
        int overflow = 0;
        long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to SQLite INTEGER");
            return -1;
        }
        if (value == -1 && PyErr_Occurred()) return -1;
        out->type = V_INT;
        out->v.i = value;
        return 0;
    }
    if (PyFloat_Check(obj)) {
        out->type = V_FLOAT;
        out->v.d = PyFloat_AS_DOUBLE(obj);
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        Py_ssize_t n;
        const char *p = PyUnicode_AsUTF8AndSize(obj, &n); /* refuses lone surrogates, as sqlite3 does */
        if (p == NULL) return -1;
        out->type = V_TEXT;
        out->v.s.p = p;
        out->v.s.n = n;
    } else if (PyBytes_Check(obj)) {
        out->type = V_BLOB;
        out->v.s.p = PyBytes_AS_STRING(obj);
        out->v.s.n = PyBytes_GET_SIZE(obj);
    } else {
        PyErr_Format(PyExc_TypeError, "unsupported type for a SQLite parameter: %s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    Py_INCREF(obj);
    b->owners[b->n_owners++] = obj;
    return 0;
}

/* Every row's values, `width` each, into `b`; -1 with an exception set on bad input. */
static int take_rows(PyObject *rows, Py_ssize_t n_rows, int width, Batch *b) {
    Py_ssize_t total = n_rows * (Py_ssize_t)width;
    b->vals = PyMem_New(Val, total > 0 ? total : 1);
    b->owners = PyMem_New(PyObject *, total > 0 ? total : 1);
    if (b->vals == NULL || b->owners == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t r = 0; r < n_rows; r++) {
        PyObject *row = PySequence_Fast(PySequence_Fast_GET_ITEM(rows, r), "each row must be a sequence");
        if (row == NULL) return -1;
        if (PySequence_Fast_GET_SIZE(row) != width) {
            PyErr_Format(PyExc_ValueError, "row %zd has %zd values, the statement takes %d", r,
                         PySequence_Fast_GET_SIZE(row), width);
            Py_DECREF(row);
            return -1;
        }
        PyObject **items = PySequence_Fast_ITEMS(row);
        for (int c = 0; c < width; c++) {
            if (take_value(items[c], &b->vals[r * width + c], b) < 0) {
                Py_DECREF(row);
                return -1;
            }
        }
        Py_DECREF(row);
    }
    return 0;
}

/* Bind `width` values to parameters first, first + 1, ... Without the GIL. */
static int bind_row_at(sqlite3_stmt *stmt, const Val *vals, int width, int first) {
    for (int c = 0; c < width; c++) {
        const Val *v = &vals[c];
        int i = first + c, rc;
        switch (v->type) {
        case V_INT: rc = sqlite3_bind_int64(stmt, i, v->v.i); break;
        case V_FLOAT: rc = sqlite3_bind_double(stmt, i, v->v.d); break;
        case V_TEXT: rc = sqlite3_bind_text64(stmt, i, v->v.s.p, (sqlite3_uint64)v->v.s.n, SQLITE_STATIC,
                                              SQLITE_UTF8); break;
        case V_BLOB: rc = sqlite3_bind_blob64(stmt, i, v->v.s.p, (sqlite3_uint64)v->v.s.n, SQLITE_STATIC); break;
        default: rc = sqlite3_bind_null(stmt, i); break;
        }
        if (rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
}

static int bind_row(sqlite3_stmt *stmt, const Val *vals, int width) {
    return bind_row_at(stmt, vals, width, 1);
}

static int check_open(Conn *self) {
    if (self->db == NULL) {
        PyErr_SetString(BulkError, "the connection is closed");
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the connection is in use by another thread");
        return -1;
    }
    return 0;
}

/* Prepare `sql` (one statement), under the GIL: it neither waits for locks nor does I/O
 * beyond reading the schema. NULL with an exception set on failure. */
static sqlite3_stmt *prepare(Conn *self, PyObject *sql_obj) {
    if (!PyUnicode_Check(sql_obj)) {
        PyErr_SetString(PyExc_TypeError, "SQL must be a str");
        return NULL;
    }
    Py_ssize_t n;
    const char *sql = PyUnicode_AsUTF8AndSize(sql_obj, &n);
    if (sql == NULL) return NULL;
    sqlite3_stmt *stmt = NULL;
    const char *tail = NULL;
    int rc = sqlite3_prepare_v2(self->db, sql, (int)n + 1, &stmt, &tail);
    if (rc != SQLITE_OK) {
        raise_db(sqlite3_extended_errcode(self->db), sqlite3_errmsg(self->db));
        sqlite3_finalize(stmt);
        return NULL;
    }
    if (stmt == NULL) {
        PyErr_SetString(PyExc_ValueError, "empty SQL statement");
        return NULL;
    }
    while (tail != NULL && (*tail == ' ' || *tail == '\n' || *tail == '\t' || *tail == ';')) tail++;
    if (tail != NULL && *tail != '\0') {
        sqlite3_finalize(stmt);
        PyErr_SetString(PyExc_ValueError, "one statement at a time");
        return NULL;
    }
    return stmt;
}

/* One statement and the rows of parameters it runs for. */
typedef struct {
    sqlite3_stmt *stmt;
    Py_ssize_t n_rows;
    int width;
    Batch values;
} Step;

/* A result row's values, copied out without the GIL and turned into Python objects after. */
typedef struct {
    Val *vals;
    Py_ssize_t n, cap;
    int width;
} Results;

static int results_add(Results *res, sqlite3_stmt *stmt) {
    int n = sqlite3_column_count(stmt);
    if (res->n + n > res->cap) {
        Py_ssize_t cap = (res->cap + n) * 2;
        Val *grown = realloc(res->vals, (size_t)cap * sizeof(Val)); /* no GIL: not PyMem */
        if (grown == NULL) return SQLITE_NOMEM;
        res->vals = grown;
        res->cap = cap;
    }
    res->width = n;
    for (int c = 0; c < n; c++) {
        Val *v = &res->vals[res->n++];
        switch (sqlite3_column_type(stmt, c)) {
        case SQLITE_INTEGER: v->type = V_INT; v->v.i = sqlite3_column_int64(stmt, c); break;
        case SQLITE_FLOAT: v->type = V_FLOAT; v->v.d = sqlite3_column_double(stmt, c); break;
        case SQLITE_TEXT:
        case SQLITE_BLOB: {
            int text = sqlite3_column_type(stmt, c) == SQLITE_TEXT;
            const void *p = text ? (const void *)sqlite3_column_text(stmt, c) : sqlite3_column_blob(stmt, c);
            int len = sqlite3_column_bytes(stmt, c);
            char *copy = malloc((size_t)len + 1);
            if (copy == NULL) {
                v->type = V_NULL;
                return SQLITE_NOMEM;
            }
            if (len > 0) memcpy(copy, p, (size_t)len);
            v->type = text ? V_TEXT : V_BLOB;
            v->v.s.p = copy;
            v->v.s.n = len;
            break;
        }
        default: v->type = V_NULL; break;
        }
    }
    return SQLITE_OK;
}

static void results_free(Results *res) {
    for (Py_ssize_t i = 0; i < res->n; i++) {
        if (res->vals[i].type == V_TEXT || res->vals[i].type == V_BLOB) free((void *)res->vals[i].v.s.p);
    }
    free(res->vals);
}

static PyObject *results_list(const Results *res) {
    Py_ssize_t width = res->width, n_rows = width ? res->n / width : 0;
    PyObject *out = PyList_New(n_rows);
    if (out == NULL) return NULL;
    for (Py_ssize_t r = 0; r < n_rows; r++) {
        PyObject *row = PyTuple_New(width);
        if (row == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, r, row);
        for (Py_ssize_t c = 0; c < width; c++) {
            const Val *v = &res->vals[r * width + c];
            PyObject *value;
            switch (v->type) {
            case V_INT: value = PyLong_FromLongLong(v->v.i); break;
            case V_FLOAT: value = PyFloat_FromDouble(v->v.d); break;
            case V_TEXT: value = PyUnicode_DecodeUTF8(v->v.s.p, v->v.s.n, "replace"); break;
            case V_BLOB: value = PyBytes_FromStringAndSize(v->v.s.p, v->v.s.n); break;
            default: value = Py_NewRef(Py_None); break;
            }
            if (value == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            PyTuple_SET_ITEM(row, c, value);
        }
    }
    return out;
}

/* Prepare one statement and take its rows of parameters, under the GIL. */
static int step_init(Conn *self, Step *step, PyObject *sql, PyObject *rows_obj) {
    step->stmt = prepare(self, sql);
    if (step->stmt == NULL) return -1;
    step->width = sqlite3_bind_parameter_count(step->stmt);
    PyObject *rows = PySequence_Fast(rows_obj, "rows must be a sequence");
    if (rows == NULL) return -1;
    step->n_rows = PySequence_Fast_GET_SIZE(rows);
    int rc = take_rows(rows, step->n_rows, step->width, &step->values);
    Py_DECREF(rows); /* the values' owners are referenced by the batch itself */
    return rc;
}

static void step_free(Step *step) {
    sqlite3_finalize(step->stmt);
    step->stmt = NULL;
    batch_free(&step->values);
}

/* Run every step for each of its rows, in order, without the GIL; results of rows a step returns
 * go to `res` when it is not NULL. The first failure stops it: SQLITE_DONE when all ran. */
static int run_steps(Step *steps, Py_ssize_t n_steps, Results *res) {
    for (Py_ssize_t s = 0; s < n_steps; s++) {
        Step *step = &steps[s];
        for (Py_ssize_t r = 0; r < step->n_rows; r++) {
            int rc = bind_row(step->stmt, &step->values.vals[r * step->width], step->width);
            if (rc != SQLITE_OK) return rc;
            while ((rc = sqlite3_step(step->stmt)) == SQLITE_ROW) {
                if (res != NULL && (rc = results_add(res, step->stmt)) != SQLITE_OK) return rc;
            }
            if (rc != SQLITE_DONE) return rc;
            sqlite3_reset(step->stmt);
        }
    }
    return SQLITE_DONE;
}

/* Prepare and take every (sql, rows) of `pairs` under the GIL, run them all with it released,
 * return the rows they produced (or None when `want_rows` is 0). */
static PyObject *run_pairs(Conn *self, PyObject *pairs, int want_rows) {
    if (check_open(self) < 0) return NULL;
    PyObject *fast = PySequence_Fast(pairs, "steps must be a sequence of (sql, rows)");
    if (fast == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    Step *steps = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof(Step));
    PyObject *out = NULL;
    if (steps == NULL) {
        Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    Py_ssize_t ready = 0;
    for (; ready < n; ready++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(fast, ready);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "each step must be a (sql, rows) tuple");
            break;
        }
        if (step_init(self, &steps[ready], PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0) {
            ready++; /* partly made: freed below */
            break;
        }
    }
    if (!PyErr_Occurred()) {
        Results res = {0};
        int rc;
        self->busy = 1;
        Py_BEGIN_ALLOW_THREADS
        rc = run_steps(steps, n, want_rows ? &res : NULL);
        Py_END_ALLOW_THREADS
        self->busy = 0;
        if (rc != SQLITE_DONE) {
            int code = sqlite3_extended_errcode(self->db);
            if (rc == SQLITE_NOMEM) raise_db(rc, "out of memory");
            else raise_db(code ? code : rc, sqlite3_errmsg(self->db));
        } else if (want_rows) {
            out = results_list(&res);
        } else {
            out = Py_NewRef(Py_None);
        }
        results_free(&res);
    }
    for (Py_ssize_t i = 0; i < ready; i++) step_free(&steps[i]);
    PyMem_Free(steps);
    Py_DECREF(fast);
    return out;
}

/* ------------------------------------------------------------------ background checkpoints
 *
 * In WAL mode every commit appends pages to the WAL, and a checkpoint copies them back into the
 * database and syncs it. SQLite runs it inside the commit that crosses wal_autocheckpoint, on the
 * writer's thread: at 5,000-row batches that was a quarter of the writer's time. Here the WAL hook
 * only signals a thread with its own connection, which runs PASSIVE checkpoints (they never block
 * the writer or readers) while the writer goes on.
 *
 * A PASSIVE checkpoint copies the frames the WAL held when it began; the WAL starts over only when a
 * transaction begins with every frame copied. While the writer commits, the thread is always a few
 * commits behind, so after each commit over the threshold, with the thread idle: if the thread left
 * little more than this commit's frames (or at most a quarter threshold, once the WAL is half as
 * large again as the threshold), the writer copies them itself (a few MiB and two syncs), so that
 * its next transaction starts the WAL over; else the thread is asked for another pass (each copies
 * what the one before let accumulate, so each is shorter). If the thread falls `limit` frames
 * behind anyway, the writer checkpoints itself as SQLite would: the WAL stays bounded. */

static void *checkpoint_loop(void *arg) {
    Checkpointer *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stop) {
        if (!c->pending) {
            pthread_cond_wait(&c->wake, &c->lock);
            continue;
        }
        c->pending = 0;
        c->running = 1;
        pthread_mutex_unlock(&c->lock);
        int done = 0;
        int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, &done);
        pthread_mutex_lock(&c->lock);
        c->running = 0;
        c->runs++;
        c->backfilled = rc == SQLITE_OK ? done : 0;
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* After each commit, on the writer's thread (its transaction is over). */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames) {
    Checkpointer *c = arg;
    int restarted = frames < c->last_frames, added = restarted ? frames : frames - c->last_frames;
    c->last_frames = frames;
    pthread_mutex_lock(&c->lock);
    if (restarted) c->backfilled = 0; /* what the thread copied was of the WAL before */
    int busy = c->pending || c->running, left = frames - (c->backfilled <= frames ? c->backfilled : 0);
    /* see the comment above checkpoint_loop */
    int finish = !busy && frames >= c->threshold && c->backfilled > 0 &&
                 (left <= added + c->threshold / 32 || (frames >= c->threshold + c->threshold / 2 &&
                                                        left <= c->threshold / 4));
    if (!busy && frames >= c->threshold && !finish && frames < c->limit) {
        c->pending = 1;
        pthread_cond_signal(&c->wake);
    }
    pthread_mutex_unlock(&c->lock);
    if (finish || frames >= c->limit) sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

/* Without the GIL. */
static void checkpointer_stop(Conn *self) {
    Checkpointer *c = self->ckpt;
    if (c == NULL) return;
    if (self->db != NULL) sqlite3_wal_autocheckpoint(self->db, 1000); /* SQLite's own again */
    pthread_mutex_lock(&c->lock);
    c->stop = 1;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    sqlite3_close_v2(c->db);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->wake);
    free(c);
    self->ckpt = NULL;
}

static PyObject *Conn_checkpoint_in_background(Conn *self, PyObject *args) {
    int threshold, limit;
    if (!PyArg_ParseTuple(args, "ii", &threshold, &limit)) return NULL;
    if (check_open(self) < 0) return NULL;
    if (threshold < 1 || limit < threshold) {
        PyErr_SetString(PyExc_ValueError, "need 1 <= threshold <= limit");
        return NULL;
    }
    if (self->ckpt != NULL) { /* already running: new thresholds */
        self->ckpt->threshold = threshold;
        self->ckpt->limit = limit;
        sqlite3_wal_hook(self->db, wal_hook, self->ckpt);
        Py_RETURN_NONE;
    }
    Checkpointer *c = calloc(1, sizeof *c);
    if (c == NULL) return PyErr_NoMemory();
    c->threshold = threshold;
    c->limit = limit;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = sqlite3_open_v2(self->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc == SQLITE_OK) sqlite3_busy_timeout(c->db, 10000);
    /* A connection opens the WAL with its first read: until then a checkpoint on it is a no-op
     * that reports success. */
    if (rc == SQLITE_OK) rc = sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL);
    Py_END_ALLOW_THREADS
    if (rc != SQLITE_OK) {
        raise_db(c->db ? sqlite3_extended_errcode(c->db) : rc, c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        sqlite3_close_v2(c->db);
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    if (pthread_create(&c->thread, NULL, checkpoint_loop, c) != 0) {
        sqlite3_close_v2(c->db);
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->wake);
        free(c);
        PyErr_SetString(PyExc_RuntimeError, "cannot start the checkpoint thread");
        return NULL;
    }
    self->ckpt = c;
    sqlite3_wal_hook(self->db, wal_hook, c);
    Py_RETURN_NONE;
}

static PyObject *Conn_checkpoints(Conn *self, void *Py_UNUSED(closure)) {
    if (self->ckpt == NULL) Py_RETURN_NONE;
    long long runs;
    pthread_mutex_lock(&self->ckpt->lock);
    runs = self->ckpt->runs;
    pthread_mutex_unlock(&self->ckpt->lock);
    return PyLong_FromLongLong(runs);
}

static int Conn_init(Conn *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"path", "busy_timeout_ms", NULL};
    PyObject *path_obj;
    int timeout_ms = 10000;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|i", kwlist, PyUnicode_FSConverter, &path_obj, &timeout_ms))
        return -1;
    if (self->db != NULL) {
        Py_DECREF(path_obj);
        PyErr_SetString(PyExc_RuntimeError, "already open");
        return -1;
    }
    sqlite3 *db = NULL;
    int rc;
    char *path_copy = strdup(PyBytes_AS_STRING(path_obj));
    Py_DECREF(path_obj);
    if (path_copy == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    const char *path = path_copy;
    Py_BEGIN_ALLOW_THREADS
    rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc == SQLITE_OK) sqlite3_busy_timeout(db, timeout_ms);
    Py_END_ALLOW_THREADS
    if (rc != SQLITE_OK) {
        free(path_copy);
        raise_db(db ? sqlite3_extended_errcode(db) : rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close_v2(db);
        return -1;
    }
    sqlite3_extended_result_codes(db, 1);
    self->path = path_copy;
    self->db = db;
    return 0;
}

static void cache_clear(ChainCache *cache) {
    for (int i = 0; i < CACHED_STATEMENTS; i++) {
        sqlite3_finalize(cache->stmt[i]);
        free(cache->sql[i]);
        cache->stmt[i] = NULL;
        cache->sql[i] = NULL;
    }
    EVP_MAC_CTX_free(cache->mac);
    EVP_MAC_free(cache->algo);
    if (cache->key != NULL) OPENSSL_cleanse(cache->key, cache->key_n);
    free(cache->key);
    memset(cache, 0, sizeof *cache);
}

struct ChainCall;
static struct ChainCall *join_pending(Conn *self);
static void drop_pending(Conn *self);
static void worker_stop(Conn *self);

static void close_db(Conn *self) {
    drop_pending(self); /* a batch still being written ends first (committed or not) */
    Py_BEGIN_ALLOW_THREADS
    worker_stop(self);
    cache_clear(&self->cache);
    checkpointer_stop(self);
    if (self->db != NULL) sqlite3_close_v2(self->db); /* rolls back an open transaction */
    Py_END_ALLOW_THREADS
    self->db = NULL;
}

static void Conn_dealloc(Conn *self) {
    close_db(self);
    free(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Conn_close(Conn *self, PyObject *Py_UNUSED(ignored)) {
    if (self->busy && self->pending == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the connection is in use by another thread");
        return NULL;
    }
    close_db(self);
    Py_RETURN_NONE;
}

/* `((sql, rows),)`: one statement as the steps `run_pairs` takes. */
static PyObject *one_step(PyObject *sql, PyObject *rows) {
    PyObject *pair = PyTuple_Pack(2, sql, rows);
    if (pair == NULL) return NULL;
    PyObject *pairs = PyTuple_Pack(1, pair);
    Py_DECREF(pair);
    return pairs;
}

static PyObject *Conn_execute(Conn *self, PyObject *args) {
    PyObject *sql, *params = NULL;
    if (!PyArg_ParseTuple(args, "U|O", &sql, &params)) return NULL;
    PyObject *empty = NULL;
    if (params == NULL && (params = empty = PyTuple_New(0)) == NULL) return NULL;
    PyObject *rows = PyTuple_Pack(1, params);
    Py_XDECREF(empty);
    if (rows == NULL) return NULL;
    PyObject *pairs = one_step(sql, rows);
    Py_DECREF(rows);
    if (pairs == NULL) return NULL;
    PyObject *out = run_pairs(self, pairs, 1);
    Py_DECREF(pairs);
    return out;
}

static PyObject *Conn_executemany(Conn *self, PyObject *args) {
    PyObject *sql, *rows;
    if (!PyArg_ParseTuple(args, "UO", &sql, &rows)) return NULL;
    PyObject *pairs = one_step(sql, rows);
    if (pairs == NULL) return NULL;
    PyObject *out = run_pairs(self, pairs, 0);
    Py_DECREF(pairs);
    return out;
}

/* ------------------------------------------------------------------ the ledger's chain
 *
 * A batch of the ledger goes in two steps, so that the thread that commits it never needs the GIL
 * (the writer thread builds the next batch in Python meanwhile):
 *
 *   batch = prepare_chain(built_rows, table_index, created, dumps)    # under the GIL, any thread
 *   seq, mac = conn.write_chain(key, [batch, ...], begin, head, tables, rule_insert, body_insert, update_head)
 *
 * or, overlapped: conn.start_chain(<the same>) runs write_chain's work on a C thread of its own and
 * returns at once; conn.finish_chain() waits for it (without the GIL) and gives (seq, mac) or raises.
 * A Python thread in its place waited for the GIL twice a batch, up to the interpreter's 5 ms
 * switch interval each time while the writer thread built the next batch. Between the two calls
 * the connection refuses every other call.
 *
 * (several batches make one transaction: the writer prepares each few hundred rows as soon as
 * they are built, while they are still in the CPU's cache)
 *
 * prepare_chain takes everything write_chain needs out of the BuiltRows of
 * mcpwall.ledger._event (table, values, values_json, decision_id, ts, rules, bodies) into C
 * arrays, each value's object kept alive by the batch. write_chain releases the GIL at once and,
 * without it: prepares the statements, `begin`s, reads the chain's head (`head`: seq, mac),
 * inserts the bodies (once per id, in id order, `created` appended), each event with the next
 * seq and its MAC, each rule row with its MAC, runs `update_head` with the last seq and MAC,
 * and commits. The MACs are mcpwall.ledger._chain's, byte for byte:
 *   event: HMAC-SHA256(key, '["<table>",<seq>,"<prev mac>",' + values_json[1:])   (event_mac_json)
 *   rule:  HMAC-SHA256(key, '["rule","<call mac>",<call seq>,' + rule_json[1:])  (rule_mac)
 * where rule_json is dumps((idx, decision_id, ts, rule_id, action, layer, compliance, owasp)).
 * tables: ((name, insert_sql), ...), each insert taking (seq, *values, prev_mac, mac); the rule
 * insert takes (call seq, *those 8 values, mac). On failure nothing is committed (the caller
 * rolls back). */

typedef struct {
    int table;
    const char *json;
    Py_ssize_t json_n;
    Py_ssize_t width;
    Val *vals;
} ChainEvent;

typedef struct {
    Py_ssize_t event;
    const char *json;
    Py_ssize_t json_n;
    Val *vals; /* RULE_WIDTH of them */
} ChainRule;

#define RULE_WIDTH 8
#define BODY_WIDTH 6
#define MAX_TABLES 8

typedef struct {
    PyObject_HEAD
    Batch values; /* every value and JSON, and the objects that own them */
    ChainEvent *events;
    Py_ssize_t n_events;
    ChainRule *rules;
    Py_ssize_t n_rules;
    Val *bodies; /* BODY_WIDTH a body */
    Py_ssize_t n_bodies;
} ChainBatch;

static void ChainBatch_dealloc(ChainBatch *self) {
    batch_free(&self->values);
    PyMem_Free(self->events);
    PyMem_Free(self->rules);
    PyMem_Free(self->bodies);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ChainBatchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mcpwall.ledger._bulk.ChainBatch",
    .tp_basicsize = sizeof(ChainBatch),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A ledger batch taken out of its BuiltRows by prepare_chain, for Connection.write_chain.",
    .tp_dealloc = (destructor)ChainBatch_dealloc,
};

static int take_json(PyObject *obj, const char **p, Py_ssize_t *n, Batch *b) {
    if (!PyBytes_Check(obj) || PyBytes_GET_SIZE(obj) < 2) {
        PyErr_SetString(PyExc_TypeError, "a row's JSON must be bytes of a JSON array");
        return -1;
    }
    *p = PyBytes_AS_STRING(obj);
    *n = PyBytes_GET_SIZE(obj);
    Py_INCREF(obj);
    b->owners[b->n_owners++] = obj;
    return 0;
}

static PyObject *attr_table, *attr_values, *attr_values_json, *attr_rules, *attr_bodies, *attr_decision_id, *attr_ts;

/* Fetch the attributes of every row once: [(table index, values, values_json, rules, bodies, decision_id, ts)]. */
static PyObject *row_parts(PyObject *rows, PyObject *table_index, Py_ssize_t *n_values, Py_ssize_t *n_rules,
                           Py_ssize_t *n_bodies) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
    PyObject *parts = PyList_New(n);
    if (parts == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PySequence_Fast_GET_ITEM(rows, i);
        PyObject *got[7] = {NULL};
        PyObject *names[7] = {attr_table, attr_values, attr_values_json, attr_rules, attr_bodies, attr_decision_id,
                               attr_ts};
        int bad = 0;
        for (int k = 0; k < 7 && !bad; k++) bad = (got[k] = PyObject_GetAttr(row, names[k])) == NULL;
        PyObject *index = bad ? NULL : PyDict_GetItemWithError(table_index, got[0]);
        if (index == NULL && !bad && !PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "a row names an unknown table");
        if (index != NULL) Py_SETREF(got[0], Py_NewRef(index));
        PyObject *values = index ? PySequence_Fast(got[1], "values must be a sequence") : NULL;
        PyObject *rules = values ? PySequence_Fast(got[3], "rules must be a sequence") : NULL;
        PyObject *bodies = rules ? PySequence_Fast(got[4], "bodies must be a sequence") : NULL;
        if (bodies != NULL) {
            Py_SETREF(got[1], values);
            Py_SETREF(got[3], rules);
            Py_SETREF(got[4], bodies);
            *n_values += PySequence_Fast_GET_SIZE(values) + 1;
            *n_rules += PySequence_Fast_GET_SIZE(rules);
            *n_bodies += PySequence_Fast_GET_SIZE(bodies);
        } else {
            Py_XDECREF(values);
            Py_XDECREF(rules);
        }
        PyObject *tuple = bodies ? PyTuple_New(7) : NULL;
        for (int k = 0; k < 7; k++) {
            if (tuple != NULL) PyTuple_SET_ITEM(tuple, k, got[k]);
            else Py_XDECREF(got[k]);
        }
        if (tuple == NULL) {
            Py_DECREF(parts);
            return NULL;
        }
        PyList_SET_ITEM(parts, i, tuple);
    }
    return parts;
}

static PyObject *prepare_chain(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *rows_obj, *table_index, *created, *dumps;
    if (!PyArg_ParseTuple(args, "OO!UO", &rows_obj, &PyDict_Type, &table_index, &created, &dumps)) return NULL;
    PyObject *rows = PySequence_Fast(rows_obj, "rows must be a sequence");
    if (rows == NULL) return NULL;
    Py_ssize_t n_values = 0, n_rules = 0, n_bodies = 0;
    PyObject *parts = row_parts(rows, table_index, &n_values, &n_rules, &n_bodies);
    Py_DECREF(rows);
    if (parts == NULL) return NULL;
    Py_ssize_t n_events = PyList_GET_SIZE(parts);
    ChainBatch *batch = PyObject_New(ChainBatch, &ChainBatchType);
    PyObject *seen = PyDict_New(); /* body id -> its index in `bodies` */
    if (batch == NULL || seen == NULL) {
        Py_XDECREF(batch);
        Py_XDECREF(seen);
        Py_DECREF(parts);
        return NULL;
    }
    memset(&batch->values, 0, sizeof(ChainBatch) - offsetof(ChainBatch, values));
    /* values + a JSON each for events and rules; rule values; body values */
    Py_ssize_t total = n_values + n_rules * (RULE_WIDTH + 1) + n_bodies * BODY_WIDTH;
    Batch *b = &batch->values;
    b->vals = PyMem_New(Val, total > 0 ? total : 1);
    b->owners = PyMem_New(PyObject *, total > 0 ? total : 1);
    batch->events = PyMem_New(ChainEvent, n_events > 0 ? n_events : 1);
    batch->rules = PyMem_New(ChainRule, n_rules > 0 ? n_rules : 1);
    batch->bodies = PyMem_New(Val, n_bodies > 0 ? n_bodies * BODY_WIDTH : 1);
    if (!b->vals || !b->owners || !batch->events || !batch->rules || !batch->bodies) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t used = 0;
    for (Py_ssize_t i = 0; i < n_events; i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        ChainEvent *e = &batch->events[batch->n_events];
        e->table = (int)PyLong_AsLong(PyTuple_GET_ITEM(part, 0));
        if (e->table < 0 || e->table >= MAX_TABLES) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a table index is out of range");
            goto fail;
        }
        PyObject *values = PyTuple_GET_ITEM(part, 1);
        e->width = PySequence_Fast_GET_SIZE(values);
        e->vals = &b->vals[used];
        if (take_json(PyTuple_GET_ITEM(part, 2), &e->json, &e->json_n, b) < 0) goto fail;
        PyObject **items = PySequence_Fast_ITEMS(values);
        for (Py_ssize_t c = 0; c < e->width; c++) {
            if (take_value(items[c], &e->vals[c], b) < 0) goto fail;
        }
        used += e->width;
        batch->n_events++;
        PyObject *rules = PyTuple_GET_ITEM(part, 3);
        for (Py_ssize_t r = 0; r < PySequence_Fast_GET_SIZE(rules); r++) {
            PyObject *rule = PySequence_Fast_GET_ITEM(rules, r);
            if (!PyTuple_Check(rule) || PyTuple_GET_SIZE(rule) != 6) {
                PyErr_SetString(PyExc_TypeError, "a rule row must be a 6-tuple");
                goto fail;
            }
            PyObject *vals = PyTuple_Pack(RULE_WIDTH, PyTuple_GET_ITEM(rule, 0), PyTuple_GET_ITEM(part, 5),
                                          PyTuple_GET_ITEM(part, 6), PyTuple_GET_ITEM(rule, 1),
                                          PyTuple_GET_ITEM(rule, 2), PyTuple_GET_ITEM(rule, 3),
                                          PyTuple_GET_ITEM(rule, 4), PyTuple_GET_ITEM(rule, 5));
            PyObject *json = vals ? PyObject_CallOneArg(dumps, vals) : NULL;
            ChainRule *ru = &batch->rules[batch->n_rules];
            ru->event = i;
            ru->vals = &b->vals[used];
            int bad = json == NULL || take_json(json, &ru->json, &ru->json_n, b) < 0;
            for (int c = 0; !bad && c < RULE_WIDTH; c++) bad = take_value(PyTuple_GET_ITEM(vals, c), &ru->vals[c], b) < 0;
            Py_XDECREF(vals);
            Py_XDECREF(json);
            if (bad) goto fail;
            used += RULE_WIDTH;
            batch->n_rules++;
        }
        PyObject *bodies = PyTuple_GET_ITEM(part, 4);
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(bodies); k++) {
            PyObject *body = PySequence_Fast_GET_ITEM(bodies, k);
            if (!PyTuple_Check(body) || PyTuple_GET_SIZE(body) != 5) {
                PyErr_SetString(PyExc_TypeError, "a body row must be a 5-tuple");
                goto fail;
            }
            PyObject *index = PyLong_FromSsize_t(batch->n_bodies);
            PyObject *first = index ? PyDict_SetDefault(seen, PyTuple_GET_ITEM(body, 0), index) : NULL;
            int is_new = first == index;
            Py_XDECREF(index);
            if (first == NULL) goto fail;
            if (!is_new) continue; /* the same body twice in a batch: stored once */
            Val *vals = &batch->bodies[batch->n_bodies * BODY_WIDTH];
            for (int c = 0; c < 5; c++) {
                if (take_value(PyTuple_GET_ITEM(body, c), &vals[c], b) < 0) goto fail;
            }
            if (take_value(created, &vals[5], b) < 0) goto fail;
            batch->n_bodies++;
        }
    }
    Py_DECREF(parts);
    Py_DECREF(seen);
    return (PyObject *)batch;

fail:
    Py_DECREF(parts);
    Py_DECREF(seen);
    Py_DECREF(batch);
    return NULL;
}

/* Bytes every body id of the batch being sorted starts with (its BodyNames prefix): skipped by the
 * comparison. Set before qsort, without the GIL, by the one thread that runs a write_chain at a time
 * per connection; thread-local because two connections may sort at once. */
static _Thread_local Py_ssize_t common_prefix;

static int compare_body_ids(const void *a, const void *b) {
    const Val *x = *(const Val *const *)a, *y = *(const Val *const *)b;
    if (x->type != V_TEXT || y->type != V_TEXT) return (x->type > y->type) - (x->type < y->type);
    Py_ssize_t n = x->v.s.n < y->v.s.n ? x->v.s.n : y->v.s.n;
    Py_ssize_t skip = common_prefix < n ? common_prefix : n;
    int c = memcmp(x->v.s.p + skip, y->v.s.p + skip, (size_t)(n - skip));
    return c ? c : (x->v.s.n > y->v.s.n) - (x->v.s.n < y->v.s.n);
}

/* The length of the prefix all of `ids` (text values) share. */
static Py_ssize_t shared_prefix(Val **ids, Py_ssize_t n) {
    if (n == 0 || ids[0]->type != V_TEXT) return 0;
    Py_ssize_t len = ids[0]->v.s.n;
    for (Py_ssize_t i = 1; i < n && len > 0; i++) {
        if (ids[i]->type != V_TEXT) return 0;
        Py_ssize_t k = 0, m = ids[i]->v.s.n < len ? ids[i]->v.s.n : len;
        while (k < m && ids[i]->v.s.p[k] == ids[0]->v.s.p[k]) k++;
        len = k;
    }
    return len;
}

typedef struct {
    EVP_MAC_CTX *mac;
    char *buf;
    size_t cap;
} Hmac;

static int hmac_hex(Hmac *h, const char *head, size_t head_n, const char *json, size_t json_n, char out[65]) {
    size_t need = head_n + json_n;
    if (need > h->cap) {
        char *grown = realloc(h->buf, need * 2);
        if (grown == NULL) return -1;
        h->buf = grown;
        h->cap = need * 2;
    }
    memcpy(h->buf, head, head_n);
    memcpy(h->buf + head_n, json, json_n);
    unsigned char digest[32];
    size_t digest_n = 0;
    if (!EVP_MAC_init(h->mac, NULL, 0, NULL) || !EVP_MAC_update(h->mac, (unsigned char *)h->buf, need) ||
        !EVP_MAC_final(h->mac, digest, &digest_n, sizeof digest) || digest_n != 32)
        return -1;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[64] = '\0';
    return 0;
}

typedef struct {
    sqlite3 *db;
    const char *sql[5]; /* begin, head, rule insert, body insert, update head */
    const char *table_name[MAX_TABLES];
    const char *table_sql[MAX_TABLES];
    Py_ssize_t n_tables;
    const unsigned char *key;
    size_t key_n;
    ChainBatch **batches; /* in order; a rule's event index is within its own batch */
    ChainCache *cache;
    Py_ssize_t n_batches;
    /* out */
    sqlite3_int64 seq;
    char mac[65];
    const char *error; /* a failure that is not SQLite's */
} ChainJob;

/* The statement for `sql`, prepared once per connection (without the GIL; the caller resets it). */
static int prep(ChainCache *cache, sqlite3 *db, const char *sql, sqlite3_stmt **out) {
    for (int i = 0; i < CACHED_STATEMENTS; i++) {
        if (cache->sql[i] != NULL && strcmp(cache->sql[i], sql) == 0) {
            *out = cache->stmt[i];
            return SQLITE_OK;
        }
    }
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL);
    char *copy = rc == SQLITE_OK ? strdup(sql) : NULL;
    if (rc != SQLITE_OK || copy == NULL) {
        sqlite3_finalize(stmt);
        return rc != SQLITE_OK ? rc : SQLITE_NOMEM;
    }
    int slot = cache->next;
    cache->next = (cache->next + 1) % CACHED_STATEMENTS;
    sqlite3_finalize(cache->stmt[slot]);
    free(cache->sql[slot]);
    cache->sql[slot] = copy;
    cache->stmt[slot] = stmt;
    *out = stmt;
    return SQLITE_OK;
}

/* The HMAC-SHA256 context for `key`, kept while the key stays the same. */
static EVP_MAC_CTX *chain_mac(ChainCache *cache, const unsigned char *key, size_t key_n) {
    if (cache->mac != NULL && cache->key_n == key_n && memcmp(cache->key, key, key_n) == 0) return cache->mac;
    EVP_MAC_CTX_free(cache->mac);
    cache->mac = NULL;
    if (cache->key != NULL) OPENSSL_cleanse(cache->key, cache->key_n);
    free(cache->key);
    cache->key = NULL;
    if (cache->algo == NULL && (cache->algo = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL) return NULL;
    EVP_MAC_CTX *mac = EVP_MAC_CTX_new(cache->algo);
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
                           OSSL_PARAM_construct_end()};
    unsigned char *copy = malloc(key_n);
    if (mac == NULL || copy == NULL || !EVP_MAC_init(mac, key, key_n, params)) {
        EVP_MAC_CTX_free(mac);
        free(copy);
        return NULL;
    }
    memcpy(copy, key, key_n);
    cache->key = copy;
    cache->key_n = key_n;
    cache->mac = mac;
    return mac;
}

/* Without the GIL. SQLITE_DONE, an SQLite error code, or -1 with job->error set. */
static int run_chain(ChainJob *job) {
    sqlite3_stmt *st[5] = {NULL}, *tables[MAX_TABLES] = {NULL}, *commit = NULL;
    Hmac h = {0};
    char (*macs)[65] = NULL;
    sqlite3_int64 *seqs = NULL;
    Val **bodies = NULL;
    Py_ssize_t n_events = 0, n_bodies = 0;
    int rc = SQLITE_OK;
    for (int i = 0; i < 5 && rc == SQLITE_OK; i++) rc = prep(job->cache, job->db, job->sql[i], &st[i]);
    for (Py_ssize_t t = 0; t < job->n_tables && rc == SQLITE_OK; t++)
        rc = prep(job->cache, job->db, job->table_sql[t], &tables[t]);
    if (rc == SQLITE_OK) rc = prep(job->cache, job->db, "COMMIT", &commit);
    if (rc != SQLITE_OK) goto done;
    rc = -1;
    for (Py_ssize_t b = 0; b < job->n_batches; b++) {
        ChainBatch *batch = job->batches[b];
        for (Py_ssize_t i = 0; i < batch->n_events; i++) {
            ChainEvent *e = &batch->events[i];
            if (e->table >= job->n_tables || e->width + 3 != sqlite3_bind_parameter_count(tables[e->table])) {
                job->error = "an event's values do not fit its table's insert";
                goto done;
            }
        }
        n_events += batch->n_events;
        n_bodies += batch->n_bodies;
    }
    if (sqlite3_bind_parameter_count(st[2]) != RULE_WIDTH + 2 || sqlite3_bind_parameter_count(st[3]) != BODY_WIDTH) {
        job->error = "the rule or body insert takes other values";
        goto done;
    }
    macs = malloc((size_t)(n_events > 0 ? n_events : 1) * sizeof *macs);
    seqs = malloc((size_t)(n_events > 0 ? n_events : 1) * sizeof *seqs);
    bodies = malloc((size_t)(n_bodies > 0 ? n_bodies : 1) * sizeof *bodies);
    h.mac = chain_mac(job->cache, job->key, job->key_n);
    if (!macs || !seqs || !bodies || !h.mac) {
        job->error = "cannot set up HMAC-SHA256";
        goto done;
    }
    if ((rc = sqlite3_step(st[0])) != SQLITE_DONE) goto done;
    if ((rc = sqlite3_step(st[1])) != SQLITE_ROW) {
        if (rc == SQLITE_DONE) {
            job->error = "the ledger has no chain head";
            rc = -1;
        }
        goto done;
    }
    sqlite3_int64 seq = sqlite3_column_int64(st[1], 0);
    char prev[65];
    const unsigned char *head_mac = sqlite3_column_text(st[1], 1);
    if (head_mac == NULL || sqlite3_column_bytes(st[1], 1) != 64) {
        job->error = "the ledger's chain head has no valid MAC";
        rc = -1;
        goto done;
    }
    memcpy(prev, head_mac, 65);
    sqlite3_reset(st[1]);
    /* Bodies in id order: a batch's ids share a prefix greater than every earlier one, so they are
     * appended to the end of the index (see BodyNames). An id seen twice is the same content. */
    Py_ssize_t k = 0;
    for (Py_ssize_t b = 0; b < job->n_batches; b++) {
        for (Py_ssize_t i = 0; i < job->batches[b]->n_bodies; i++) bodies[k++] = &job->batches[b]->bodies[i * BODY_WIDTH];
    }
    common_prefix = shared_prefix(bodies, n_bodies);
    qsort(bodies, (size_t)n_bodies, sizeof *bodies, compare_body_ids);
    for (k = 0; k < n_bodies; k++) {
        if (k > 0 && compare_body_ids(&bodies[k - 1], &bodies[k]) == 0) continue;
        rc = bind_row(st[3], bodies[k], BODY_WIDTH);
        if (rc == SQLITE_OK) rc = sqlite3_step(st[3]);
        if (rc != SQLITE_DONE) goto done;
        sqlite3_reset(st[3]);
    }
    char head[160];
    Py_ssize_t first = 0; /* index of this batch's first event among all */
    for (Py_ssize_t b = 0; b < job->n_batches; b++) {
        ChainBatch *batch = job->batches[b];
        for (Py_ssize_t i = 0; i < batch->n_events; i++) {
            ChainEvent *e = &batch->events[i];
            sqlite3_stmt *ins = tables[e->table];
            Py_ssize_t at = first + i;
            seq++;
            int n = snprintf(head, sizeof head, "[\"%s\",%lld,\"%s\",", job->table_name[e->table], (long long)seq,
                             prev);
            if (n < 0 || (size_t)n >= sizeof head ||
                hmac_hex(&h, head, (size_t)n, e->json + 1, (size_t)(e->json_n - 1), macs[at]) < 0) {
                job->error = "cannot compute a row's MAC";
                rc = -1;
                goto done;
            }
            seqs[at] = seq;
            int width = (int)e->width;
            rc = sqlite3_bind_int64(ins, 1, seq);
            if (rc == SQLITE_OK) rc = bind_row_at(ins, e->vals, width, 2);
            if (rc == SQLITE_OK) rc = sqlite3_bind_text(ins, width + 2, prev, 64, SQLITE_TRANSIENT);
            if (rc == SQLITE_OK) rc = sqlite3_bind_text(ins, width + 3, macs[at], 64, SQLITE_STATIC);
            if (rc == SQLITE_OK) rc = sqlite3_step(ins);
            if (rc != SQLITE_DONE) goto done;
            sqlite3_reset(ins);
            memcpy(prev, macs[at], 65);
        }
        for (Py_ssize_t i = 0; i < batch->n_rules; i++) {
            ChainRule *r = &batch->rules[i];
            Py_ssize_t at = first + r->event;
            char mac[65];
            int n = snprintf(head, sizeof head, "[\"rule\",\"%s\",%lld,", macs[at], (long long)seqs[at]);
            if (n < 0 || (size_t)n >= sizeof head ||
                hmac_hex(&h, head, (size_t)n, r->json + 1, (size_t)(r->json_n - 1), mac) < 0) {
                job->error = "cannot compute a rule row's MAC";
                rc = -1;
                goto done;
            }
            rc = sqlite3_bind_int64(st[2], 1, seqs[at]);
            if (rc == SQLITE_OK) rc = bind_row_at(st[2], r->vals, RULE_WIDTH, 2);
            if (rc == SQLITE_OK) rc = sqlite3_bind_text(st[2], RULE_WIDTH + 2, mac, 64, SQLITE_TRANSIENT);
            if (rc == SQLITE_OK) rc = sqlite3_step(st[2]);
            if (rc != SQLITE_DONE) goto done;
            sqlite3_reset(st[2]);
        }
        first += batch->n_events;
    }
    rc = sqlite3_bind_int64(st[4], 1, seq);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st[4], 2, prev, 64, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK) rc = sqlite3_step(st[4]);
    if (rc == SQLITE_DONE) rc = sqlite3_step(commit);
    if (rc == SQLITE_DONE) {
        job->seq = seq;
        memcpy(job->mac, prev, 65);
    }
done:
    /* the statements stay prepared in the cache, ready and holding no text of this batch */
    for (int i = 0; i < 5; i++) {
        if (st[i] != NULL) sqlite3_reset(st[i]), sqlite3_clear_bindings(st[i]);
    }
    for (Py_ssize_t t = 0; t < job->n_tables; t++) {
        if (tables[t] != NULL) sqlite3_reset(tables[t]), sqlite3_clear_bindings(tables[t]);
    }
    if (commit != NULL) sqlite3_reset(commit);
    free(h.buf);
    free(macs);
    free(seqs);
    free(bodies);
    return rc;
}

/* One write_chain call: the job and what keeps its texts, key and batches alive. */
typedef struct ChainCall {
    ChainJob job;
    PyObject *batches; /* the batches (a sequence holding them) */
    PyObject *tables;
    PyObject *sql[5];
    unsigned char *key; /* a copy: the caller's bytes may go before the batch is written */
    int rc;
} ChainCall;

/* Under the GIL. */
static void chain_call_clear(ChainCall *call) {
    PyMem_Free(call->job.batches);
    call->job.batches = NULL;
    Py_CLEAR(call->batches);
    Py_CLEAR(call->tables);
    for (int i = 0; i < 5; i++) Py_CLEAR(call->sql[i]);
    if (call->key != NULL) OPENSSL_cleanse(call->key, call->job.key_n);
    PyMem_Free(call->key);
    call->key = NULL;
}

/* write_chain's arguments into `call`; -1 with an exception set (call cleared) on bad input. */
static int chain_call_init(Conn *self, PyObject *args, ChainCall *call) {
    Py_buffer key;
    PyObject *batches_obj, *tables_obj, *sql_obj[5];
    if (!PyArg_ParseTuple(args, "y*OUUOUUU", &key, &batches_obj, &sql_obj[0], &sql_obj[1], &tables_obj, &sql_obj[2],
                          &sql_obj[3], &sql_obj[4]))
        return -1;
    ChainJob *job = &call->job;
    if (check_open(self) < 0) goto fail;
    if (key.len == 0) {
        PyErr_SetString(PyExc_ValueError, "empty key");
        goto fail;
    }
    if ((call->key = PyMem_Malloc((size_t)key.len)) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(call->key, key.buf, (size_t)key.len);
    job->key = call->key;
    job->key_n = (size_t)key.len;
    call->batches = PySequence_Fast(batches_obj, "batches must be a sequence of prepare_chain's batches");
    if (call->batches == NULL) goto fail;
    job->n_batches = PySequence_Fast_GET_SIZE(call->batches);
    job->batches = PyMem_New(ChainBatch *, job->n_batches > 0 ? job->n_batches : 1);
    if (job->batches == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t b = 0; b < job->n_batches; b++) {
        PyObject *item = PySequence_Fast_GET_ITEM(call->batches, b);
        if (!PyObject_TypeCheck(item, &ChainBatchType)) {
            PyErr_SetString(PyExc_TypeError, "batches must be a sequence of prepare_chain's batches");
            goto fail;
        }
        job->batches[b] = (ChainBatch *)item;
    }
    call->tables = PySequence_Fast(tables_obj, "tables must be a sequence of (name, insert_sql)");
    if (call->tables == NULL) goto fail;
    job->n_tables = PySequence_Fast_GET_SIZE(call->tables);
    if (job->n_tables > MAX_TABLES) {
        PyErr_SetString(PyExc_ValueError, "too many tables");
        goto fail;
    }
    for (Py_ssize_t t = 0; t < job->n_tables; t++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(call->tables, t);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0)) ||
            !PyUnicode_Check(PyTuple_GET_ITEM(pair, 1))) {
            PyErr_SetString(PyExc_TypeError, "each table must be a (name, insert_sql) tuple");
            goto fail;
        }
        job->table_name[t] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair, 0));
        job->table_sql[t] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair, 1));
        if (job->table_name[t] == NULL || job->table_sql[t] == NULL) goto fail;
        if (strlen(job->table_name[t]) > 64) {
            PyErr_SetString(PyExc_ValueError, "table name too long");
            goto fail;
        }
    }
    for (int i = 0; i < 5; i++) {
        call->sql[i] = Py_NewRef(sql_obj[i]);
        if ((job->sql[i] = PyUnicode_AsUTF8(sql_obj[i])) == NULL) goto fail;
    }
    job->db = self->db;
    job->cache = &self->cache;
    PyBuffer_Release(&key);
    return 0;
fail:
    PyBuffer_Release(&key);
    chain_call_clear(call);
    return -1;
}

/* After run_chain, under the GIL: (seq, mac), or the error raised. */
static PyObject *chain_call_result(Conn *self, ChainCall *call) {
    if (call->rc == SQLITE_DONE) return Py_BuildValue("(Ls)", (long long)call->job.seq, call->job.mac);
    if (call->rc == -1) {
        PyErr_SetString(BulkError, call->job.error ? call->job.error : "the ledger batch failed");
        return NULL;
    }
    int code = sqlite3_extended_errcode(self->db);
    return raise_db(code ? code : call->rc, sqlite3_errmsg(self->db));
}

static PyObject *Conn_write_chain(Conn *self, PyObject *args) {
    ChainCall call = {0};
    if (chain_call_init(self, args, &call) < 0) return NULL;
    self->busy = 1;
    /* the batches stay alive: `call` holds them until this returns */
    Py_BEGIN_ALLOW_THREADS
    call.rc = run_chain(&call.job);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    PyObject *result = chain_call_result(self, &call);
    chain_call_clear(&call);
    return result;
}

static void *chain_thread(void *arg) {
    ChainWorker *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->job == NULL && !w->stop) pthread_cond_wait(&w->wake, &w->lock);
        ChainCall *call = w->job;
        if (call == NULL) break; /* stopped with nothing handed over */
        pthread_mutex_unlock(&w->lock);
        call->rc = run_chain(&call->job);
        pthread_mutex_lock(&w->lock);
        w->job = NULL;
        w->finished = 1;
        pthread_cond_signal(&w->done);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Under the GIL: the connection's ChainWorker, started if it is not yet; NULL (errno set) if it cannot be. */
static ChainWorker *worker_for(Conn *self) {
    if (self->worker != NULL) return self->worker;
    ChainWorker *w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->done, NULL);
    if (pthread_create(&w->thread, NULL, chain_thread, w) != 0) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->wake);
        pthread_cond_destroy(&w->done);
        free(w);
        return NULL;
    }
    self->worker = w;
    return w;
}

/* Without the GIL, with no batch pending (close_db joins it first): end the connection's ChainWorker. */
static void worker_stop(Conn *self) {
    ChainWorker *w = self->worker;
    if (w == NULL) return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->done);
    free(w);
    self->worker = NULL;
}

/* start_chain: write_chain on a thread of its own (a C thread: it never needs the GIL, so it starts
 * at once and nobody waits for it to hand the GIL back). The connection refuses every other call
 * until finish_chain. */
static PyObject *Conn_start_chain(Conn *self, PyObject *args) {
    ChainCall *call = PyMem_Calloc(1, sizeof *call);
    if (call == NULL) return PyErr_NoMemory();
    if (chain_call_init(self, args, call) < 0) {
        PyMem_Free(call);
        return NULL;
    }
    ChainWorker *w = worker_for(self);
    if (w == NULL) {
        chain_call_clear(call);
        PyMem_Free(call);
        PyErr_SetString(PyExc_RuntimeError, "cannot start a thread for the ledger batch");
        return NULL;
    }
    self->busy = 1;
    pthread_mutex_lock(&w->lock); /* the worker holds it only between batches: no wait with the GIL held */
    w->finished = 0;
    w->job = call;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    self->pending = call;
    Py_RETURN_NONE;
}

/* Wait for the batch start_chain began (without the GIL); NULL if there was none. */
static ChainCall *join_pending(Conn *self) {
    ChainCall *call = self->pending;
    if (call == NULL) return NULL;
    self->pending = NULL; /* this thread owns it now: a second caller finds nothing to join */
    ChainWorker *w = self->worker;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&w->lock);
    while (!w->finished) pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    return call;
}

/* The batch start_chain began, waited for and forgotten (the connection is being closed). */
static void drop_pending(Conn *self) {
    ChainCall *call = join_pending(self);
    if (call == NULL) return;
    chain_call_clear(call);
    PyMem_Free(call);
}

static PyObject *Conn_finish_chain(Conn *self, PyObject *Py_UNUSED(ignored)) {
    ChainCall *call = join_pending(self);
    if (call == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no ledger batch is being written");
        return NULL;
    }
    PyObject *result = chain_call_result(self, call);
    chain_call_clear(call);
    PyMem_Free(call);
    return result;
}

static PyObject *Conn_writing(Conn *self, void *Py_UNUSED(closure)) {
    return PyBool_FromLong(self->pending != NULL);
}

static PyObject *Conn_in_transaction(Conn *self, void *Py_UNUSED(closure)) {
    return PyBool_FromLong(self->db != NULL && !sqlite3_get_autocommit(self->db));
}

static PyMethodDef Conn_methods[] = {
    {"execute", (PyCFunction)Conn_execute, METH_VARARGS, "execute(sql, params=()) -> list of row tuples"},
    {"executemany", (PyCFunction)Conn_executemany, METH_VARARGS,
     "executemany(sql, rows): every row through one prepared statement, the GIL released"},
    {"write_chain", (PyCFunction)Conn_write_chain, METH_VARARGS,
     "write_chain(key, batches, begin, head, tables, rule_insert, body_insert, update_head) -> (seq, mac)"},
    {"start_chain", (PyCFunction)Conn_start_chain, METH_VARARGS,
     "start_chain(key, batches, ...): write_chain on a thread of its own; finish_chain() waits for it"},
    {"finish_chain", (PyCFunction)Conn_finish_chain, METH_NOARGS,
     "finish_chain() -> (seq, mac): wait for the batch start_chain began (its error is raised here)"},
    {"checkpoint_in_background", (PyCFunction)Conn_checkpoint_in_background, METH_VARARGS,
     "checkpoint_in_background(threshold, limit): WAL checkpoints on a thread of their own from `threshold` "
     "frames; the writer checkpoints itself at `limit`"},
    {"close", (PyCFunction)Conn_close, METH_NOARGS, "close the connection (an open transaction is rolled back)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Conn_getset[] = {
    {"in_transaction", (getter)Conn_in_transaction, NULL, "whether a transaction is open", NULL},
    {"writing", (getter)Conn_writing, NULL, "whether a batch start_chain began awaits finish_chain", NULL},
    {"background_checkpoints", (getter)Conn_checkpoints, NULL,
     "checkpoints the background thread ran (None: it is not running)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ConnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mcpwall.ledger._bulk.Connection",
    .tp_basicsize = sizeof(Conn),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A SQLite connection whose executemany runs without the GIL.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Conn_init,
    .tp_dealloc = (destructor)Conn_dealloc,
    .tp_methods = Conn_methods,
    .tp_getset = Conn_getset,
};

static PyObject *sourceid(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored)) {
    return PyUnicode_FromString(sqlite3_sourceid());
}

static PyMethodDef module_methods[] = {
    {"sourceid", sourceid, METH_NOARGS, "the linked SQLite's source id"},
    {"prepare_chain", prepare_chain, METH_VARARGS,
     "prepare_chain(built_rows, table_index, created, dumps) -> a batch for Connection.write_chain"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_bulk", "SQLite batches inserted without the GIL (see _bulk.c).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__bulk(void) {
    if (PyType_Ready(&ConnType) < 0 || PyType_Ready(&ChainBatchType) < 0) return NULL;
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {{&attr_table, "table"}, {&attr_values, "values"}, {&attr_values_json, "values_json"},
                 {&attr_rules, "rules"}, {&attr_bodies, "bodies"}, {&attr_decision_id, "decision_id"}, {&attr_ts, "ts"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL) return NULL;
    }
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    BulkError = PyErr_NewException("mcpwall.ledger._bulk.Error", PyExc_Exception, NULL);
    if (BulkError == NULL || PyModule_AddObjectRef(m, "Error", BulkError) < 0 ||
        PyModule_AddObjectRef(m, "Connection", (PyObject *)&ConnType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
