"""The seeds' arithmetic, number by number. Each test names the seed file it reproduces
(../shared/seeds/ in the project's workspace); the numbers are the seeds' own."""

from __future__ import annotations

import pytest

from sizer.memory import (
    admissions,
    batch_kv_bytes,
    block_table_bytes,
    blocks_for,
    kv_bytes_per_token,
    kv_bytes_per_token_per_layer,
    kv_growth_bytes_per_step,
    max_concurrent_sequences,
    model_kv_bytes_per_token,
    sequence_kv_bytes,
    stage_kv,
)
from sizer.model import total_weight_bytes
from sizer.optimize import usd_per_million_tokens
from sizer.units import GB, GIB, KIB, MIB

# --- seed 000_ded45dbffc496ba4.txt: "How Key-Value Cache Bytes Set the Batch Ceiling" -----------


def test_seed000_representative_shape_is_128_kib_per_token():
    # "32 layers, 8 key heads, a head dimension of 128, and two-byte elements ... 131,072 bytes, or 128 KiB"
    assert kv_bytes_per_token(32, 8, 128, 2) == 131_072 == 128 * KIB


def test_seed000_4096_token_sequence_is_512_mib_and_four_are_2_gib():
    per_token = kv_bytes_per_token(32, 8, 128, 2)
    assert sequence_kv_bytes(per_token, 4096) == 512 * MIB
    assert batch_kv_bytes(per_token, 4096, 4) == 2 * GIB


def test_seed000_70b_weights_at_two_bytes_are_140_gb(catalog):
    # "70 billion parameters at two bytes ... 140 GB" (GB = 1e9). Llama-2-70B's own count, by hand from its
    # config: 80 layers x (q, o 2 x 8,192^2 + k, v 2 x 8,192 x 1,024 + MLP 3 x 8,192 x 28,672 + 2 norms x 8,192)
    # + embedding and lm_head 2 x 32,000 x 8,192 + the final norm 8,192 = 68,976,648,192 parameters
    # (the HF model page's figure), 137.95 GB at two bytes: the seed's 140 GB, rounded.
    assert 70e9 * 2 == 140 * GB
    params = 80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) + 2 * 32_000 * 8192 + 8192
    assert params == 68_976_648_192
    assert total_weight_bytes(catalog.model("llama-2-70b"), "fp16") == 2 * params
    assert 2 * params / GB == pytest.approx(140, rel=0.015)


def test_seed000_levers_double_and_halve_the_constant():
    base = kv_bytes_per_token(32, 8, 128, 2)
    assert kv_bytes_per_token(64, 8, 128, 2) == 2 * base  # doubling layers doubles it
    assert kv_bytes_per_token(32, 4, 128, 2) == base / 2  # halving key heads halves it
    assert kv_bytes_per_token(32, 8, 128, 1) == base / 2  # one-byte elements halve it again


def test_seed000_growth_32_sequences_4_mib_per_step():
    # "32 sequences consume 4 MiB per step"; 1,024 steps of that is 4 GiB ("over a thousand steps ... 4 GiB")
    per_step = kv_growth_bytes_per_step(128 * KIB, 32)
    assert per_step == 4 * MIB
    assert per_step * 1024 == 4 * GIB


def test_seed000_admissions_160_then_40():
    # 128 KiB/token, 2,048-token maximum, 16 MiB blocks, 40 GiB pool -> 256 MiB = 16 blocks -> 160;
    # at 8,192-token maxima each sequence needs 1 GiB and the count falls to 40.
    assert sequence_kv_bytes(128 * KIB, 2048) == 256 * MIB
    assert admissions(40 * GIB, 128 * KIB, 2048, 16 * MIB) == 160
    assert sequence_kv_bytes(128 * KIB, 8192) == 1 * GIB
    assert admissions(40 * GIB, 128 * KIB, 8192, 16 * MIB) == 40


def test_seed000_admissions_round_up_to_whole_blocks():
    # block rounding: a 2,049-token maximum needs a 17th block, so 40 GiB / 17 blocks of 16 MiB -> 150
    assert admissions(40 * GIB, 128 * KIB, 2049, 16 * MIB) == 150


