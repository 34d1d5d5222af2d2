"""kvir's kernel calls as torch operators (torch.library).

Every kernel call kvir makes on torch tensors -- a wrapper's run(), a merge,
kvir.flex_attention, the context-parallel calls -- is one call of

    kvir::run(int plan, Tensor[] inputs, float[] scalars,
              Tensor(a!) out, Tensor(b!) lse) -> ()

which runs the kernels of a planned call (`plan`, an id this module hands
out) on `inputs` and the f32 `scalars`, writing the attention state (out,
lse) in place, as FlashInfer's run operators write theirs. The id stands
for what plan() fixed on the host (the compiled kernels, the batch's
lengths, the backend); the tensors are the operator's arguments, so a
tracer (torch.compile's, torch.fx's make_fx) records the call as one node
and a CUDA graph captures its launches. The operator's Meta kernel is its
fake implementation: the outputs are its arguments, already shaped, so it
computes nothing.

Importing kvir registers the operator when torch is already imported;
otherwise the first call on torch tensors does (`register()`).
"""
import sys
import weakref

_bindings = weakref.WeakValueDictionary()
_next_id = [0]
_library = []


class _Binding:
    """What a plan id stands for: the executor, the names and kinds of its
    arguments in the kernel's order, the batch's kv lengths and query row
    offsets, the backend, whether the first launch is a programmatic
    dependent. Held by the executor, so an id lives as long as its plan."""

    def __init__(self, executor, layout, kv_lengths, backend, pdl=False,
                 qo_indptr=None):
        self.executor, self.layout = executor, layout
        self.kv_lengths, self.backend, self.pdl = kv_lengths, backend, pdl
        self.qo_indptr = qo_indptr
        _next_id[0] += 1
        self.id = _next_id[0]
        _bindings[self.id] = self


def _run_kernel(plan, inputs, scalars, out, lse):
    """The CPU and CUDA kernel of kvir::run."""
    from .tensors import Arg
    binding = _bindings.get(int(plan))
    if binding is None:
        raise RuntimeError(f"kvir::run: plan {plan} no longer exists (its "
                           f"wrapper was planned again or freed); trace or "
                           f"capture again after plan()")
    tensors = iter(list(inputs) + [out, lse])
    values = iter(scalars)
    args = [(name, Arg(label, next(tensors)) if kind == "tensor"
             else float(next(values)))
            for name, label, kind in binding.layout]
    binding.executor.run_now(args, binding.kv_lengths, binding.backend,
                             binding.pdl, binding.qo_indptr)


def _fake_kernel(plan, inputs, scalars, out, lse):
    """kvir::run's fake (Meta) kernel: out and lse are given and shaped;
    nothing to compute."""
    return None


def register():
    """Registers kvir::run with torch (once); returns torch.ops.kvir."""
    import torch
    if not _library:
        lib = torch.library.Library("kvir", "DEF")
        lib.define("run(int plan, Tensor[] inputs, float[] scalars, "
                   "Tensor(a!) out, Tensor(b!) lse) -> ()")
        for key in ("CPU", "CUDA"):
            lib.impl("run", _run_kernel, key)
        lib.impl("run", _fake_kernel, "Meta")
        _library.append(lib)
    return torch.ops.kvir


def available():
    """Whether torch is imported (kvir then calls its kernels on torch
    tensors through kvir::run)."""
    return "torch" in sys.modules


def call(executor, args, kv_lengths, backend, pdl=False, qo_indptr=None):
    """Runs `args` ((plan argument, Arg or float), ending with out and lse)
    of `executor` through kvir::run."""
    layout = tuple((n, a.name, "tensor") if hasattr(a, "obj")
                   else (n, n, "scalar") for n, a in args)
    if layout[-2][0] != "out" or layout[-1][0] != "lse":
        raise ValueError("kvir::run: a call's last arguments are out and lse")
    key = (layout, id(kv_lengths), id(qo_indptr), backend, bool(pdl))
    binding = executor.bindings.get(key)
    if binding is None:
        binding = _Binding(executor, layout, kv_lengths, backend, bool(pdl),
                           qo_indptr)
        executor.bindings[key] = binding
    tensors = [a.obj for _, a in args if hasattr(a, "obj")]
    scalars = [float(a) for _, a in args if not hasattr(a, "obj")]
    register().run(binding.id, tensors[:-2], scalars, tensors[-2],
                   tensors[-1])
