"""FlashInfer-style attention wrappers over kvir's kernels.

`plan(...)` takes the batch's page tables and the problem's shape and
compiles (or finds in the cache) the kernels; `run(...)` executes them on
numpy arrays or torch CPU tensors (in kvir's emulator) or on torch CUDA
tensors (on the GPU, on the tensors' current stream). The names and
argument orders follow FlashInfer's Python API; LSEs are base 2 (as
FlashInfer's kernels compute and merge them) unless lse_base="e".
"""
import ctypes

import numpy as np

from ._wrapping import (_CsrCheck, _Executor, _GraphBuffers, _Tables,
                        _Wrapper, _backend, _check_tables, _fp8_scales, _i32,
                        _input, _kv_dtype, _options, _page_tables,
                        _paged_cache, _plan_device, _scale_output)
from .merge import merge_state
from .tensors import Arg, dtype_name, empty_like_arg, host_int_array


class BatchDecodeWithPagedKVCacheWrapper(_Wrapper):
    """Decode (one query row per request) over a paged KV cache in CSR page
    tables or block tables: FlashInfer's BatchDecodeWithPagedKVCacheWrapper.
    kvir picks the
    kernel per decode (its tensor-core kernel for GQA groups of 8 and
    more): `use_tensor_cores` is accepted and kept as an attribute."""

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD",
                 use_cuda_graph=False, use_tensor_cores=False,
                 paged_kv_indptr_buffer=None, paged_kv_indices_buffer=None,
                 paged_kv_last_page_len_buffer=None, backend="auto",
                 jit_args=None, chip=None, cache_dir=None):
        super().__init__(float_workspace_buffer, kv_layout, backend,
                         jit_args, chip, cache_dir)
        self.use_tensor_cores = bool(use_tensor_cores)
        self._graph = _GraphBuffers(
            use_cuda_graph, paged_kv_indptr_buffer=paged_kv_indptr_buffer,
            paged_kv_indices_buffer=paged_kv_indices_buffer,
            paged_kv_last_page_len_buffer=paged_kv_last_page_len_buffer)

    def plan(self, indptr, indices, last_page_len, num_qo_heads,
             num_kv_heads, head_dim, page_size, pos_encoding_mode="NONE",
             window_left=-1, logits_soft_cap=None, q_data_type="float16",
             kv_data_type=None, data_type=None, sm_scale=None,
             rope_scale=None, rope_theta=None, non_blocking=True,
             lse_base="2", score_mod=None, mask_mod=None,
             q_len_per_req=None, block_tables=None, seq_lens=None):
        # FlashInfer's data_type: the older name of kv_data_type.
        if kv_data_type is None:
            kv_data_type = data_type
        # Several query rows per request (speculative decoding's draft
        # tokens, FlashInfer's q_len_per_req): the last rows of each
        # request, causal -- a paged prefill of q_len_per_req rows each.
        self._rows = None
        if q_len_per_req is not None and int(q_len_per_req) > 1:
            batch = len(host_int_array(
                "seq_lens" if seq_lens is not None else "last_page_len",
                seq_lens if seq_lens is not None else last_page_len))
            self._rows = BatchPrefillWithPagedKVCacheWrapper(
                kv_layout=self.kv_layout, chip=self.chip,
                cache_dir=self.cache_dir, backend=self.backend)
            self._rows.plan(
                np.arange(batch + 1, dtype=np.int32) * int(q_len_per_req),
                indptr, indices, last_page_len, num_qo_heads, num_kv_heads,
                head_dim, page_size, causal=True,
                pos_encoding_mode=pos_encoding_mode, sm_scale=sm_scale,
                window_left=window_left, logits_soft_cap=logits_soft_cap,
                rope_scale=rope_scale, rope_theta=rope_theta,
                q_data_type=q_data_type, kv_data_type=kv_data_type,
                lse_base=lse_base, score_mod=score_mod, mask_mod=mask_mod,
                block_tables=block_tables, seq_lens=seq_lens)
            self._exec = self._rows._exec
            return
        dtype = dtype_name(q_data_type)
        spec = _options({"op": "decode", "num_qo_heads": int(num_qo_heads),
                         "num_kv_heads": int(num_kv_heads),
                         "head_dim": int(head_dim),
                         "page_size": int(page_size), "dtype": dtype,
                         "kv_layout": self.kv_layout},
                        window_left, logits_soft_cap, sm_scale, lse_base,
                        pos_encoding_mode, rope_scale, rope_theta)
        if _kv_dtype(dtype, kv_data_type) != "same":
            spec["kv_dtype"] = _kv_dtype(dtype, kv_data_type)
        if self.kv_layout == "vllm":
            spec["kv_storage"] = "split"
        form, named, self._check, self.kv_lengths = _page_tables(
            indptr, indices, last_page_len, block_tables, seq_lens,
            page_size)
        spec["table"] = form
        self.batch = len(self.kv_lengths)
        self.page_size = int(page_size)
        self._tables = _Tables(self._graph_tables(form, named, "indptr"))
        self._variants(spec, score_mod, mask_mod)
        self.spec = spec
        self._adopt(spec, _plan_device(indptr))

    def run(self, q, paged_kv_cache, out=None, lse=None, return_lse=False,
            k_scale=None, v_scale=None, *, q_scale=None, sinks=None,
            window_left=None, enable_pdl=None):
        """FlashInfer's run: `q_scale` / `k_scale` multiply the logits,
        `v_scale` the output, `sinks` [num_qo_heads] join each row's
        softmax denominator (a kernel with sinks, compiled on first use);
        `window_left` is the plan's or None; `enable_pdl`: on a GPU, the
        first kernel is launched as a programmatic dependent of the
        stream's previous kernel (sm_90: it overlaps that kernel's tail and
        waits for it before touching memory; a split's merge always
        overlaps its split kernel so)."""
        self._planned()
        if self._rows is not None:
            return self._rows.run(q, paged_kv_cache, out, lse, return_lse,
                                  k_scale, v_scale, q_scale=q_scale,
                                  sinks=sinks, window_left=window_left,
                                  enable_pdl=enable_pdl)
        s = self.spec
        hq, d = s["num_qo_heads"], s["head_dim"]
        qa = Arg("q", _input(q)).check(s["dtype"], [self.batch, hq, d])
        pools = _paged_cache(paged_kv_cache, s, self.kv_layout)
        self._check(pools[0][1].shape[0])
        scales = _fp8_scales(s, k_scale, v_scale)
        if out is None:
            out = empty_like_arg(qa, [self.batch, hq, d], s["dtype"])
        if lse is None:
            lse = empty_like_arg(qa, [self.batch, hq], "f32")
        oa = Arg("out", out).check(s["dtype"], [self.batch, hq, d])
        la = Arg("lse", lse).check("f32", [self.batch, hq])
        args = [("q", qa)] + pools + self._tables.on(qa) + scales + \
            self._variant_args(qa, sinks) + [("out", oa), ("lse", la)]
        self._executor(pools, k_scale, q_scale, sinks, window_left).run(
            args, self.kv_lengths, self.backend, pdl=bool(enable_pdl))
        _scale_output(s, out, v_scale)
        return (out, lse) if return_lse else out


