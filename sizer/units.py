"""Units: the single source of truth for byte, time and FLOP scales and for element sizes.

Internal maths is in SI base units: bytes, seconds, FLOP/s, bytes/s, USD per hour.
Binary and decimal prefixes are never mixed: GB = 10**9 bytes, GiB = 2**30 bytes.
Catalog files state their unit in the key name (`memory_gib`, `hbm_gb_per_s`) and are
converted once, when loaded.
"""

from __future__ import annotations

KIB = 2**10
MIB = 2**20
GIB = 2**30

KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12

GIGA = 10**9
TERA = 10**12

SECONDS_PER_HOUR = 3600.0
MILLION = 1_000_000

# Bytes per stored element, including the block scales that quantised formats carry.
# Floats, so that 4-bit formats are 0.5 and never `4 // 8 == 0`.
#   mxfp4: 4-bit E2M1 values + one 8-bit E8M0 scale per 32 values  -> (32*4 + 8) / 32 / 8 = 0.53125
#          (OCP Microscaling Formats spec v1.0, block size 32)
#   nvfp4: 4-bit E2M1 values + one FP8 E4M3 scale per 16 values     -> (16*4 + 8) / 16 / 8 = 0.5625
#          (NVIDIA NVFP4: 16-element micro-blocks with an FP8 scale; the per-tensor FP32 scale is negligible)
#   int4:  4-bit integers + one fp16 scale and one 4-bit zero point per group of 128 (AWQ/GPTQ default)
#          -> (128*4 + 16 + 4) / 128 / 8 = 0.51953125
#   q8_0, q4_0: llama.cpp's GGUF block types (ggml/src/ggml-common.h block_q8_0, block_q4_0: 32
#          weights and one fp16 scale a block) -> 34 B / 32 = 1.0625 and 18 B / 32 = 0.5625
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": (128 * 4 + 16 + 4) / 128 / 8,
    "mxfp4": (32 * 4 + 8) / 32 / 8,
    "nvfp4": (16 * 4 + 8) / 16 / 8,
    "q8_0": 34 / 32,
    "q4_0": 18 / 32,
}

# The tensor-core format a weight dtype computes in on a device that supports it, and the
# catalog field holding that format's dense throughput. Weight-only formats (int4 AWQ/GPTQ)
# dequantise to bf16 and compute there.
COMPUTE_FIELD: dict[str, str] = {
    "bf16": "bf16",
    "fp16": "bf16",
    "fp8": "fp8",
    "int8": "int8",
    "int4": "bf16",
    "mxfp4": "fp4",
    "nvfp4": "fp4",
    # llama.cpp's quantised matmuls (MMQ) dot int8-quantised activations with the blocks; no
    # llama.cpp measurement calibrates them, so GGUF blocks are sized at 16-bit throughput, as the
    # weight-only formats are: a prefill that may run faster than sized, never slower on this count
    "q8_0": "bf16",
    "q4_0": "bf16",
}

# Weight formats that need native support on the device (the catalog's dense-throughput
# field for that format must be present). bf16/fp16/int4 run everywhere.
REQUIRES_NATIVE: dict[str, str] = {"fp8": "fp8", "int8": "int8", "nvfp4": "fp4"}

KV_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4")

# KV-cache element formats. Bytes per element, including block scales where the format has them.
#   int8: one per-tensor scale (TensorRT-LLM INT8 KV cache): 1 B per element
#   int4: 4-bit values plus an fp16 scale and an fp16 zero point per token and head (LMDeploy-style
#         asymmetric int4 KV): 0.5 B per element + 4 B per head_dim elements (see kv_element_bytes)
#   llama.cpp GGML block formats (ggml-common.h block structs, 32 values per block):
#     q8_0 = 32 int8 + fp16 scale = 34 B / 32;  q4_0 = 16 B + fp16 scale = 18 B / 32;
#     q4_1 = 16 B + fp16 scale + fp16 min = 20 B / 32;  q5_0 = 22 B / 32;  q5_1 = 24 B / 32;
#     iq4_nl = 18 B / 32;  f16 = 2;  f32 = 4
KV_ELEMENT_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "f32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "f16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "q8_0": 34 / 32,
    "q5_1": 24 / 32,
    "q5_0": 22 / 32,
    "q4_1": 20 / 32,
    "q4_0": 18 / 32,
    "iq4_nl": 18 / 32,
}
LLAMACPP_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl")


def kv_element_bytes(dtype: str, head_dim: int) -> float:
    """Bytes per stored K or V element in `dtype`, scales included, for heads of `head_dim`."""
    if dtype == "int4":
        return 0.5 + 4.0 / head_dim  # fp16 scale + fp16 zero point per token per head
    return KV_ELEMENT_BYTES[dtype]
WEIGHT_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4", "q8_0", "q4_0")
# The weight formats llama.cpp serves, among WEIGHT_DTYPES: the GGUF types F16, BF16, Q8_0, Q4_0 and
# MXFP4 (ggml/include/ggml.h enum ggml_type; MXFP4 since its gpt-oss support, August 2025). GGUF
# has no FP8 type (ggml-org/llama.cpp#27512 and #28485, open in 2026-09) and sizer does not size
# its k-quant mixes (Q4_K_M's share of Q6_K tensors varies by model).
LLAMACPP_WEIGHT_DTYPES = ("bf16", "fp16", "q8_0", "q4_0", "mxfp4")
# The GGUF file type of each, as llama.cpp names it (a GGUF file's name says it by custom)
GGUF_TYPE_NAMES = {"bf16": "BF16", "fp16": "F16", "q8_0": "Q8_0", "q4_0": "Q4_0", "mxfp4": "MXFP4"}

# Names users and config.json files use for the same formats.
DTYPE_ALIASES: dict[str, str] = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_e4m3fn": "fp8",  # PyTorch's name (torch.float8_e4m3fn), as checkpoints and logs print it
    "float8_e4m3fn": "fp8",
    "fp8_e4m3fnuz": "fp8",  # ROCm's (MI300-series) FP8
    "float8_e4m3fnuz": "fp8",
    "e4m3": "fp8",
    "awq": "int4",
    "gptq": "int4",
    "w4a16": "int4",
    "f16": "fp16",
    "auto": "auto",
}


def normalise_dtype(name: str) -> str:
    """Return the canonical dtype name for `name` (case-insensitive), or `name` unchanged."""
    key = str(name).strip().lower()
    return DTYPE_ALIASES.get(key, key)


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling division for non-negative integers: ceil(a / b)."""
    return -(-a // b)


def gib(n_bytes: float) -> float:
    """Bytes -> GiB (2**30), for display only."""
    return n_bytes / GIB
