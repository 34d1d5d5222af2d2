"""FlexAttention's API on kvir's kernels.

`score_mod(score, b, h, q_idx, kv_idx)` and `mask_mod(b, h, q_idx, kv_idx)`
are ordinary Python functions, as torch's `flex_attention` takes them. kvir
calls each once with symbolic arguments and records what it computes as
the body of a `kv.prefill` region (`score_mod { ... }`, `mask_mod { ... }`,
docs/Variants.md): arithmetic and comparisons, `&`, `|`, `~`,
`torch.where`, `torch.tanh` / `exp` / `exp2` / `log` / `log2` / `sqrt` /
`rsqrt` / `sigmoid` / `abs` / `floor` / `minimum` / `maximum` / `clamp`, and
indexing of captured torch tensors by those arguments (a tensor becomes an
argument of the kernel). Code the trace cannot record -- Python control
flow on a traced value, an operation outside that list -- raises
`TraceError` with the function's line and the reason.

The regions travel in the spec (its "score_mod", "mask_mod" and "captures"
fields, docs/Frameworks.md), so FlashInfer-style wrappers take them too
(`plan(..., score_mod=, mask_mod=)`). flex_attention itself is a kv.prefill
of B requests of L query rows over a paged view of the dense K and V (each
request's keys one page of S slots, HND: no copy of K or V): mask_mod also
skips the K/V tiles it hides from a whole query tile, as FlexAttention's
block mask does.
"""
import json
import os
import re
import traceback

import numpy as np

from ._wrapping import _Executor, _backend, _state_buffers
from .tensors import Arg, dtype_name

__all__ = ["BlockMask", "TraceError", "create_block_mask", "flex_attention"]

_THIS_FILE = __file__


class TraceError(ValueError):
    """A score_mod / mask_mod kvir cannot record, with the line."""


def _where():
    """'file:line' of the user's code that the trace is running (the
    innermost frame outside this file and torch)."""
    for frame in reversed(traceback.extract_stack()):
        if frame.filename != _THIS_FILE and \
                f"{os.sep}torch{os.sep}" not in frame.filename:
            return f"{frame.filename}:{frame.lineno}"
    return "<unknown>"


def _fail(reason, fn=None):
    """Raises TraceError at the user's line (or `fn`'s definition, for what
    a whole function did)."""
    where = _where() if fn is None else \
        f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
    raise TraceError(f"{where}: {reason}")


def _f32(x):
    """An f32 constant as MLIR writes it (9 significant digits round-trip
    f32; the '.' makes it a float literal)."""
    x = float(np.float32(x))
    if x != x or x in (float("inf"), float("-inf")):
        bits = int(np.float32(x).view(np.uint32))
        return f"0x{bits:08X}"
    return f"{x:.9e}"