class _PrefillBase(_Wrapper):

    def __init__(self, float_workspace_buffer, kv_layout, use_cuda_graph,
                 backend, jit_args, chip, cache_dir, **buffers):
        super().__init__(float_workspace_buffer, kv_layout, backend,
                         jit_args, chip, cache_dir)
        buffers = {n: b for n, b in buffers.items()
                   if not n.startswith(("custom_mask", "mask_indptr"))}
        self._graph = _GraphBuffers(use_cuda_graph, **buffers)

    def _spec(self, kind, qo_indptr, num_qo_heads, num_kv_heads, head_dim_qk,
              head_dim_vo, causal, pos_encoding_mode, sm_scale, window_left,
              logits_soft_cap, q_data_type, kv_data_type, lse_base,
              rope_scale, rope_theta, custom_mask=None,
              packed_custom_mask=None, o_data_type=None):
        dtype = dtype_name(q_data_type)
        kv_dtype = _kv_dtype(dtype, kv_data_type)
        qo = host_int_array("qo_indptr", qo_indptr)
        if qo.ndim != 1 or len(qo) < 1 or qo[0] != 0 or \
                (qo[1:] < qo[:-1]).any():
            raise ValueError("qo_indptr: expected [batch + 1] non-decreasing "
                             "row offsets starting at 0")
        self.batch, self.nnz = len(qo) - 1, int(qo[-1])
        if self._graph.on:
            # FlashInfer's max_total_num_rows: the first plan's rows, which
            # a captured graph's buffers hold.
            self._graph_rows = getattr(self, "_graph_rows", self.nnz)
            if self.nnz > self._graph_rows:
                raise ValueError(f"qo_indptr: {self.nnz} rows, but "
                                 f"use_cuda_graph's first plan fixed at "
                                 f"most {self._graph_rows}")
        self._qo = qo
        # The host copies the GPU path's work schedule reads.
        self._qo_host = [int(x) for x in qo]
        spec = {"op": "prefill", "kv": kind,
                "num_qo_heads": int(num_qo_heads),
                "num_kv_heads": int(num_kv_heads),
                "head_dim": int(head_dim_qk), "dtype": dtype,
                "causal": bool(causal)}
        if kv_dtype != "same":
            spec["kv_dtype"] = kv_dtype
        if o_data_type is not None and dtype_name(o_data_type) != dtype:
            spec["out_dtype"] = dtype_name(o_data_type)
        if head_dim_vo is not None and int(head_dim_vo) != int(head_dim_qk):
            spec["head_dim_v"] = int(head_dim_vo)
        if custom_mask is not None and packed_custom_mask is not None:
            raise ValueError("custom_mask and packed_custom_mask: give one")
        # FlashInfer's custom mask replaces the causal one.
        if custom_mask is not None:
            spec["custom_mask"], spec["causal"] = "bool", False
        if packed_custom_mask is not None:
            spec["custom_mask"], spec["causal"] = "packed", False
        self._mask_given = custom_mask if custom_mask is not None \
            else packed_custom_mask
        return _options(spec, window_left, logits_soft_cap, sm_scale,
                        lse_base, pos_encoding_mode, rope_scale, rope_theta)

    def _plan_variants(self, kv_lengths, score_mod, mask_mod,
                       positions=None):
        """The plan's variants (_Wrapper._variants), the custom mask checked
        against the batch: FlashInfer's concatenated qo_len x kv_len blocks,
        bool, or packed 8 to a byte (least significant bit first), each
        block starting on a byte."""
        mask = self._mask_given
        if mask is not None:
            qo_lens = self._qo[1:] - self._qo[:-1]
            blocks = qo_lens * np.asarray(kv_lengths, dtype=np.int64)
            kind = self.spec["custom_mask"]
            need = int(blocks.sum()) if kind == "bool" else \
                int(((blocks + 7) // 8).sum())
            a = Arg("packed_custom_mask" if kind == "packed" else
                    "custom_mask", mask)
            want = ("bool",) if kind == "bool" else ("u8", "i8")
            if a.dtype not in want or len(a.shape) != 1 or \
                    a.shape[0] < need:
                raise ValueError(f"{a.name}: dtype {a.dtype}, shape "
                                 f"{a.shape}, expected {' or '.join(want)} "
                                 f"[{need}] (the requests' qo_len x kv_len "
                                 f"blocks{'' if kind == 'bool' else ', 8 to a byte'})")
        if positions is not None:
            positions = np.ascontiguousarray(
                host_int_array("positions", positions), dtype=np.int32)
            if positions.shape != (self.nnz,):
                raise ValueError(f"positions: shape {list(positions.shape)}, "
                                 f"expected [{self.nnz}] (one per query row)")
        self._variants(self.spec, score_mod, mask_mod, mask, positions)

    def _check_rows(self):
        a, pa = _i32(self._qo)
        _check_tables("kvir_check_query_rows", pa, ctypes.c_int64(self.nnz),
                      ctypes.c_int64(self.batch))

    def _query_rows(self, q):
        """The query rows run() takes: the plan's, or under use_cuda_graph
        as many as the first plan's (a captured graph's buffers): rows past
        the requests' belong to none and are left unwritten."""
        rows = int(q.shape[0]) if len(getattr(q, "shape", ())) else self.nnz
        if self._graph.on and self.nnz <= rows <= self._graph_rows:
            return rows
        return self.nnz

    def _outputs(self, qa, out, lse):
        s = self.spec
        hq, dv = s["num_qo_heads"], s.get("head_dim_v", s["head_dim"])
        out_dtype = s.get("out_dtype", s["dtype"])
        rows = qa.shape[0]
        if out is None:
            out = empty_like_arg(qa, [rows, hq, dv], out_dtype)
        if lse is None:
            lse = empty_like_arg(qa, [rows, hq], "f32")
        return (out, lse, Arg("out", out).check(out_dtype, [rows, hq, dv]),
                Arg("lse", lse).check("f32", [rows, hq]))


class BatchPrefillWithPagedKVCacheWrapper(_PrefillBase):
    """Prefill / append (query rows per request in qo_indptr) over a paged
    KV cache: FlashInfer's BatchPrefillWithPagedKVCacheWrapper."""

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD",
                 use_cuda_graph=False, qo_indptr_buf=None,
                 paged_kv_indptr_buf=None, paged_kv_indices_buf=None,
                 paged_kv_last_page_len_buf=None, custom_mask_buf=None,
                 mask_indptr_buf=None, backend="auto", jit_args=None,
                 chip=None, cache_dir=None):
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph,
                         backend, jit_args, chip, cache_dir,
                         qo_indptr_buf=qo_indptr_buf,
                         paged_kv_indptr_buf=paged_kv_indptr_buf,
                         paged_kv_indices_buf=paged_kv_indices_buf,
                         paged_kv_last_page_len_buf=paged_kv_last_page_len_buf,
                         custom_mask_buf=custom_mask_buf,
                         mask_indptr_buf=mask_indptr_buf)

    def plan(self, qo_indptr, paged_kv_indptr, paged_kv_indices,
             paged_kv_last_page_len, num_qo_heads, num_kv_heads, head_dim_qk,
             page_size, head_dim_vo=None, custom_mask=None,
             packed_custom_mask=None, causal=False, pos_encoding_mode="NONE",
             use_fp16_qk_reduction=False, sm_scale=None, window_left=-1,
             logits_soft_cap=None, rope_scale=None, rope_theta=None,
             q_data_type="float16", kv_data_type=None, o_data_type=None,
             non_blocking=True, lse_base="2", score_mod=None, mask_mod=None,
             positions=None, block_tables=None, seq_lens=None):
        # use_fp16_qk_reduction: kvir accumulates Q K^T in f32 always.
        # positions (kvir's): each row's position among its request's keys
        # (i32 [nnz]) in place of kv_len - qo_len + i.
        spec = self._spec("paged", qo_indptr, num_qo_heads, num_kv_heads,
                          head_dim_qk, head_dim_vo, causal, pos_encoding_mode,
                          sm_scale, window_left, logits_soft_cap, q_data_type,
                          kv_data_type, lse_base, rope_scale, rope_theta,
                          custom_mask, packed_custom_mask, o_data_type)
        spec["page_size"] = int(page_size)
        spec["kv_layout"] = self.kv_layout
        if "head_dim_v" in spec or self.kv_layout == "vllm":
            # K and V pools: FlashInfer's (k_cache, v_cache) of their own
            # widths, vLLM's layout.
            spec["kv_storage"] = "split"
        self.spec = spec
        form, named, self._check, lengths = _page_tables(
            paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len,
            block_tables, seq_lens, page_size)
        spec["table"] = form
        if len(lengths) != self.batch:
            raise ValueError(f"the page tables hold {len(lengths)} requests, "
                             f"qo_indptr {self.batch}: one request per "
                             f"qo_indptr entry")
        self._check_rows()
        self.kv_lengths = [int(n) for n in lengths]
        self._plan_variants(lengths, score_mod, mask_mod, positions)
        self._tables = _Tables(self._graph_tables(
            form, [("qo_indptr", qo_indptr)] + named, "qo_indptr"))
        self._adopt(spec, _plan_device(qo_indptr), self._qo_host)

    def run(self, q, paged_kv_cache, out=None, lse=None, return_lse=False,
            k_scale=None, v_scale=None, *, q_scale=None, sinks=None,
            window_left=None, enable_pdl=None):
        """FlashInfer's run (the scales, sinks and window_left as the
        decode wrapper's run takes them)."""
        self._planned()
        s = self.spec
        qa = Arg("q", _input(q)).check(s["dtype"], [self._query_rows(q),
                                                    s["num_qo_heads"],
                                                    s["head_dim"]])
        pools = _paged_cache(paged_kv_cache, s, self.kv_layout)
        self._check(pools[0][1].shape[0])
        scales = _fp8_scales(s, k_scale, v_scale)
        out, lse, oa, la = self._outputs(qa, out, lse)
        t = self._tables.on(qa)
        args = [("q", qa), t[0]] + pools + t[1:] + scales + \
            self._variant_args(qa, sinks) + [("out", oa), ("lse", la)]
        self._executor(pools, k_scale, q_scale, sinks, window_left).run(
            args, self.kv_lengths, backend=self.backend,
            pdl=bool(enable_pdl), qo_indptr=self._qo_host)
        _scale_output(s, out, v_scale)
        return (out, lse) if return_lse else out