# --- seed 001_8b9505ad50c6e5b5.txt: "The KV Cache Memory Budget and What It Costs per Token" -----


def test_seed001_d_kv_form_gives_the_same_128_kib():
    # 2 x n_layers x d_kv x b_elem with d_kv = 1024 = 8 heads x 128
    assert 2 * 32 * 1024 * 2 == kv_bytes_per_token(32, 8, 128, 2) == 128 * KIB


def test_seed001_8192_tokens_is_one_gib():
    assert sequence_kv_bytes(128 * KIB, 8192) == GIB


def test_seed001_block_table_8_kib_for_32768_tokens():
    # "at 4 bytes per entry and 16 tokens per block, a 32,768-token sequence needs 2,048 entries, or 8 KiB"
    assert blocks_for(32_768, 16) == 2048
    assert block_table_bytes(32_768, 16) == 8 * KIB


def test_seed001_200_tokens_pay_for_13_blocks_and_waste_at_most_15_slots():
    assert blocks_for(200, 16) == 13
    for tokens in range(1, 2000):
        assert blocks_for(tokens, 16) * 16 - tokens <= 15


def test_seed001_floor_of_free_over_sequence():
    assert max_concurrent_sequences(40 * GIB, 1 * GIB) == 40
    assert max_concurrent_sequences(40 * GIB - 1, 1 * GIB) == 39


def test_seed001_cost_per_token_formula():
    # cost per token ~ C_hour / 3600 x t_step / (M / S): a replica at $36/hour with 100 resident
    # sequences and a 50 ms step emits 2,000 tokens/s, i.e. $5 per million tokens.
    c_hour, t_step, concurrency = 36.0, 0.05, 100
    per_token = c_hour / 3600 * t_step / concurrency
    assert per_token == pytest.approx(5e-6)
    assert usd_per_million_tokens(c_hour, concurrency / t_step) == pytest.approx(per_token * 1e6)


# --- seed 002_5a2b3024766e2a2c.txt: "KV Cache Memory > Batch Size Effects" ----------------------


def test_seed002_llama_7b_on_80gb_a100_batch_of_32(catalog):
    # "Model weights: 13.0 GB  Activation buffer: 2.0 GB  Available for KV: 65.0 GB
    #  Cache per sequence: 2.00 GB  Maximum batch size: 32" (the seed's "GB" is 2**30 bytes here:
    #  LLaMA-7B, 32 layers x 32 KV heads x 128 x 2 B x 4,096 tokens = 2 GiB exactly)
    llama7b = catalog.model("llama-2-7b")
    per_token = model_kv_bytes_per_token(llama7b, "fp16")
    assert per_token == kv_bytes_per_token(32, 32, 128, 2) == 512 * KIB
    cache_per_seq = sequence_kv_bytes(per_token, 4096)
    assert cache_per_seq == 2 * GIB
    available = (80 - 13.0 - 2.0) * GIB
    assert available == 65 * GIB
    assert max_concurrent_sequences(available, cache_per_seq) == 32


def test_seed002_batch_scales_cache_linearly():
    per_seq = sequence_kv_bytes(512 * KIB, 4096)
    for batch in (1, 2, 4, 8, 16, 32, 64):
        assert batch_kv_bytes(512 * KIB, 4096, batch) == batch * per_seq


# --- seed 004_75ca1219af6e1ac2.txt: "Lesson 2. Capacity and Batch Size" -------------------------


def test_seed004_llama2_70b_320_kib_per_token_from_the_catalog(catalog):
    # "2 x 80 x 8 x 128 x 2 bytes = 327,680 bytes ~ 320 KB"
    m = catalog.model("llama-2-70b")
    assert model_kv_bytes_per_token(m, "fp16") == 327_680 == 320 * KIB


def test_seed004_mha_would_be_2_5_mb_eight_times_more():
    gqa = kv_bytes_per_token(80, 8, 128, 2)
    mha = kv_bytes_per_token(80, 64, 128, 2)
    assert mha == 2_621_440
    assert mha / gqa == 8 == 64 / 8


def test_seed004_one_4096_sequence_1_25_gb_and_32_of_them_40_gb():
    per_seq = sequence_kv_bytes(327_680, 4096)
    assert per_seq == 1.25 * GIB  # the seed's "1.25 GB" is binary, as its "320 KB" is 327,680 B
    assert batch_kv_bytes(327_680, 4096, 32) == 40 * GIB