class _Value:
    """A traced value: an SSA name of kind f32, index, i1, i32 or i64."""

    __slots__ = ("tracer", "name", "kind")

    def __init__(self, tracer, name, kind):
        self.tracer, self.name, self.kind = tracer, name, kind

    # Python control flow and conversions see no value during the trace.
    def __bool__(self):
        _fail("Python control flow on a traced value (if / while / and / "
              "or / not): the value is known only inside the kernel; use "
              "torch.where, & and |")

    def _concrete(self, *_):
        _fail("a traced value used as a Python number (int(), float(), an "
              "index into a Python sequence): it is known only inside the "
              "kernel")
    __int__ = __float__ = __index__ = _concrete

    def __add__(self, o):
        return self.tracer.arith("add", self, o)

    def __radd__(self, o):
        return self.tracer.arith("add", o, self)

    def __sub__(self, o):
        return self.tracer.arith("sub", self, o)

    def __rsub__(self, o):
        return self.tracer.arith("sub", o, self)

    def __mul__(self, o):
        return self.tracer.arith("mul", self, o)

    def __rmul__(self, o):
        return self.tracer.arith("mul", o, self)

    def __truediv__(self, o):
        return self.tracer.divide(self, o)

    def __rtruediv__(self, o):
        return self.tracer.divide(o, self)

    def __floordiv__(self, o):
        return self.tracer.floordiv(self, o)

    def __rfloordiv__(self, o):
        return self.tracer.floordiv(o, self)

    def __mod__(self, o):
        return self.tracer.mod(self, o)

    def __rmod__(self, o):
        return self.tracer.mod(o, self)

    def __neg__(self):
        return self.tracer.arith("sub", 0, self)

    def __abs__(self):
        return self.tracer.unary("abs", self)

    def __lt__(self, o):
        return self.tracer.compare("lt", self, o)

    def __le__(self, o):
        return self.tracer.compare("le", self, o)

    def __gt__(self, o):
        return self.tracer.compare("gt", self, o)

    def __ge__(self, o):
        return self.tracer.compare("ge", self, o)

    def __eq__(self, o):
        return self.tracer.compare("eq", self, o)

    def __ne__(self, o):
        return self.tracer.compare("ne", self, o)

    __hash__ = None

    def __and__(self, o):
        return self.tracer.logic("andi", self, o)

    __rand__ = __and__

    def __or__(self, o):
        return self.tracer.logic("ori", self, o)

    __ror__ = __or__

    def __xor__(self, o):
        return self.tracer.logic("xori", self, o)

    __rxor__ = __xor__

    def __invert__(self):
        # Booleans: not; integers: -x - 1, as Python's and torch's ~.
        return self.tracer.logic("xori", self,
                                 True if self.kind == "i1" else -1)

    # torch functions on traced values (torch's __torch_function__).
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        tracer = next(a.tracer for a in _flatten(args) if isinstance(a, _Value))
        return tracer.torch_call(func, args, kwargs or {})


def _flatten(args):
    for a in args:
        if isinstance(a, (tuple, list)):
            yield from _flatten(a)
        else:
            yield a


_UNARY = {"tanh": "math.tanh", "exp": "math.exp", "exp2": "math.exp2",
          "log": "math.log", "log2": "math.log2", "sqrt": "math.sqrt",
          "rsqrt": "math.rsqrt", "floor": "math.floor", "abs": "math.absf"}
_COMPARE_F = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge",
              "eq": "oeq", "ne": "une"}
_COMPARE_I = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge",
              "eq": "eq", "ne": "ne"}
# A captured tensor's dtype: (the element type it is stored as, the kind a
# load yields, whether a narrower integer is sign-extended).
_TENSOR_ELEMENTS = {"float32": ("f32", "f32", True),
                    "float16": ("f16", "f32", True),
                    "bfloat16": ("bf16", "f32", True),
                    "int32": ("i32", "i32", True),
                    "int64": ("i64", "i64", True), "bool": ("i8", "i1", False),
                    "uint8": ("i8", "i32", False),
                    "int8": ("i8", "i32", True), "int16": ("i16", "i32", True)}


class _Captures:
    """Tensors the regions index: kernel arguments %cap0, %cap1, ... in the
    order the trace first reads them (score_mod's, then mask_mod's: the
    order of the kernel's capture arguments)."""

    def __init__(self):
        self.tensors, self.types = [], []

    def name(self, tensor):
        """The capture's argument name, memref type and _TENSOR_ELEMENTS
        entry."""
        dtype = str(tensor.dtype).replace("torch.", "")
        for i, t in enumerate(self.tensors):
            if t is tensor:
                return f"%cap{i}", self.types[i], _TENSOR_ELEMENTS[dtype]
        if dtype not in _TENSOR_ELEMENTS:
            _fail(f"a captured tensor of dtype {dtype}: kvir's regions read "
                  f"float32, float16, bfloat16, integer or bool tensors")
        if tensor.dim() == 0:
            _fail("a captured 0-dim tensor: index a 1-element tensor, or "
                  "use a Python number")
        stored = _TENSOR_ELEMENTS[dtype][0]
        shape = "x".join(str(int(d)) for d in tensor.shape)
        self.tensors.append(tensor)
        self.types.append(f"memref<{shape}x{stored}>")
        return (f"%cap{len(self.tensors) - 1}", self.types[-1],
                _TENSOR_ELEMENTS[dtype])

    def buffers(self):
        """The captured tensors as the kernel reads them (contiguous; bool
        as bytes)."""
        import torch
        out = []
        for t in self.tensors:
            t = t.detach().contiguous()
            if t.dtype == torch.bool:
                t = t.to(torch.uint8)
            out.append(t)
        return out