class BatchPrefillWithRaggedKVCacheWrapper(_PrefillBase):
    """Prefill over ragged (contiguous per request) K and V:
    FlashInfer's BatchPrefillWithRaggedKVCacheWrapper."""

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD",
                 use_cuda_graph=False, qo_indptr_buf=None, kv_indptr_buf=None,
                 custom_mask_buf=None, mask_indptr_buf=None, backend="auto",
                 jit_args=None, chip=None, cache_dir=None):
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph,
                         backend, jit_args, chip, cache_dir,
                         qo_indptr_buf=qo_indptr_buf,
                         kv_indptr_buf=kv_indptr_buf,
                         custom_mask_buf=custom_mask_buf,
                         mask_indptr_buf=mask_indptr_buf)

    def plan(self, qo_indptr, kv_indptr, num_qo_heads, num_kv_heads,
             head_dim_qk, head_dim_vo=None, custom_mask=None,
             packed_custom_mask=None, causal=False, pos_encoding_mode="NONE",
             use_fp16_qk_reduction=False, window_left=-1,
             logits_soft_cap=None, sm_scale=None, rope_scale=None,
             rope_theta=None, q_data_type="float16", kv_data_type=None,
             o_data_type=None, non_blocking=True, lse_base="2",
             score_mod=None, mask_mod=None):
        self.spec = self._spec("ragged", qo_indptr, num_qo_heads,
                               num_kv_heads, head_dim_qk, head_dim_vo, causal,
                               pos_encoding_mode, sm_scale, window_left,
                               logits_soft_cap, q_data_type, kv_data_type,
                               lse_base, rope_scale, rope_theta, custom_mask,
                               packed_custom_mask, o_data_type)
        kv = host_int_array("kv_indptr", kv_indptr)
        if kv.shape != (self.batch + 1,) or kv[0] != 0 or \
                (kv[1:] < kv[:-1]).any():
            raise ValueError(f"kv_indptr: expected [{self.batch + 1}] "
                             f"non-decreasing key offsets starting at 0")
        self.nnz_kv = int(kv[-1])
        self._check_rows()
        self.kv_lengths = [int(n) for n in kv[1:] - kv[:-1]]
        self._plan_variants(kv[1:] - kv[:-1], score_mod, mask_mod)
        self._tables = _Tables(self._graph.fill(
            [("qo_indptr", qo_indptr), ("kv_indptr", kv_indptr)],
            "qo_indptr", self.batch))
        self._adopt(self.spec, _plan_device(qo_indptr), self._qo_host)

    def run(self, q, k, v, out=None, lse=None, return_lse=False, *,
            q_scale=None, k_scale=None, v_scale=None, sinks=None,
            window_left=None, enable_pdl=None):
        """FlashInfer's run (the scales, sinks and window_left as the
        decode wrapper's run takes them)."""
        self._planned()
        s = self.spec
        hq, hk, d = s["num_qo_heads"], s["num_kv_heads"], s["head_dim"]
        dv = s.get("head_dim_v", d)
        qa = Arg("q", _input(q)).check(s["dtype"],
                                       [self._query_rows(q), hq, d])
        ka = Arg("k", _input(k)).check(s["dtype"], [None, hk, d])
        va = Arg("v", _input(v)).check(s["dtype"], [ka.shape[0], hk, dv])
        if ka.shape[0] < self.nnz_kv:
            raise ValueError(f"k: {ka.shape[0]} rows, kv_indptr reaches "
                             f"{self.nnz_kv}")
        out, lse, oa, la = self._outputs(qa, out, lse)
        t = self._tables.on(qa)
        args = [("q", qa), t[0], ("k", ka), ("v", va), t[1]] + \
            self._variant_args(qa, sinks) + [("out", oa), ("lse", la)]
        self._executor((), k_scale, q_scale, sinks, window_left).run(
            args, self.kv_lengths, backend=self.backend,
            pdl=bool(enable_pdl), qo_indptr=self._qo_host)
        _scale_output(s, out, v_scale)
        return (out, lse) if return_lse else out


