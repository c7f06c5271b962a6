"""Architectures sizer had not seen (tests/data/ARCH_AUDIT.md): published configs, trimmed to the
fields sizer reads (tests/data/arch_audit/README.md names each source), sized against the model
card's parameter count and the KV bytes a token the engine's model file gives; and the
architectures sizer cannot size refused in one line naming the file and the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sizer.errors import FieldValueError
from sizer.memory import model_kv_bytes_per_token
from sizer.model import load_config_json

DATA = Path(__file__).parent / "data" / "arch_audit"


def _load(name: str):
    return load_config_json(DATA / f"{name}_config.json")


def test_falcon_refinedweb_configs_are_read_as_vllms_rwconfig():
    """tiiuae/falcon-7b's first config (model_type RefinedWebModel, n_head 71, multi_query) and
    falcon-40b-instruct's (RefinedWeb, n_head_kv 8, hidden 8,192): vLLM's RWConfig maps n_layer,
    n_head and n_head_kv, forces new_decoder_architecture at hidden 8,192, and FalconAttention
    keeps one KV head under multi_query. Both were refused ('num_hidden_layers: required')."""
    f7 = _load("falcon-7b")
    assert (f7.num_hidden_layers, f7.num_attention_heads, f7.num_key_value_heads, f7.head_dim) == (32, 71, 1, 64)
    assert model_kv_bytes_per_token(f7, "bf16") == 2 * 32 * 1 * 64 * 2  # 8,192 B: one K and one V head a layer
    assert f7.total_params() == pytest.approx(6.92e9, rel=0.005)  # Falcon-7B: 6.92B (model card "7B")
    f40 = _load("falcon-40b-instruct-rw")
    assert (f40.num_hidden_layers, f40.num_key_value_heads) == (60, 8)
    assert model_kv_bytes_per_token(f40, "bf16") == 2 * 60 * 8 * 64 * 2
    assert f40.total_params() == pytest.approx(41.3e9, rel=0.01)  # Falcon-40B: 41.3B in its safetensors (card: "40B")


@pytest.mark.parametrize(
    ("name", "published", "vocab_x_hidden"),
    [
        ("command-r-plus", 103.8e9, 256_000 * 12_288),  # CohereForAI/c4ai-command-r-plus: "104B"; tied (CohereConfig, vLLM commandr.py)
        ("starcoder2-3b", 3.03e9, 49_152 * 3_072),  # bigcode/starcoder2-3b: 3.03B; Starcoder2Config ties by default
    ],
)
def test_an_absent_tie_word_embeddings_takes_the_config_class_default(name, published, vocab_x_hidden):
    """Command-R(+) and StarCoder2-3B give no tie_word_embeddings; their transformers config classes
    default it to true and vLLM ties them, so no separate lm_head: sized before with one,
    vocab x hidden parameters too many (3.1B for Command-R+)."""
    m = _load(name)
    assert m.tie_word_embeddings
    assert m.lm_head_params() == 0
    assert m.total_params() == pytest.approx(published, rel=0.003)
    assert any(w.startswith("tie_word_embeddings: not in the config; true") for w in m.warnings)


def test_opt_ffn_dim_is_its_mlp_width():
    """OPT's fc1/fc2 are ffn_dim wide (vLLM opt.py); it was refused ('intermediate_size: required')."""
    m = _load("opt-66b")
    assert m.intermediate_size == 36_864 and not m.gated_mlp and m.tie_word_embeddings
    assert model_kv_bytes_per_token(m, "bf16") == 2 * 64 * 72 * 128 * 2
    assert m.total_params() == pytest.approx(65.7e9, rel=0.005)  # facebook/opt-66b (card: "66B"; positional embeddings 2,050 x 9,216 aside)


def test_chatglm_names():
    """THUDM/chatglm3-6b: num_layers, ffn_hidden_size, padded_vocab_size, kv_channels and
    multi_query_group_num (vLLM chatglm.py: KV heads multi_query_group_num under
    multi_query_attention). Refused before ('num_hidden_layers: required')."""
    m = _load("chatglm3-6b")
    assert (m.num_hidden_layers, m.num_key_value_heads, m.head_dim, m.vocab_size, m.max_position_embeddings) == (28, 2, 128, 65_024, 8_192)
    assert model_kv_bytes_per_token(m, "bf16") == 2 * 28 * 2 * 128 * 2  # 28,672 B
    assert m.total_params() == pytest.approx(6.24e9, rel=0.005)  # 6.24B in its safetensors (card: "6B")