class _Tracer:
    """Records a region's body as MLIR lines."""

    def __init__(self, captures):
        self.lines, self.count = [], 0
        self.captures = captures

    def emit(self, text, kind):
        name = f"%t{self.count}"
        self.count += 1
        self.lines.append(f"    {name} = {text}")
        return _Value(self, name, kind)

    def constant(self, x, kind):
        if kind == "f32":
            return self.emit(f"arith.constant {_f32(x)} : f32", "f32")
        if kind == "i1":
            return self.emit(f"arith.constant {'true' if x else 'false'}",
                             "i1")
        return self.emit(f"arith.constant {int(x)} : {kind}", kind)

    def value(self, x, like="index"):
        """`x` as a traced value: a Python number becomes a constant of
        the kind of the value it meets."""
        if isinstance(x, _Value):
            return x
        if isinstance(x, bool):
            return self.constant(x, "i1")
        if isinstance(x, int):
            return self.constant(x, like if like != "i1" else "index")
        if isinstance(x, float):
            return self.constant(x, "f32")
        if hasattr(x, "dim") and x.dim() == 0:
            return self.value(x.item(), like)
        _fail(f"a {type(x).__name__} in a traced expression: kvir's regions "
              f"take traced values, Python numbers and indexed tensors")

    def to_f32(self, v):
        if v.kind == "f32":
            return v
        if v.kind == "i1":
            return self.emit(f"arith.uitofp {v.name} : i1 to f32", "f32")
        if v.kind == "index":
            v = self.emit(f"arith.index_cast {v.name} : index to i64", "i64")
        return self.emit(f"arith.sitofp {v.name} : {v.kind} to f32", "f32")

    def to_int(self, v, kind):
        if v.kind == kind:
            return v
        if v.kind == "i1":
            if kind == "index":
                v = self.emit(f"arith.extui {v.name} : i1 to i64", "i64")
                return self.emit(f"arith.index_cast {v.name} : i64 to index",
                                 "index")
            return self.emit(f"arith.extui {v.name} : i1 to {kind}", kind)
        if "index" in (v.kind, kind):
            return self.emit(f"arith.index_cast {v.name} : {v.kind} to "
                             f"{kind}", kind)
        return self.emit(f"arith.extsi {v.name} : {v.kind} to {kind}", kind)

    def unify(self, a, b):
        """Both operands of one kind: f32 if either is, else the wider
        integer (index over i64 over i32)."""
        like = next((x.kind for x in (a, b) if isinstance(x, _Value)),
                    "index")
        if isinstance(a, float) or isinstance(b, float):
            like = "f32"
        a, b = self.value(a, like), self.value(b, like)
        if "f32" in (a.kind, b.kind):
            return self.to_f32(a), self.to_f32(b), "f32"
        order = ["i1", "i32", "i64", "index"]
        kind = max(a.kind, b.kind, key=order.index)
        if kind == "i1":
            kind = "index"
        return self.to_int(a, kind), self.to_int(b, kind), kind

    def arith(self, op, a, b):
        a, b, kind = self.unify(a, b)
        suffix = "f" if kind == "f32" else "i"
        return self.emit(f"arith.{op}{suffix} {a.name}, {b.name} : {kind}",
                         kind)

    def divide(self, a, b):
        a, b, _ = self.unify(a, b)
        a, b = self.to_f32(a), self.to_f32(b)
        return self.emit(f"arith.divf {a.name}, {b.name} : f32", "f32")

    def floordiv(self, a, b):
        a, b, kind = self.unify(a, b)
        if kind == "f32":
            return self.unary("floor", self.divide(a, b))
        return self.emit(f"arith.floordivsi {a.name}, {b.name} : {kind}",
                         kind)

    def mod(self, a, b):
        # Python's: a - b * floor(a / b), the sign of b.
        a, b, kind = self.unify(a, b)
        return self.arith("sub", a, self.arith("mul", b,
                                               self.floordiv(a, b)))

    def compare(self, op, a, b):
        a, b, kind = self.unify(a, b)
        if kind == "f32":
            return self.emit(f"arith.cmpf {_COMPARE_F[op]}, {a.name}, "
                             f"{b.name} : f32", "i1")
        return self.emit(f"arith.cmpi {_COMPARE_I[op]}, {a.name}, {b.name} "
                         f": {kind}", "i1")

    def logic(self, op, a, b):
        if (both := self._booleans(a, b)) is not None:
            return self.emit(f"arith.{op} {both[0].name}, {both[1].name} : "
                             f"i1", "i1")
        a, b, kind = self.unify(a, b)
        if kind == "f32":
            _fail("&, |, ^ or ~ on a float: they take booleans (a "
                  "comparison's result) or integers")
        return self.emit(f"arith.{op} {a.name}, {b.name} : {kind}", kind)

    def unary(self, fn, v):
        v = self.value(v, "f32")
        if fn == "abs" and v.kind != "f32":
            return self.emit(f"math.absi {v.name} : {v.kind}", v.kind)
        v = self.to_f32(v)
        if fn == "sigmoid":
            e = self.unary("exp", self.arith("sub", 0.0, v))
            return self.divide(1.0, self.arith("add", 1.0, e))
        return self.emit(f"{_UNARY[fn]} {v.name} : f32", "f32")

    def _booleans(self, a, b):
        """Both operands as i1 when both are booleans, else None."""
        if all(isinstance(x, bool) or (isinstance(x, _Value) and
                                       x.kind == "i1") for x in (a, b)):
            return self.value(a, "i1"), self.value(b, "i1")
        return None

    def select(self, cond, a, b):
        cond = self.value(cond, "i1")
        if cond.kind != "i1":
            _fail("torch.where's condition must be a boolean (a comparison's "
                  "result)")
        if (both := self._booleans(a, b)) is not None:
            return self.emit(f"arith.select {cond.name}, {both[0].name}, "
                             f"{both[1].name} : i1", "i1")
        a, b, kind = self.unify(a, b)
        return self.emit(f"arith.select {cond.name}, {a.name}, {b.name} : "
                         f"{kind}", kind)

    def extreme(self, which, a, b):
        if (both := self._booleans(a, b)) is not None:
            op = "andi" if which == "min" else "ori"
            return self.emit(f"arith.{op} {both[0].name}, {both[1].name} : "
                             f"i1", "i1")
        a, b, kind = self.unify(a, b)
        if kind == "f32":
            return self.emit(f"arith.{which}imumf {a.name}, {b.name} : f32",
                             "f32")
        return self.emit(f"arith.{which}si {a.name}, {b.name} : {kind}", kind)

    def load(self, tensor, index):
        index = index if isinstance(index, tuple) else (index,)
        if any(i is None or isinstance(i, slice) or i is Ellipsis
               for i in index):
            _fail("a slice of a captured tensor: index it with one value "
                  "per dimension")
        if len(index) != tensor.dim():
            _fail(f"a tensor of {tensor.dim()} dimensions indexed with "
                  f"{len(index)} values: index every dimension")
        name, type_, (stored, kind, signed) = self.captures.name(tensor)
        idx = []
        for i, extent in zip(index, tensor.shape):
            if hasattr(i, "dim") and i.dim() == 0:
                i = i.item()
            if isinstance(i, float) or (isinstance(i, _Value) and
                                        i.kind == "f32"):
                _fail("a captured tensor indexed by a float: index it with "
                      "integers (b, h, q_idx, kv_idx and integer arithmetic)")
            if isinstance(i, int) and not isinstance(i, bool):
                if not -int(extent) <= i < int(extent):
                    _fail(f"index {i} out of range for a dimension of "
                          f"{int(extent)}")
                i %= int(extent)  # Python's negative indices
            idx.append(self.to_int(self.value(i, "index"), "index").name)
        v = self.emit(f"memref.load {name}[{', '.join(idx)}] : {type_}",
                      stored)
        if stored in ("f16", "bf16"):
            return self.emit(f"arith.extf {v.name} : {stored} to f32", "f32")
        if kind == "i1":
            zero = self.constant(0, "i8")
            return self.emit(f"arith.cmpi ne, {v.name}, {zero.name} : i8",
                             "i1")
        if stored != kind:
            ext = "extsi" if signed else "extui"
            return self.emit(f"arith.{ext} {v.name} : {stored} to {kind}",
                             kind)
        return v

    def torch_call(self, func, args, kwargs):
        import torch
        name = getattr(func, "__name__", str(func))
        if func is torch.Tensor.__getitem__:
            return self.load(args[0], args[1])
        if kwargs:
            _fail(f"torch.{name} with keyword arguments: pass them "
                  f"positionally")
        if name in _UNARY or name == "sigmoid":
            return self.unary(name, args[0])
        if func is torch.where:
            return self.select(*args)
        if func in (torch.minimum, torch.min) and len(args) == 2:
            return self.extreme("min", *args)
        if func in (torch.maximum, torch.max) and len(args) == 2:
            return self.extreme("max", *args)
        if func is torch.clamp:
            x = args[0]
            if len(args) > 1 and args[1] is not None:
                x = self.extreme("max", x, args[1])
            if len(args) > 2 and args[2] is not None:
                x = self.extreme("min", x, args[2])
            return x
        if name in ("__add__", "__radd__", "add"):
            return self.arith("add", *args[:2])
        if name in ("__mul__", "__rmul__", "mul"):
            return self.arith("mul", *args[:2])
        if name in ("__sub__", "sub"):
            return self.arith("sub", *args[:2])
        if name == "__rsub__":
            return self.arith("sub", args[1], args[0])
        if name in ("__truediv__", "div"):
            return self.divide(*args[:2])
        if name == "__rtruediv__":
            return self.divide(args[1], args[0])
        _fail(f"torch.{name} is not among the operations kvir's regions "
              f"record (arithmetic, comparisons, &, |, ~, where, tanh, exp, "
              f"exp2, log, log2, sqrt, rsqrt, sigmoid, abs, floor, minimum, "
              f"maximum, clamp, indexing a captured tensor)")


