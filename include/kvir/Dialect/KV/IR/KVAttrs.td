//===- KVAttrs.td - kv dialect enums and attributes -------*- tablegen -*-===//
#ifndef KVIR_DIALECT_KV_IR_KVATTRS_TD
#define KVIR_DIALECT_KV_IR_KVATTRS_TD

include "kvir/Dialect/KV/IR/KVDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def KV_LayoutKind : I32EnumAttr<"LayoutKind",
    "how (page, kv, slot, head, dim) maps to pool indices", [
  I32EnumAttrCase<"nhd", 0>,     // (pages, [2,] page_size, H, D)
  I32EnumAttrCase<"hnd", 1>,     // (pages, [2,] H, page_size, D)
  I32EnumAttrCase<"vllm", 2>,    // K [p, h, d/x, slot, x], V [p, h, d, slot]
  I32EnumAttrCase<"ppl0", 3>,    // OpenPPL cache_layout 0: (T, L, 2, H, D)
  I32EnumAttrCase<"ppl1", 4>,    // (L, T, 2, H, D)
  I32EnumAttrCase<"ppl2", 5>,    // (L, 2, T, H, D)
  I32EnumAttrCase<"ppl3", 6>,    // (L, 2, H, T, D)
  I32EnumAttrCase<"llama", 7>,   // (max_batch, max_seq, H, D), split K/V
  I32EnumAttrCase<"affine", 8>   // user affine maps
]> {
  let cppNamespace = "::kvir::kv";
  let genSpecializedAttr = 0;
}

def KV_Storage : I32EnumAttr<"Storage", "how K and V are pooled", [
  I32EnumAttrCase<"combined", 0>,  // one pool holding K and V
  I32EnumAttrCase<"split", 1>,     // separate K and V pools
  I32EnumAttrCase<"mla", 2>        // MLA latent cache: ckv and kpe pools
]> {
  let cppNamespace = "::kvir::kv";
  let genSpecializedAttr = 0;
}

def KV_TableForm : I32EnumAttr<"TableForm", "how requests find their tokens", [
  I32EnumAttrCase<"csr", 0>,           // FlashInfer indptr/indices/last_page_len
  I32EnumAttrCase<"block_table", 1>,   // vLLM block_table[B][n] + seq_lens
  I32EnumAttrCase<"token_table", 2>,   // OpenPPL cache_mode 1: token offsets per page
  I32EnumAttrCase<"token_offset", 3>   // OpenPPL cache_mode 0 / Llama: start + t
]> {
  let cppNamespace = "::kvir::kv";
  let genSpecializedAttr = 0;
}

def KV_Quant : I32EnumAttr<"Quant", "KV storage quantization", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"int8_group", 1>,  // int8 with per (token, head, group) scales
  I32EnumAttrCase<"fp8_e4m3", 2>,    // fp8 with per-tensor k_scale / v_scale
  I32EnumAttrCase<"fp8_e5m2", 3>
]> {
  let cppNamespace = "::kvir::kv";
  let genSpecializedAttr = 0;
}

def KV_LseBase : I32EnumAttr<"LseBase", "base of a state's log-sum-exp", [
  I32EnumAttrCase<"e", 0>,
  I32EnumAttrCase<"two", 1>
]> {
  let cppNamespace = "::kvir::kv";
  let genSpecializedAttr = 0;
}

def KV_RopeStyle : I32EnumAttr<"RopeStyle", "pairing of rotary dimensions", [
  I32EnumAttrCase<"interleave", 0>,   // pairs (2i, 2i+1), Meta Llama freqs_cis
  I32EnumAttrCase<"rotate_half", 1>   // pairs (i, i + D/2), GPT-NeoX / HF
]> {
  let cppNamespace = "::kvir::kv";
  let genSpecializedAttr = 0;
}

class KV_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<KV_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def KV_RopeAttr : KV_Attr<"Rope", "rope"> {
  let summary = "rotary position embedding parameters";
  let description = [{
    Rotates dimension pairs of the first `R` dims (`rotary_dim`, all of the
    head dim `D` when omitted; the others pass unchanged) by
    `pos * scale * f_i` radians, `f_i = theta^(-2i/R)`. `interleave` pairs
    dimensions (2i, 2i+1) as Meta's Llama; `rotate_half` pairs
    (i, i + R/2) as GPT-NeoX and Hugging Face. FlashInfer's `rope_scale` is
    `1 / scale`. With `factor` (and `low_freq_factor`, `high_freq_factor`,
    `original_max_position`), Llama 3.1's frequency scaling
    (`apply_llama31_rope`): with wavelength `w = 2 pi / f_i`, low =
    `original_max_position / low_freq_factor` and high =
    `original_max_position / high_freq_factor`, `f_i` stays where
    `w < high`, becomes `f_i / factor` where `w > low`, and in between
    `(1 - s) f_i / factor + s f_i` with
    `s = (original_max_position / w - low_freq_factor) /
    (high_freq_factor - low_freq_factor)`.

    ```mlir
    #kv.rope<rotate_half, theta = 1.0e+04, scale = 1.0>
    #kv.rope<interleave, theta = 5.0e+05, scale = 1.0, rotary_dim = 64,
             factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0,
             original_max_position = 8192.0>
    ```
  }];
  let parameters = (ins EnumParameter<KV_RopeStyle>:$style,
                        "::llvm::APFloat":$theta, "::llvm::APFloat":$scale,
                        "int64_t":$rotaryDim, "::llvm::APFloat":$factor,
                        "::llvm::APFloat":$lowFreqFactor,
                        "::llvm::APFloat":$highFreqFactor,
                        "::llvm::APFloat":$originalMaxPosition);
  let builders = [
    // Rotation of the whole head dim, no frequency scaling.
    AttrBuilder<(ins "RopeStyle":$style, "::llvm::APFloat":$theta,
                     "::llvm::APFloat":$scale), [{
      return $_get($_ctxt, style, theta, scale, int64_t(0),
                   ::llvm::APFloat(0.0), ::llvm::APFloat(0.0),
                   ::llvm::APFloat(0.0), ::llvm::APFloat(0.0));
    }]>
  ];
  let extraClassDeclaration = [{
    /// The rotated dims for a head dim of `headDim`.
    int64_t getRotatedDims(int64_t headDim) const {
      return getRotaryDim() ? getRotaryDim() : headDim;
    }
    /// Whether Llama 3.1's frequency scaling applies.
    bool hasLlama31Scaling() const { return !getFactor().isZero(); }
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // KVIR_DIALECT_KV_IR_KVATTRS_TD