class BatchMLAPagedAttentionWrapper(_Wrapper):
    """MLA decode (DeepSeek's latent cache: ckv and kpe pages shared by all
    heads), one or several query rows per request: FlashInfer's
    BatchMLAPagedAttentionWrapper. Tables are CSR over pages with each
    request's kv_len."""

    def __init__(self, float_workspace_buffer=None, use_cuda_graph=False,
                 qo_indptr=None, kv_indptr=None, kv_indices=None,
                 kv_len_arr=None, backend="auto", chip=None, cache_dir=None):
        super().__init__(float_workspace_buffer, "NHD", backend, None, chip,
                         cache_dir)
        self._graph = _GraphBuffers(use_cuda_graph, qo_indptr=qo_indptr,
                                    kv_indptr=kv_indptr,
                                    kv_indices=kv_indices)

    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads,
             head_dim_ckv, head_dim_kpe, page_size, causal=False,
             sm_scale=None, q_data_type="bfloat16", kv_data_type=None,
             use_profiler=False, lse_base="2"):
        dtype = dtype_name(q_data_type)
        if _kv_dtype(dtype, kv_data_type) != "same":
            raise TypeError(f"kv_data_type: {dtype_name(kv_data_type)}: "
                            f"kvir has no MLA kernel over fp8 caches")
        if use_profiler:
            raise ValueError("use_profiler: FlashInfer's profiler has no "
                             "kvir counterpart (kvir's bench counts the "
                             "kernels' work in its emulator)")
        qo = host_int_array("qo_indptr", qo_indptr)
        ip = host_int_array("kv_indptr", kv_indptr)
        lens = host_int_array("kv_len_arr", kv_len_arr)
        if qo.ndim != 1 or len(qo) < 1 or qo[0] != 0 or \
                (qo[1:] < qo[:-1]).any():
            raise ValueError("qo_indptr: expected [batch + 1] non-decreasing "
                             "row offsets starting at 0")
        self.batch, self.nnz = len(qo) - 1, int(qo[-1])
        # FlashInfer's kv_indptr and kv_len_arr may be longer than the batch
        # (buffers sized for the largest); the batch is qo_indptr's.
        if ip.ndim != 1 or lens.ndim != 1 or len(ip) < self.batch + 1 or \
                len(lens) < self.batch:
            raise ValueError(f"kv_indptr: shape {list(ip.shape)}, kv_len_arr: "
                             f"shape {list(lens.shape)}, expected at least "
                             f"[{self.batch + 1}] and [{self.batch}]")
        ip, lens = ip[:self.batch + 1], lens[:self.batch]
        kv_indptr = kv_indptr[:self.batch + 1]
        pages = ip[1:] - ip[:-1]
        bad = (lens < 0) | (lens > pages * page_size) | \
            ((pages > 0) & (lens <= (pages - 1) * page_size))
        if bad.any():
            b = int(bad.nonzero()[0][0])
            raise ValueError(f"kv_len_arr[{b}] = {int(lens[b])} does not fit "
                             f"the request's {int(pages[b])} pages of "
                             f"{page_size} tokens")
        # kvir's CSR tables give the last page's fill instead of kv_len.
        last = np.where(pages > 0, lens - (pages - 1) * page_size, 0)
        self._last = last.astype(np.int32)
        rows = bool((qo[1:] - qo[:-1] != 1).any())
        if causal and not rows:
            causal = False  # one row per request sees all its keys anyway
        self.rows = rows
        spec = _options({"op": "mla_decode", "num_heads": int(num_heads),
                         "head_dim_ckv": int(head_dim_ckv),
                         "head_dim_kpe": int(head_dim_kpe),
                         "page_size": int(page_size), "dtype": dtype,
                         "rows": rows, "causal": bool(causal)},
                        -1, None, sm_scale, lse_base, "NONE")
        self.spec = spec
        if int(head_dim_kpe) == 0:
            # MLA without a rotary part is attention of one KV head whose
            # keys and values are both the ckv cache: a paged decode (one
            # row per request) or prefill over it as split K and V pools.
            spec = self._ckv_attention_spec(spec)
        self.page_size = int(page_size)
        self.kv_lengths = [int(n) for n in lens]
        self._qo_host = [int(x) for x in qo] if rows else None
        if rows:
            a, pa = _i32(qo)
            _check_tables("kvir_check_query_rows", pa,
                          ctypes.c_int64(self.nnz), ctypes.c_int64(self.batch))
        self._check = _CsrCheck(ip, host_int_array("kv_indices", kv_indices),
                                last, page_size)
        graph = self._graph.fill([("qo_indptr", qo_indptr),
                                  ("kv_indptr", kv_indptr),
                                  ("kv_indices", kv_indices)], "qo_indptr",
                                 self.batch)
        named = graph[1:] + [("kv_last_page_len", self._last)]
        if rows:
            named.insert(0, graph[0])
        self._tables = _Tables(named)
        self._adopt(spec, _plan_device(qo_indptr), self._qo_host)

    def _ckv_attention_spec(self, mla):
        """The decode or prefill spec of an MLA spec without kpe."""
        spec = {k: mla[k] for k in ("page_size", "dtype", "lse_base")
                if k in mla}
        spec.update(op="prefill" if mla["rows"] else "decode",
                    num_qo_heads=mla["num_heads"], num_kv_heads=1,
                    head_dim=mla["head_dim_ckv"], kv_layout="nhd",
                    kv_storage="split", table="csr",
                    sm_scale=mla.get("sm_scale",
                                     mla["head_dim_ckv"] ** -0.5))
        if mla["rows"]:
            spec.update(kv="paged", causal=mla["causal"])
        return spec

    def run(self, q_nope, q_pe, ckv_cache, kpe_cache, out=None, lse=None,
            return_lse=False, profiler_buffer=None, kv_len=None,
            page_table=None, return_lse_base_on_e=False, o_scale=None, *,
            ckv_scale=None, ckv_scale_arr=None, kpe_scale=None):
        self._planned()
        for name, value in [("profiler_buffer", profiler_buffer),
                            ("kv_len", kv_len), ("page_table", page_table),
                            ("ckv_scale_arr", ckv_scale_arr)]:
            if value is not None:
                raise ValueError(f"{name}: FlashInfer's trtllm-gen / "
                                 f"profiler argument; kvir's MLA takes the "
                                 f"plan's tables")
        for name, value in [("o_scale", o_scale), ("ckv_scale", ckv_scale),
                            ("kpe_scale", kpe_scale)]:
            if value not in (None, 1.0):
                raise ValueError(f"{name}: {value}; kvir's MLA caches hold "
                                 f"the activation type, unscaled (1.0)")
        s = self.spec
        h, dc, dp, ps = (s["num_heads"], s["head_dim_ckv"], s["head_dim_kpe"],
                         s["page_size"])
        rows = self.nnz if self.rows else self.batch
        qn = Arg("q_nope", _input(q_nope)).check(s["dtype"], [rows, h, dc])
        qp = Arg("q_pe", _input(q_pe)).check(s["dtype"], [rows, h, dp])
        ckv = Arg("ckv_cache", ckv_cache).check(s["dtype"], [None, ps, dc])
        kpe = Arg("kpe_cache", kpe_cache).check(s["dtype"],
                                               [ckv.shape[0], ps, dp])
        self._check(ckv.shape[0])
        if out is None:
            out = empty_like_arg(qn, [rows, h, dc], s["dtype"])
        if lse is None:
            lse = empty_like_arg(qn, [rows, h], "f32")
        oa = Arg("out", out).check(s["dtype"], [rows, h, dc])
        la = Arg("lse", lse).check("f32", [rows, h])
        t = self._tables.on(qn)
        if dp == 0:
            # One KV head of width dc, read as both K and V.
            pool = ckv_cache.reshape(ckv.shape[0], ps, 1, dc)
            pools = [("k_pool", Arg("ckv_cache", pool)),
                     ("v_pool", Arg("ckv_cache", pool))]
            args = [("q", qn)] + t[:1 if self.rows else 0] + pools + \
                t[1 if self.rows else 0:] + [("out", oa), ("lse", la)]
        else:
            args = [("q_nope", qn), ("q_pe", qp)] + \
                t[:1 if self.rows else 0] + \
                [("ckv_pool", ckv), ("kpe_pool", kpe)] + \
                t[1 if self.rows else 0:] + [("out", oa), ("lse", la)]
        self._exec.run(args, self.kv_lengths, self.backend,
                       qo_indptr=self._qo_host)
        if return_lse_base_on_e and s["lse_base"] == "2":
            lse *= float(np.log(2.0))
        return (out, lse) if return_lse else out


