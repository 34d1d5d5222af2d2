"""Runs a kvir launch plan from its manifests (kvir-translate's output).

A plan (the "plan" object of every manifest) names the op's arguments with
their shapes, the sizes derived from them (an argument's axis, or an
expression over earlier sizes), the split-KV work schedule where there is
one, and the kernels with the condition under which each runs (always,
unsplit, split). Kernel parameters follow the manifest's param_abi: a buffer
is a bare device pointer (8 bytes), an index size 8 bytes, an f32 scalar 4,
then each buffer's dynamic extents (role "extent"), 8 bytes each, valued by
their expressions over the plan's sizes. This module does that
host-side work for any plan, over device buffers given as
(pointer, shape) pairs; the schedule comes from kvir's runtime library
(libkvir_runtime.so: kvir_schedule_work, no LLVM).
"""
import ctypes
import glob
import json
import os
import re
import struct


class PlanError(RuntimeError):
    pass


def _size_functions():
    return {
        "min": min,
        "max": max,
        "ceildiv": lambda a, b: -(-a // b),
        "floordiv": lambda a, b: a // b,
    }


def eval_size(expr, env):
    """An integer, or a size expression (+, -, *, min/max/ceildiv/floordiv,
    names of earlier sizes) evaluated over `env`."""
    if isinstance(expr, int):
        return expr
    if not re.fullmatch(r"[\w\s+\-*(),]*", expr):
        raise PlanError(f"unexpected size expression '{expr}'")
    scope = dict(_size_functions())
    scope.update(env)
    try:
        return int(eval(expr, {"__builtins__": {}}, scope))
    except NameError as e:
        raise PlanError(f"size expression '{expr}': {e}")


def csr_lengths(indptr, last_page_len, page_size):
    """Each request's kv_len of CSR page tables: its pages less one, full,
    and the last page's tokens (0 without pages)."""
    return [(indptr[b + 1] - indptr[b] - 1) * page_size + last_page_len[b]
            if indptr[b + 1] > indptr[b] else 0
            for b in range(len(indptr) - 1)]


def _host_ints(x):
    """The integers of a tensor or array (a device tensor is copied)."""
    if hasattr(x, "cpu"):
        x = x.cpu()
    return [int(v) for v in x.tolist()]


class Plan:
    """The launch plan of op `op` (e.g. "kv.decode") in `directory`, or the
    plan named `name` (a module with several plans of one op: a cascade's
    levels)."""

    def __init__(self, directory, op=None, name=None):
        self.directory = directory
        self.kernels = {}
        self.plan = None
        for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
            m = json.load(open(path))
            plan = m.get("plan", {})
            if (plan.get("name") != name if name is not None
                    else plan.get("op") != op):
                continue
            self.plan = m["plan"]
            self.kernels[m["kernel"]] = m
            self.ptx_file = os.path.join(directory, m["ptx"])
        if self.plan is None:
            raise PlanError(f"no manifests of {name or op} in {directory}")
        self.ptx = open(self.ptx_file).read()
        self.args = {a["name"]: a for a in self.plan["args"]}

    def sizes(self, shapes, extra=None):
        """The plan's sizes from the arguments' shapes ({name: shape})."""
        env = dict(extra or {})
        for s in self.plan["sizes"]:
            if "from" in s:
                src = s["from"]
                env[s["name"]] = int(shapes[src["arg"]][src["axis"]])
            else:
                env[s["name"]] = eval_size(s["value"], env)
        return env

    def shape_of(self, arg, env):
        return [eval_size(d, env) for d in self.args[arg]["shape"]]

    def host_inputs(self, tensors, env):
        """The work schedule's host inputs (kv_lengths, qo_indptr) read
        from the plan's input tensors ({name: tensor}) as the manifest's
        lengths_from / qo_indptr_from say (device tensors are copied to the
        host); (None, None) without a schedule."""
        s = self.plan.get("schedule")
        if s is None:
            return None, None
        src = s.get("lengths_from")
        if src is None:
            raise PlanError(f"plan {self.plan['name']}: its manifest does not "
                            f"say where the kv lengths come from; pass them")
        batch = env[s["batch"]]
        kind = src["kind"]
        if kind == "csr":
            lens = csr_lengths(_host_ints(tensors[src["indptr"]]),
                               _host_ints(tensors[src["last_page_len"]]),
                               src["page_size"])
        elif kind == "copy":
            lens = _host_ints(tensors[src["of"]])
        elif kind == "indptr":
            ip = _host_ints(tensors[src["of"]])
            lens = [ip[b + 1] - ip[b] for b in range(len(ip) - 1)]
        elif kind == "columns":
            lens = [int(tensors[src["of"]].shape[1])] * batch
        else:
            raise PlanError(f"lengths_from: unknown kind '{kind}'")
        rows = None
        if "qo_indptr_from" in s:
            rows = _host_ints(tensors[s["qo_indptr_from"]])
        return lens[:batch], rows

    def schedule(self, runtime, kv_lengths, env, qo_indptr=None):
        """Runs the plan's work schedule on the host (kvir_schedule_work,
        or kvir_schedule_prefill_work, which also reads the requests' query
        row offsets `qo_indptr`): returns (work_items, merge_indptr) as
        bytes and sets the count (and a prefill's query tile count)."""
        s = self.plan.get("schedule")
        if s is None:
            return None
        if "qo_indptr" in s:
            return self._prefill_schedule(runtime, s, kv_lengths, env,
                                          qo_indptr)
        batch = env[s["batch"]]
        max_items = self.shape_of(s["items"], env)[0]
        items = (ctypes.c_int32 * (4 * max_items))()
        # Fixed grids: merge_indptr holds max_batch + 1 entries, padded.
        rows = env[s["max_batch"]] if "max_batch" in s else batch
        if batch > rows:
            raise PlanError(f"a batch of {batch} requests, but the fixed "
                            f"grids take at most {rows}")
        merge = (ctypes.c_int32 * (rows + 1))()
        lens = (ctypes.c_int32 * max(1, batch))(*kv_lengths)
        fn = runtime.kvir_schedule_work
        fn.restype = ctypes.c_int64
        i64 = ctypes.c_int64
        count = fn(lens, i64(batch), i64(s["window_left"]),
                   i64(s["target_items"]), i64(s["granule"]),
                   i64(s["min_chunk"]), i64(env[s["uniform_chunks"]]),
                   i64(max_items), items, merge)
        if count < 0:
            raise PlanError(f"kvir_schedule_work failed: {count}")
        if "max_batch" in s:
            pad = runtime.kvir_schedule_pad_batch
            pad.restype = ctypes.c_int64
            if pad(i64(batch), i64(rows), merge) != 0:
                raise PlanError("kvir_schedule_pad_batch failed")
        env[s["count"]] = int(count)
        return bytes(items), bytes(merge)

    def _prefill_schedule(self, runtime, s, kv_lengths, env, qo_indptr):
        batch = env[s["batch"]]
        if kv_lengths is None or qo_indptr is None:
            raise PlanError("a prefill's work schedule needs the requests' "
                            "kv lengths and query row offsets on the host")
        if len(kv_lengths) != batch or len(qo_indptr) != batch + 1:
            raise PlanError(f"prefill schedule: {len(kv_lengths)} kv lengths "
                            f"and {len(qo_indptr)} qo_indptr entries for a "
                            f"batch of {batch}")
        # The rows of the buffers (at least qo_indptr[-1]: rows past it
        # belong to no request).
        nnz = self.shape_of(s["merge_indptr"], env)[0] - 1
        max_items = self.shape_of(s["items"], env)[0]
        items = (ctypes.c_int32 * (5 * max_items))()
        merge = (ctypes.c_int32 * (nnz + 1))()
        lens = (ctypes.c_int32 * max(1, batch))(*kv_lengths)
        qo = (ctypes.c_int32 * (batch + 1))(*qo_indptr)
        tiles = ctypes.c_int64(0)
        # A fixed workspace (CUDA graphs) bounds the partial-state rows.
        limit = env[s["workspace_limit"]] if "workspace_limit" in s else -1
        fn = runtime.kvir_schedule_prefill_work
        fn.restype = ctypes.c_int64
        i64 = ctypes.c_int64
        count = fn(qo, lens, i64(batch), i64(nnz), i64(s["tile_rows"]),
                   i64(1 if s["causal"] else 0), i64(s["window_left"]),
                   i64(s["target_items"]), i64(s["granule"]),
                   i64(s["min_chunk"]), i64(max_items), i64(limit), items,
                   merge, ctypes.byref(tiles))
        if count < 0:
            raise PlanError(f"kvir_schedule_prefill_work failed: {count}")
        env[s["count"]] = int(count)
        env[s["tiles"]] = int(tiles.value)
        env[s["workspace_rows"]] = int(merge[nnz])
        return bytes(items), bytes(merge)

    def fixed_grids(self):
        """Whether the grids and buffers follow the sizes alone (CUDA
        graphs: every kernel always launches, whatever the schedule)."""
        return self.plan.get("schedule") is not None and all(
            k["when"] == "always" for k in self.plan["kernels"])

    def split(self, env):
        """Whether the split kernels run (else the direct one)."""
        s = self.plan.get("schedule")
        if s is not None:
            return eval_size(s["split_when"].replace(">", "-"), env) > 0
        if "partitions" in self.plan:
            return env[self.plan["partitions"]] > 1
        return False

    @staticmethod
    def _extent(p, buffers, env):
        """The value of extent parameter `p`: a buffer's own stride (in
        elements) when given, else the manifest's expression (null for the
        strides of a strided view, which only the buffer knows)."""
        buf = buffers.get(p["of"])
        if p["extent"] == "stride" and buf is not None and len(buf) > 2:
            return int(buf[2][p["axis"]])
        if p["value"] is None:
            raise PlanError(f"{p['of']}: a strided view; pass its buffer as "
                            f"(pointer, shape, strides)")
        return eval_size(p["value"], env)

    def launches(self, buffers, env):
        """[(kernel, grid, block, dynamic shared bytes, [param bytes],
        dependent)] for buffers {name: (device pointer, shape[, strides in
        elements])} (contiguous when no strides are given); `dependent`: the
        kernel is launched as a programmatic dependent of the one before it
        (the plan's "programmatic_dependent")."""
        split = self.split(env)
        out = []
        for k in self.plan["kernels"]:
            when = k["when"]
            if (when == "split") != split and when != "always":
                continue
            m = self.kernels[k["kernel"]]
            params = []
            for p in m["params"]:
                if p["role"] == "extent":
                    params.append(struct.pack("<q", self._extent(p, buffers,
                                                                 env)))
                    continue
                if p["shape"] == [] and p["dtype"] in ("index", "i64"):
                    params.append(struct.pack("<q", env[p["name"]]))
                    continue
                if p["shape"] == [] and p["dtype"] == "f32":
                    params.append(struct.pack("<f", float(env[p["name"]])))
                    continue
                if p["name"] not in buffers:
                    raise PlanError(f"{m['kernel']}: no buffer for "
                                    f"parameter {p['name']}")
                ptr, shape = buffers[p["name"]][:2]
                expect = [eval_size(d, env) for d in p["shape"]]
                if list(shape) != expect:
                    raise PlanError(f"{p['name']}: shape {list(shape)}, the "
                                    f"plan expects {expect}")
                params.append(struct.pack("<Q", ptr))
            if len(params) != m["num_params"]:
                raise PlanError(f"{m['kernel']}: {len(params)} parameters, "
                                f"the manifest says {m['num_params']}")
            grid = [eval_size(g, env) for g in m["grid"]]
            out.append((m["kernel"], grid, m["block"],
                        m["dynamic_shared_bytes"], params,
                        bool(k.get("programmatic_dependent", False))))
        return out