def test_seed004_128_sequences_in_160_gb_on_four_80_gb_gpus():
    pool = (4 * 80 - 160) * GIB
    assert max_concurrent_sequences(pool, sequence_kv_bytes(327_680, 4096)) == 128


def test_seed004_practice_answers():
    # 1. num_kv_heads a quarter of num_heads -> 4x smaller
    assert kv_bytes_per_token(48, 40, 128, 2) / kv_bytes_per_token(48, 10, 128, 2) == 4
    # 2. 48 layers, 8 KV heads, head_dim 128, fp16 -> 196,608 B = 192 KB
    assert kv_bytes_per_token(48, 8, 128, 2) == 196_608 == 192 * KIB
    # 3. 16 sequences at 2,048 tokens -> 6 GiB
    assert batch_kv_bytes(192 * KIB, 2048, 16) == 6 * GIB
    # 4. 96 GB - 40 GB = 56 GB for cache at 384 MB per sequence: with the lesson's binary units
    #    (KB = 1024 B throughout) 56 GiB / 384 MiB = 149.3 -> 149; in decimal units 145.8 -> 145.
    assert max_concurrent_sequences((96 - 40) * GIB, 384 * MIB) == 149
    assert max_concurrent_sequences((96 - 40) * GB, 384 * 10**6) == 145


# --- the same arithmetic through the model catalog: TP and PP -----------------------------------


def test_llama31_8b_is_the_seed_shape(catalog):
    assert model_kv_bytes_per_token(catalog.model("llama-3.1-8b"), "bf16") == 128 * KIB


def test_tp_splits_kv_heads_and_replicates_below_kv_heads(catalog):
    m = catalog.model("llama-2-70b")  # 8 KV heads
    assert kv_bytes_per_token_per_layer(m, "fp16", 1) == 2 * 8 * 128 * 2
    assert kv_bytes_per_token_per_layer(m, "fp16", 4) == 2 * 2 * 128 * 2  # 8 / 4 = 2 heads per GPU
    q = catalog.model("qwen3-235b-a22b")  # 4 KV heads: at tp=8 each GPU still holds ceil(4/8) = 1 head
    assert kv_bytes_per_token_per_layer(q, "bf16", 8) == kv_bytes_per_token_per_layer(q, "bf16", 4) == 2 * 1 * 128 * 2
    # 94 layers x 1 head x 128 x 2 (K,V) x 2 B = 48,128 B per token per GPU (reference note on vllm#21348)
    assert stage_kv(q, "bf16", 4, 1)[0].bytes_per_token == 48_128


def test_mla_caches_one_latent_replicated_across_tp(catalog):
    m = catalog.model("deepseek-v3")
    # 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B = 70,272 B, the same on every TP rank
    assert model_kv_bytes_per_token(m, "bf16") == 61 * 576 * 2 == 70_272
    assert stage_kv(m, "bf16", 8, 1)[0].bytes_per_token == 70_272


def test_pp_divides_layers_per_vllm_rule(catalog):
    m = catalog.model("deepseek-v3")
    # vLLM get_pp_indices: 61 layers at PP4 -> [15, 15, 16, 15] (remainder from the second-to-last stage)
    assert [len(r) for r in m.stage_layers(4)] == [15, 15, 16, 15]
    assert [len(r) for r in m.stage_layers(2)] == [31, 30]
    l70 = catalog.model("llama-2-70b")
    assert [s.bytes_per_token for s in stage_kv(l70, "fp16", 1, 4)] == [20 * 2 * 8 * 128 * 2] * 4


def test_fp8_kv_halves_bytes(catalog):
    m = catalog.model("llama-3.1-70b")
    # 80 layers x 8 KV heads x 128 x 2 (K, V) x 1 B = 163,840 B a token in fp8, 327,680 in bf16
    assert model_kv_bytes_per_token(m, "fp8") == 80 * 8 * 128 * 2 * 1 == 163_840
    assert model_kv_bytes_per_token(m, "fp8") * 2 == model_kv_bytes_per_token(m, "bf16")