class MultiLevelCascadeAttentionWrapper:
    """Cascade attention over `num_levels` levels of one paged cache, as
    FlashInfer's MultiLevelCascadeAttentionWrapper: level l groups the
    query rows into requests by qo_indptr_arr[l] and reads the pages of
    its tables; shared-prefix levels are attended without a mask, the last
    level causally, and the states merged (kvir's merge kernel). Each level
    is a BatchPrefillWithPagedKVCacheWrapper."""

    def __init__(self, num_levels, float_workspace_buffer=None,
                 kv_layout="NHD", use_cuda_graph=False, qo_indptr_buf_arr=None,
                 paged_kv_indptr_buf_arr=None, paged_kv_indices_buf_arr=None,
                 paged_kv_last_page_len_buf_arr=None, backend="auto",
                 chip=None, cache_dir=None):
        if int(num_levels) < 1:
            raise ValueError(f"num_levels: {num_levels}, expected >= 1")

        def level(arr, i):
            return None if arr is None else arr[i]
        self.levels = [BatchPrefillWithPagedKVCacheWrapper(
            kv_layout=kv_layout, use_cuda_graph=use_cuda_graph,
            qo_indptr_buf=level(qo_indptr_buf_arr, i),
            paged_kv_indptr_buf=level(paged_kv_indptr_buf_arr, i),
            paged_kv_indices_buf=level(paged_kv_indices_buf_arr, i),
            paged_kv_last_page_len_buf=level(paged_kv_last_page_len_buf_arr,
                                             i),
            backend=backend, chip=chip, cache_dir=cache_dir)
            for i in range(int(num_levels))]
        self.chip, self.cache_dir = chip, cache_dir
        self.backend = _backend(backend)

    def plan(self, qo_indptr_arr, paged_kv_indptr_arr, paged_kv_indices_arr,
             paged_kv_last_page_len, num_qo_heads, num_kv_heads, head_dim,
             page_size, causal=False, sm_scale=None, logits_soft_cap=None,
             q_data_type="float16", kv_data_type=None, lse_base="2"):
        n = len(self.levels)
        for name, arr in [("qo_indptr_arr", qo_indptr_arr),
                          ("paged_kv_indptr_arr", paged_kv_indptr_arr),
                          ("paged_kv_indices_arr", paged_kv_indices_arr),
                          ("paged_kv_last_page_len", paged_kv_last_page_len)]:
            if len(arr) != n:
                raise ValueError(f"{name}: {len(arr)} levels, expected {n}")
        rows = {int(host_int_array("qo_indptr_arr", q)[-1])
                for q in qo_indptr_arr}
        if len(rows) != 1:
            raise ValueError(f"qo_indptr_arr: the levels cover {sorted(rows)} "
                             f"rows; every level groups the same rows")
        for level, wrapper in enumerate(self.levels):
            wrapper.plan(qo_indptr_arr[level], paged_kv_indptr_arr[level],
                         paged_kv_indices_arr[level],
                         paged_kv_last_page_len[level], num_qo_heads,
                         num_kv_heads, head_dim, page_size,
                         causal=causal and level == n - 1, sm_scale=sm_scale,
                         logits_soft_cap=logits_soft_cap,
                         q_data_type=q_data_type, kv_data_type=kv_data_type,
                         lse_base=lse_base)
        self.lse_base = str(lse_base)

    def run(self, q, paged_kv_cache, out=None, lse=None, return_lse=False):
        o, s = self.levels[0].run(q, paged_kv_cache, return_lse=True)
        for wrapper in self.levels[1:]:
            o_l, s_l = wrapper.run(q, paged_kv_cache, return_lse=True)
            o, s = merge_state(o, s, o_l, s_l, lse_base=self.lse_base,
                               chip=self.chip, cache_dir=self.cache_dir,
                               backend=self.backend)
        if out is not None:
            out[...] = o
            o = out
        if lse is not None:
            lse[...] = s
            s = lse
        return (o, s) if return_lse else o