def _trace_region(fn, captures, q_offset, with_score):
    """`fn` traced: the region's body as MLIR text, ending in kv.yield."""
    tracer = _Tracer(captures)
    b = _Value(tracer, "%b", "index")
    h = _Value(tracer, "%h", "index")
    # FlexAttention's q_idx counts rows from 0; kvir's region gets the row's
    # position, kv_len - qo_len + q_idx (docs/Semantics.md).
    q_idx = _Value(tracer, "%p", "index")
    if q_offset:
        q_idx = tracer.arith("sub", q_idx, q_offset)
    kv_idx = _Value(tracer, "%j", "index")
    if with_score:
        result = fn(_Value(tracer, "%score", "f32"), b, h, q_idx, kv_idx)
        result = tracer.to_f32(tracer.value(result, "f32"))
    else:
        result = tracer.value(fn(b, h, q_idx, kv_idx), "i1")
        if result.kind != "i1":
            _fail("mask_mod must return a boolean (a comparison's result)",
                  fn)
    return _live(tracer.lines, result.name) + [
        f"    kv.yield {result.name} : {result.kind}"]


_SSA = re.compile(r"%[A-Za-z_][A-Za-z0-9_]*")


def _live(lines, result):
    """The recorded lines `result` depends on (every recorded op is pure):
    what the function computed and dropped would leave a capture the
    kernel's regions no longer read, and shift the captures' numbering."""
    needed, kept = {result}, []
    for line in reversed(lines):
        name, rhs = line.split(" = ", 1)
        if name.strip() in needed:
            needed.update(_SSA.findall(rhs))
            kept.append(line)
    return kept[::-1]


