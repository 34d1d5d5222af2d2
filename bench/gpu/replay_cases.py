#!/usr/bin/env python3
"""Replays emulated GPU test calls on a GPU and checks the results.

A case directory comes from the GPU tests run with KVIR_DUMP_CASES=<dir>
(test/GPU/CaseDump.h) plus the PTX of its source for its chip
(bench/gpu/prepare_cases.sh writes `kv_kernels.ptx` next to `case.json`).
For each case this loads the PTX, uploads every allocation the emulated
launches referenced with its contents at first use, runs the same launches
in the same order with the same parameters (pointers moved to the GPU's
buffers), and then compares
  * every buffer the call changed with the emulator's final contents
    (emulator agreement: bit-exact count and largest difference), and
  * each attention state the test checked with the float64 reference state
    the test computed, by the test's own metric and tolerances (numerics on
    silicon).
Needs numpy and the CUDA driver (libcuda), nothing else; `--dry-run` runs
everything but the launches on the CPU (checks kernel names and parameter
counts against the PTX).

  replay_cases.py [--dry-run [--self-check]] [--json FILE] CASE_DIR...
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

# kvir's Python package: python/ in the source tree, beside this script in
# a bundle (bundle.sh).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(_here, "..", "..", "python")]
from kvir.cuda_driver import Driver, DryDriver, CudaError  # noqa: E402


def fp8_table(exp_bits, man_bits, bias, finite_max_nan):
    """Values of the 256 codes of an fp8 format (e4m3fn: no inf, NaN at
    S.1111.111; e5m2: IEEE-like)."""
    vals = np.zeros(256, dtype=np.float64)
    for code in range(256):
        s = -1.0 if code & 0x80 else 1.0
        e = (code >> man_bits) & ((1 << exp_bits) - 1)
        m = code & ((1 << man_bits) - 1)
        if finite_max_nan:
            if e == (1 << exp_bits) - 1 and m == (1 << man_bits) - 1:
                vals[code] = math.nan
                continue
        elif e == (1 << exp_bits) - 1:
            vals[code] = s * math.inf if m == 0 else math.nan
            continue
        if e == 0:
            vals[code] = s * m * 2.0 ** (1 - bias - man_bits)
        else:
            vals[code] = s * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
    return vals


FP8 = {"f8E4M3FN": fp8_table(4, 3, 7, True), "f8E5M2": fp8_table(5, 2, 15, False)}
ITEM = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i8": 1, "i1": 1,
        "f8E4M3FN": 1, "f8E5M2": 1, "i64": 8}


def decode(raw, dtype):
    """float64 values of the elements of `raw` (bytes) of `dtype`."""
    if dtype == "f32":
        return np.frombuffer(raw, np.float32).astype(np.float64)
    if dtype == "f16":
        return np.frombuffer(raw, np.float16).astype(np.float64)
    if dtype == "bf16":
        u = np.frombuffer(raw, np.uint16).astype(np.uint32) << 16
        return u.view(np.float32).astype(np.float64)
    if dtype in FP8:
        return FP8[dtype][np.frombuffer(raw, np.uint8)]
    if dtype == "i32":
        return np.frombuffer(raw, np.int32).astype(np.float64)
    if dtype == "i64":
        return np.frombuffer(raw, np.int64).astype(np.float64)
    if dtype in ("i8",):
        return np.frombuffer(raw, np.int8).astype(np.float64)
    return np.frombuffer(raw, np.uint8).astype(np.float64)


def view(raw, spec):
    """The strided view `spec` (dtype, shape, strides, offset in elements)
    of an allocation's bytes, as float64."""
    flat = decode(raw[: len(raw) // ITEM[spec["dtype"]] * ITEM[spec["dtype"]]],
                  spec["dtype"])
    shape, strides = spec["shape"], spec["strides"]
    if any(s == 0 for s in shape):
        return np.zeros(shape)
    idx = np.full(shape, spec["offset"], dtype=np.int64)
    for axis, (n, st) in enumerate(zip(shape, strides)):
        sh = [1] * len(shape)
        sh[axis] = n
        idx = idx + (np.arange(n) * st).reshape(sh)
    return flat[idx]


def compare_state(got_o, got_lse, ref_o, ref_lse, tol, lse_tol):
    """compareGpuState's metric: per (row, head) max |o - ref| / max(max
    |ref|, 1e-4) <= tol and |lse - ref| <= lse_tol; empty rows (ref lse
    -inf) need o == 0 and lse == -inf; NaN never passes."""
    empty = np.isneginf(ref_lse)
    nan = np.isnan(got_o).any(axis=-1) | np.isnan(got_lse)
    err = np.abs(np.where(np.isnan(got_o), np.inf, got_o - ref_o)).max(axis=-1)
    ref_max = np.maximum(np.abs(ref_o).max(axis=-1), 1e-4)
    rel = np.where(empty, 0.0, err / ref_max)
    lse_err = np.where(empty, 0.0, np.abs(got_lse - np.where(empty, 0, ref_lse)))
    ok_empty = (got_o == 0).all(axis=-1) & np.isneginf(got_lse)
    ok_full = (rel <= tol) & np.isfinite(got_lse) & (lse_err <= lse_tol)
    ok = ~nan & np.where(empty, ok_empty, ok_full)
    finite = ~empty
    return {
        "pairs": int(ok.size),
        "failures": int((~ok).sum()),
        "empty_rows": int(empty.sum()),
        "max_rel_err": float(rel[finite].max()) if finite.any() else 0.0,
        "max_lse_err": float(lse_err[finite].max()) if finite.any() else 0.0,
        "tolerance": tol,
        "lse_tolerance": lse_tol,
    }


def replay(case_dir, drv, self_check=False):
    case = json.load(open(os.path.join(case_dir, "case.json")))
    ptx = open(os.path.join(case_dir, "kv_kernels.ptx")).read()
    allocs = {a["id"]: a for a in case["allocations"]}
    ptrs = {}
    try:
        for a in case["allocations"]:
            ptrs[a["id"]] = drv.alloc(a["bytes"])
            data = open(os.path.join(case_dir, a["file"]), "rb").read()
            drv.upload(ptrs[a["id"]], data)
        for launch in case["launches"]:
            params = []
            for p in launch["params"]:
                raw = bytes.fromhex(p["bytes"])
                if "alloc" in p:
                    raw = struct.pack("<Q", ptrs[p["alloc"]] + p["offset"])
                params.append(raw)
            drv.launch(ptx, launch["kernel"], launch["grid"], launch["block"],
                       launch["dynamic_shared_bytes"], params)
        drv.synchronize()
        final = {i: drv.download(ptrs[i], allocs[i]["bytes"]) for i in ptrs}
        if self_check:
            # The emulator's own results in place of the GPU's: checks the
            # comparisons (they must pass, bit-exact) without a GPU.
            for arg in case["args"]:
                if "final_file" in arg and arg.get("alloc") is not None:
                    final[arg["alloc"]] = open(os.path.join(
                        case_dir, arg["final_file"]), "rb").read()
    finally:
        for p in ptrs.values():
            drv.free(p)

    result = {"case": os.path.basename(case_dir.rstrip("/")),
              "launches": [l["kernel"] for l in case["launches"]],
              "buffers": [], "checks": []}
    # Emulator agreement on every buffer the call changed.
    for arg in case["args"]:
        if "final_file" not in arg or arg.get("alloc") is None:
            continue
        emu_raw = open(os.path.join(case_dir, arg["final_file"]), "rb").read()
        gpu_raw = final[arg["alloc"]]
        emu = view(emu_raw, arg)
        gpu = view(gpu_raw, arg)
        same_nan = np.isnan(emu) == np.isnan(gpu)
        both = ~np.isnan(emu) & ~np.isnan(gpu)
        with np.errstate(invalid="ignore"):
            diff = np.where(both & ~(emu == gpu), np.abs(gpu - emu), 0.0)
        scale = max(float(np.abs(np.where(np.isinf(emu), 0, np.nan_to_num(emu))).max())
                    if emu.size else 0.0, 1e-30)
        ib = ITEM[arg["dtype"]]
        result["buffers"].append({
            "arg": arg["name"], "dtype": arg["dtype"],
            "elements": int(emu.size),
            "bit_exact": gpu_raw == emu_raw,
            "differing": int((both & (emu != gpu)).sum() + (~same_nan).sum()),
            "nan_mismatch": int((~same_nan).sum()),
            "max_abs_diff": float(np.nan_to_num(diff, posinf=1e300).max()) if diff.size else 0.0,
            "max_rel_diff": float(np.nan_to_num(diff, posinf=1e300).max() / scale) if diff.size else 0.0,
            "bytes": len(emu_raw) // ib * ib,
        })
    # Numerics against the float64 reference, by the test's metric.
    for check in case["checks"]:
        rows, heads, dv = check["rows"], check["heads"], check["head_dim_v"]
        ref_o = np.fromfile(os.path.join(case_dir, check["ref_o"]),
                            np.float64).reshape(rows, heads, dv)
        ref_lse = np.fromfile(os.path.join(case_dir, check["ref_lse"]),
                              np.float64).reshape(rows, heads)
        got_o = view(final[check["o"]["alloc"]], check["o"])
        got_lse = view(final[check["lse"]["alloc"]], check["lse"])
        r = compare_state(got_o, got_lse, ref_o, ref_lse, check["tolerance"],
                          check["lse_tolerance"])
        result["checks"].append(r)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--self-check", action="store_true",
                    help="with --dry-run: compare the emulator's results "
                    "with themselves and the reference (must pass)")
    ap.add_argument("--json")
    args = ap.parse_args()
    drv = DryDriver() if args.dry_run else Driver()
    print(f"# replaying {len(args.cases)} case(s) on {drv.name()}")
    results, bad = [], 0
    for d in args.cases:
        try:
            r = replay(d, drv, args.self_check)
        except CudaError as e:
            r = {"case": os.path.basename(d.rstrip("/")), "error": str(e)}
        results.append(r)
        if "error" in r:
            bad += 1
            print(f"FAIL {r['case']}: {r['error']}")
            continue
        fails = sum(c["failures"] for c in r["checks"])
        nan_bad = sum(b["nan_mismatch"] for b in r["buffers"])
        skip = args.dry_run and not args.self_check
        status = "ok" if (skip or (fails == 0 and nan_bad == 0)) else "FAIL"
        bad += status != "ok"
        rel = max([c["max_rel_err"] for c in r["checks"]] or [0])
        lse = max([c["max_lse_err"] for c in r["checks"]] or [0])
        agree = max([b["max_rel_diff"] for b in r["buffers"]] or [0])
        exact = all(b["bit_exact"] for b in r["buffers"])
        print(f"{status} {r['case']}: {len(r['launches'])} launch(es); vs "
              f"float64 ref: max rel err {rel:.3g}, max lse err {lse:.3g}, "
              f"{fails} failing (row, head); vs emulator: "
              f"{'bit-exact' if exact else f'max rel diff {agree:.3g}'}")
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)
    print(f"# {len(results) - bad} of {len(results)} cases passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