def test_dbrx_nested_attn_and_ffn_config():
    """databricks/dbrx-instruct: d_model, n_layers, n_heads and the nested attn_config.kv_n_heads,
    ffn_config.{moe_num_experts, moe_top_k, ffn_hidden_size} (transformers DbrxConfig, vLLM dbrx.py:
    16 gated experts of 10,752 in every layer). Refused before ('hidden_size: required')."""
    m = _load("dbrx")
    assert (m.hidden_size, m.num_hidden_layers, m.num_key_value_heads, m.num_experts, m.num_experts_per_tok, m.moe_intermediate_size) == (6144, 40, 8, 16, 4, 10_752)
    assert all(m.moe_layers) and not m.tie_word_embeddings
    assert model_kv_bytes_per_token(m, "bf16") == 2 * 40 * 8 * 128 * 2
    assert m.total_params() == pytest.approx(132e9, rel=0.005)  # model card: 132B total
    assert m.active_params_per_token() == pytest.approx(36e9, rel=0.02)  # model card: 36B active


def test_qwen1_mlp_is_half_the_configs_intermediate_size():
    """Qwen-1 (QWenLMHeadModel): QWenMLP's w1/w2 are intermediate_size // 2 wide; Qwen-1.8B was
    sized at 2.65B parameters, 44 % over its published 1.84B, with no warning about it."""
    m = _load("qwen-1_8b")
    assert m.intermediate_size == 5_504 and m.attention_bias
    assert m.total_params() == pytest.approx(1.84e9, rel=0.005)


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("jamba-v0.1", "attn_layer_period"),  # was sized as 32 attention + MoE layers: 92B for a 52B model
        ("mamba-codestral-7b-v0.1", "model_type"),  # was 'num_attention_heads: required field is missing'
        ("rwkv5-3b", "model_type"),
        ("snowflake-arctic-embed-m", "model_type"),  # BERT: was sized as a 12-layer decoder, silently
    ],
)
def test_architectures_sizer_cannot_size_are_refused_naming_file_and_field(name, field, tmp_path):
    path = DATA / f"{name}_config.json"
    with pytest.raises(FieldValueError) as err:
        load_config_json(path)
    text = str(err.value)
    assert text.startswith(f"{path}: {field}: ") and "cannot size" in text and "\n" not in text
    run = subprocess.run([sys.executable, "-m", "sizer", "explain", "--model", str(path), "--device", "H100-SXM"], capture_output=True, text=True)
    assert run.returncode == 7 and run.stdout == ""
    assert run.stderr.strip() == f"error: {text}"  # one line, no traceback