def trace_variants(spec, score_mod, mask_mod, q_offset=0):
    """Adds score_mod / mask_mod, traced, to `spec` (its "score_mod",
    "mask_mod" and "captures" fields); returns the captured tensors, in
    the kernel's argument order (the order the regions first read them,
    score_mod's first, as the kernel numbers its captures). `q_offset`: what
    the functions' q_idx is short of kvir's position (FlexAttention's
    kv_len - qo_len; 0 where q_idx is the position)."""
    captures = _Captures()
    regions = {}
    if score_mod is not None:
        regions["score_mod"] = _trace_region(score_mod, captures, q_offset,
                                             True)
    if mask_mod is not None:
        regions["mask_mod"] = _trace_region(mask_mod, captures, q_offset,
                                            False)
    # Renumber the captures the live lines read, in order of first read.
    order = []
    for lines in regions.values():
        for line in lines:
            for cap in re.findall(r"%cap(\d+)\b", line):
                if int(cap) not in order:
                    order.append(int(cap))
    renumber = {old: new for new, old in enumerate(order)}
    for key, lines in regions.items():
        spec[key] = "\n".join(
            re.sub(r"%cap(\d+)\b",
                   lambda m: f"%cap{renumber[int(m.group(1))]}", line)
            for line in lines)
    if order:
        spec["captures"] = [captures.types[i] for i in order]
    buffers = captures.buffers()
    return [buffers[i] for i in order]