class BatchAttention:
    """FlashInfer's BatchAttention: one serving step's attention over a
    paged cache, whatever its requests' query rows -- decodes of one row
    beside prefill chunks of thousands -- in one launch (and the merge of
    the query tiles it cut): kvir's paged prefill on the work schedule,
    which counts each tile's visible keys and cuts the costly ones. The
    tables are CSR over pages with each request's kv_len (kv_len_arr);
    run() returns (out, lse), the LSE base 2 as FlashInfer's."""

    def __init__(self, kv_layout="NHD", device="cuda", backend="auto",
                 chip=None, cache_dir=None):
        # device: FlashInfer's workspace buffers' device; kvir runs where
        # run()'s tensors are.
        self._prefill = BatchPrefillWithPagedKVCacheWrapper(
            kv_layout=kv_layout, backend=backend, chip=chip,
            cache_dir=cache_dir)

    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr,
             num_qo_heads, num_kv_heads, head_dim_qk, head_dim_vo,
             page_size, causal=False, sm_scale=None, logits_soft_cap=None,
             q_data_type="bfloat16", kv_data_type=None, use_profiler=False):
        if use_profiler:
            raise ValueError("use_profiler: FlashInfer's profiler has no "
                             "kvir counterpart (kvir's bench counts the "
                             "kernels' work in its emulator)")
        ip = host_int_array("kv_indptr", kv_indptr).astype(np.int64)
        lens = host_int_array("kv_len_arr", kv_len_arr).astype(np.int64)
        if ip.ndim != 1 or lens.shape != (len(ip) - 1,):
            raise ValueError(f"kv_indptr: shape {list(ip.shape)} and "
                             f"kv_len_arr: shape {list(lens.shape)}, "
                             f"expected [batch + 1] and [batch]")
        page = int(page_size)
        pages = ip[1:] - ip[:-1]
        # Each request's pages hold its kv_len: the last one 1 .. page_size
        # tokens (none without pages).
        misfit = (lens > pages * page) | (lens <= (pages - 1) * page)
        if misfit.any():
            bad = int(np.nonzero(misfit)[0][0])
            raise ValueError(f"kv_len_arr[{bad}] = {int(lens[bad])} does not "
                             f"fit its {int(pages[bad])} pages of {page}")
        last = np.where(pages > 0, lens - (pages - 1) * page, 0)
        self._prefill.plan(
            qo_indptr, kv_indptr, kv_indices, last.astype(np.int32),
            num_qo_heads, num_kv_heads, head_dim_qk, page,
            head_dim_vo=head_dim_vo, causal=causal, sm_scale=sm_scale,
            logits_soft_cap=logits_soft_cap, q_data_type=q_data_type,
            kv_data_type=kv_data_type)

    def run(self, q, kv_cache, out=None, lse=None, logits_soft_cap=None,
            profiler_buffer=None):
        if logits_soft_cap not in (None, 0.0) and \
                self._prefill.spec.get("logits_soft_cap") != \
                float(logits_soft_cap):
            raise ValueError(f"logits_soft_cap: {logits_soft_cap} at run(), "
                             f"the plan's is "
                             f"{self._prefill.spec.get('logits_soft_cap')}")
        return self._prefill.run(q, kv_cache, out=out, lse=lse,
                                 return_lse=True)


# Aliases under the names without FlashInfer's "Wrapper" suffix.
BatchDecodeWithPagedKVCache = BatchDecodeWithPagedKVCacheWrapper
BatchPrefillWithPagedKVCache = BatchPrefillWithPagedKVCacheWrapper
BatchPrefillWithRaggedKVCache = BatchPrefillWithRaggedKVCacheWrapper