@pytest.mark.parametrize(
    ("cfg", "field"),
    [
        # T5Config / WhisperConfig names (t5-small's shape); is_encoder_decoder is their class default
        ({"model_type": "t5", "d_model": 512, "num_layers": 6, "num_heads": 8, "d_ff": 2048, "vocab_size": 32128, "is_encoder_decoder": True}, "model_type"),
        ({"model_type": "whisper", "d_model": 1280, "encoder_layers": 32, "decoder_layers": 32, "vocab_size": 51866}, "model_type"),
        # any other type that says it
        ({"model_type": "custom", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "is_encoder_decoder": True}, "is_encoder_decoder"),
        # MiniMax-Text-01's layer_types (transformers' "minimax"): lightning attention, not Gated DeltaNet
        ({"model_type": "minimax", "hidden_size": 6144, "num_hidden_layers": 8, "num_attention_heads": 64, "intermediate_size": 9216, "vocab_size": 200064,
          "layer_types": ["linear_attention"] * 7 + ["full_attention"]}, "layer_types"),
    ],
)
def test_encoder_decoder_and_lightning_attention_are_refused(cfg, field, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(FieldValueError, match=rf"^{path}: {field}: .*cannot size"):
        load_config_json(path)


def test_an_all_softmax_attn_type_list_is_not_a_hybrid(tmp_path):
    """MiniMax-M2 / M2.5's config.json carries attn_type_list [1] * 62 (1: softmax attention in
    MiniMax's convention, 0: lightning); the hybrid refusal took any non-empty list and refused the
    catalog's own minimax-m2.5 when given as its published config. A list with a 0 is still refused."""
    import yaml

    cfg = yaml.safe_load((Path(__file__).parents[1] / "catalogs" / "models" / "minimax-m2.5.yaml").read_text())["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, "attn_type_list": [1] * 62}))
    m = load_config_json(path)
    assert m.num_hidden_layers == 62 and m.num_key_value_heads == 8
    assert not any(w.startswith("attn_type_list") for w in m.warnings)
    path.write_text(json.dumps({**cfg, "attn_type_list": [0] * 7 + [1]}))
    with pytest.raises(FieldValueError, match=rf"^{path}: attn_type_list: .*cannot size"):
        load_config_json(path)


@pytest.mark.parametrize("value", [-4, 1])
def test_qwen1_bad_intermediate_size_is_named_as_the_file_gives_it(value, tmp_path):
    """The Qwen-1 halving ran before the range check: -4 was reported as 'got -2' (a value not in the
    file) and 1 as 'required field is missing' (it is present)."""
    cfg = json.loads((DATA / "qwen-1_8b_config.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, "intermediate_size": value}))
    if value < 0:
        with pytest.raises(FieldValueError, match=rf"^{path}: intermediate_size: expected an integer .*, got {value}$"):
            load_config_json(path)
    else:
        assert load_config_json(path).intermediate_size == 1


@pytest.mark.parametrize(
    "config, message",
    [
        ({"model_type": "chatglm", "hidden_size": 4096, "num_attention_heads": 32, "num_layers": "28", "padded_vocab_size": 65024,
          "seq_length": 8192, "ffn_hidden_size": 13696, "kv_channels": 128, "multi_query_attention": True, "multi_query_group_num": 2},
         "num_layers (read as num_hidden_layers): expected an integer, got '28'"),
        ({"model_type": "chatglm", "hidden_size": 4096, "num_attention_heads": 32, "num_layers": 28, "padded_vocab_size": 65024,
          "seq_length": 8192, "ffn_hidden_size": 13696, "kv_channels": 128, "multi_query_attention": True, "multi_query_group_num": 64},
         "multi_query_group_num (read as num_key_value_heads): expected at most num_attention_heads (32), got 64"),
        ({"model_type": "RefinedWeb", "hidden_size": 8192, "n_head": 128, "n_layer": 60, "vocab_size": 65024, "n_head_kv": "8"},
         "n_head_kv (read as num_key_value_heads): expected an integer, got '8'"),
        ({"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40, "max_seq_len": 32768, "vocab_size": 100352,
          "attn_config": {"kv_n_heads": 8}, "ffn_config": {"moe_num_experts": "16", "moe_top_k": 4, "ffn_hidden_size": 10752}},
         "ffn_config.moe_num_experts (read as num_local_experts): expected an integer, got '16'"),
        ({"model_type": "qwen", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 24, "vocab_size": 151936,
          "intermediate_size": 11008, "kv_channels": "128", "max_position_embeddings": 8192},
         "kv_channels (read as head_dim): expected an integer, got '128'"),
    ],
    ids=["chatglm-num_layers", "chatglm-group", "refinedweb-n_head_kv", "dbrx-ffn_config", "qwen-kv_channels"],
)
def test_a_bad_value_under_another_name_is_named_as_the_file_writes_it(tmp_path, config, message):
    """A field read under its standard name (ChatGLM's num_layers as num_hidden_layers, DBRX's ffn_config.moe_num_experts
    as num_local_experts) is named in an error as the file writes it: the error named num_hidden_layers, which the
    file does not have."""
    from sizer.errors import SizerError

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(SizerError) as err:
        load_config_json(path)
    assert str(err.value) == f"{path}: {message}"


@pytest.mark.parametrize(
    "config, message",
    [
        ({"model_type": ["llama"], "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 128256,
          "intermediate_size": 14336},
         "model_type: expected a string (transformers' model type, as 'llama'), got ['llama']"),
        ({"model_type": "llava", "text_config": {"model_type": 5, "hidden_size": 4096, "num_attention_heads": 32,
                                                 "num_hidden_layers": 32, "vocab_size": 32064, "intermediate_size": 14336}},
         "text_config.model_type: expected a string (transformers' model type, as 'llama'), got 5"),
    ],
    ids=["list", "text_config-number"],
)
def test_a_model_type_that_is_not_a_string_is_refused(tmp_path, config, message):
    """transformers looks a config's class up by its model_type string (AutoConfig: CONFIG_MAPPING[model_type]), so
    a list there fails to load in vLLM; sizer read it as no known type and sized a decoder without a word."""
    from sizer.errors import SizerError

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(SizerError) as err:
        load_config_json(path)
    assert str(err.value) == f"{path}: {message}"


def test_chatglm_multi_query_without_a_group_count_takes_the_config_class_default(tmp_path):
    """chatglm3-6b's config without multi_query_group_num: THUDM's ChatGLMConfig defaults it to 1, and vLLM's
    chatglm.py takes total_num_kv_heads = multi_query_group_num under multi_query_attention: one KV head, 28
    layers x 2 (K, V) x 128 x 2 B = 14,336 B a token in bf16. sizer took all 32 heads (458,752 B: 32x)."""
    cfg = json.loads((DATA / "chatglm3-6b_config.json").read_text())
    assert cfg["multi_query_attention"] is True
    del cfg["multi_query_group_num"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    m = load_config_json(path)
    assert m.num_key_value_heads == 1
    assert model_kv_bytes_per_token(m, "bf16") == 28 * 2 * 128 * 2
    assert any("multi_query_group_num 1" in note for note in m.notes)