class BlockMask:
    """What create_block_mask returns: the mask_mod and the shape it was
    made for. kvir evaluates mask_mod per element and skips the K/V tiles
    it hides from a whole query tile (no block table to build)."""

    def __init__(self, mask_mod, B, H, Q_LEN, KV_LEN):
        self.mask_mod = mask_mod
        self.shape = (B, H, int(Q_LEN), int(KV_LEN))

    def __repr__(self):
        return f"kvir.BlockMask(shape={self.shape})"


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None,
                      BLOCK_SIZE=128, _compile=False):
    """torch's create_block_mask: `B` / `H` None broadcast over batch /
    heads. `device` and `BLOCK_SIZE` are accepted (kvir's kernels choose
    their tiles)."""
    return BlockMask(mask_mod, B, H, Q_LEN, KV_LEN)


_executors = {}


def flex_attention(query, key, value, score_mod=None, block_mask=None,
                   scale=None, enable_gqa=False, return_lse=False,
                   kernel_options=None, *, chip=None, cache_dir=None,
                   backend="auto"):
    """torch's flex_attention on kvir: query [B, Hq, L, E], key [B, Hkv, S,
    E], value [B, Hkv, S, Ev] (Hq = Hkv unless enable_gqa), f16 or bf16 (or
    f32) torch tensors; returns out [B, Hq, L, Ev] (and the LSE [B, Hq, L],
    natural log, with return_lse). CPU tensors run in kvir's emulator, CUDA
    tensors on the GPU. score_mod / mask_mod are traced once per call shape
    and compiled once (kvir's kernel cache)."""
    import torch
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name}: expected a 4-dimensional torch tensor "
                             f"[B, H, seq, dim]")
    B, Hq, L, E = query.shape
    Bk, Hk, S, Ek = key.shape
    if (Bk, Ek) != (B, E) or value.shape[:3] != key.shape[:3]:
        raise ValueError(f"key: shape {list(key.shape)}, value: shape "
                         f"{list(value.shape)}; expected [{B}, Hkv, S, {E}] "
                         f"and [{B}, Hkv, S, Ev]")
    Ev = value.shape[3]
    if Hq % Hk or (Hq != Hk and not enable_gqa):
        raise ValueError(f"query has {Hq} heads, key {Hk}: expected equal "
                         f"counts, or enable_gqa=True with a multiple")
    if S == 0 or L == 0:
        raise ValueError("query and key need at least one row")
    dtype = dtype_name(query.dtype)
    if dtype not in ("f16", "bf16", "f32") or key.dtype != query.dtype or \
            value.dtype != query.dtype:
        raise TypeError(f"query, key, value: dtypes {query.dtype}, "
                        f"{key.dtype}, {value.dtype}; expected one of "
                        f"float16, bfloat16, float32")
    mask_mod = None
    if block_mask is not None:
        if not isinstance(block_mask, BlockMask):
            raise TypeError("block_mask: expected kvir.create_block_mask's "
                            "result")
        mb, mh, ml, ms = block_mask.shape
        if (ml, ms) != (L, S) or mb not in (None, 1, B) or \
                mh not in (None, 1, Hq):
            raise ValueError(f"block_mask: made for {block_mask.shape}, the "
                             f"call is B={B}, H={Hq}, Q_LEN={L}, KV_LEN={S}")
        mask_mod = block_mask.mask_mod
    # K and V as a paged cache of B pages of S slots in HND order, which
    # [B, Hkv, S, E] already is.
    spec = {"op": "prefill", "kv": "paged", "kv_storage": "split",
            "kv_layout": "hnd", "page_size": int(S), "num_qo_heads": int(Hq),
            "num_kv_heads": int(Hk), "head_dim": int(E),
            "head_dim_v": int(Ev), "dtype": dtype, "lse_base": "e",
            "sm_scale": float(scale) if scale is not None else E ** -0.5}
    captured = trace_variants(spec, score_mod, mask_mod, S - L)
    key_ = (json.dumps(spec, sort_keys=True), chip, cache_dir)
    if key_ not in _executors:
        _executors[key_] = _Executor(spec, chip, cache_dir)
    executor = _executors[key_]
    # kvir's rows are [B * L, Hq, E].
    q_rows = query.transpose(1, 2).reshape(B * L, Hq, E).contiguous()
    out, lse = _state_buffers(B * L, Hq, Ev, query.dtype, query.device)

    def index(values):
        return torch.tensor(values, dtype=torch.int32, device=query.device)
    args = [("q", Arg("q", q_rows)),
            ("qo_indptr", Arg("qo_indptr", index([L * b for b in
                                                  range(B + 1)]))),
            ("k_pool", Arg("key", key.contiguous())),
            ("v_pool", Arg("value", value.contiguous())),
            ("kv_indptr", Arg("kv_indptr", index(list(range(B + 1))))),
            ("kv_indices", Arg("kv_indices", index(list(range(B))))),
            ("kv_last_page_len", Arg("kv_last_page_len", index([S] * B)))]
    args += [(f"capture{i}", Arg(f"capture{i}", t.to(query.device)))
             for i, t in enumerate(captured)]
    args += [("out", Arg("out", out)), ("lse", Arg("lse", lse))]
    executor.run(args, [S] * B, backend=_backend(backend),
                 qo_indptr=[L * b for b in range(B + 1)])
    o = out.view(B, L, Hq, Ev).transpose(1, 2).contiguous()
    if not return_lse:
        return o
    return o, lse.view(B, L, Hq).transpose(1, 2).contiguous()
