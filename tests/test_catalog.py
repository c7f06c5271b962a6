"""The shipped catalogs: every figure sourced, the required devices, providers and models present,
FP8 absent (unsupported) where the device lacks it, and the loader's errors name file, entry and key."""

from __future__ import annotations

import shutil

import pytest
import yaml

from sizer.catalog import load_catalog
from sizer.errors import FieldValueError, UnknownKeyError, UnknownNameError
from sizer.units import GB, GIB, TERA

from .conftest import ROOT

REQUIRED_GPUS = ["A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe", "H200-SXM", "B200", "L40S", "L4", "A10G", "MI300X", "MI325X"]
REQUIRED_MODELS = [
    "llama-2-7b",
    "llama-2-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "mixtral-8x7b",
    "qwen3-32b",
    "qwen3-235b-a22b",
    "deepseek-v3",
    "gpt-oss-120b",
]


def test_required_devices_models_and_providers(catalog):
    names = [g.name for g in catalog.gpus]
    for n in REQUIRED_GPUS:
        assert n in names
    for n in REQUIRED_MODELS:
        assert catalog.find_model(n) is not None, n
    assert len(catalog.providers()) >= 3
    for n in REQUIRED_GPUS:
        assert catalog.prices_for(n), f"no on-demand price for {n}"


# Issue 11: at least one first-party on-demand price for each of these, from a hyperscaler or one
# of the larger GPU clouds (MI300X: from the providers that rent it and publish a dated price)
FIRST_PARTY_ON_DEMAND = {
    "H100-SXM": {"aws", "azure", "gcp", "oracle", "coreweave", "lambda", "nebius", "crusoe", "runpod"},
    "H200-SXM": {"aws", "azure", "gcp", "oracle", "coreweave", "nebius", "crusoe", "runpod"},
    "B200": {"aws", "oracle", "coreweave", "lambda", "nebius", "runpod"},
    "A100-80GB": {"aws", "azure", "gcp", "oracle", "coreweave", "lambda", "crusoe", "runpod"},
    "A100-40GB": {"aws", "azure", "gcp", "lambda"},
    "L40S": {"aws", "oracle", "coreweave", "nebius", "crusoe", "runpod"},
    "L4": {"aws"},
    "MI300X": {"azure", "oracle", "crusoe", "digitalocean", "runpod"},
    "MI325X": {"digitalocean"},
}
# Devices with no dated first-party price anywhere in the stored public material (prices.yaml's
# header says why): their rows, if any, are secondary, so `provider: any` prices no plan on them.
NO_FIRST_PARTY = {"MI355X"}
# Multi-GPU first-party shapes a tp >= 2 group needs (issue 11 round 2: MI300X had only 1-GPU rows)
MULTI_GPU_FIRST_PARTY = {"MI300X": 8, "MI325X": 8, "H100-SXM": 8, "H200-SXM": 8, "B200": 8, "A100-80GB": 8, "A100-40GB": 8, "L40S": 8, "L4": 8}
RESOURCED_ON = "2026-12-01"  # rows older than six months at this date were re-read or dropped


def test_every_row_is_sourced_dated_recent_and_first_party_where_published(catalog):
    from datetime import date

    from sizer.catalog import SOURCE_KINDS, parse_price_date

    resourced = date.fromisoformat(RESOURCED_ON)
    six_months_before = date(resourced.year, resourced.month - 6, resourced.day)
    for p in catalog.prices:
        assert p.source_kind in SOURCE_KINDS[:3], p
        assert p.source and p.gpus_per_instance >= 1
        assert parse_price_date(p.price_date) >= six_months_before, f"{p.device} {p.provider} {p.price_date}: older than six months"
    for device, providers in FIRST_PARTY_ON_DEMAND.items():
        found = {p.provider for p in catalog.prices if p.device == device and p.kind == "on_demand" and p.source_kind == "provider_page"}
        assert providers <= found, f"{device}: no first-party on-demand price from {providers - found}"
    for device in NO_FIRST_PARTY:
        rows = [p for p in catalog.prices if p.device == device]
        assert all(p.source_kind != "provider_page" for p in rows), f"{device}: a first-party row exists; update NO_FIRST_PARTY and the header"
        assert not catalog.restricted(min_source_kind="provider_page").prices_for(device)
    for device, gpus in MULTI_GPU_FIRST_PARTY.items():
        largest = max(p.gpus_per_instance for p in catalog.prices if p.device == device and p.kind == "on_demand" and p.source_kind == "provider_page")
        assert largest >= gpus, f"{device}: largest first-party on-demand instance holds {largest} GPUs"
    # the same offer listed twice keeps the newer row (RunPod re-read 2026-11-09: Secure H100 $3.49 -> $3.99)
    secure = [p for p in catalog.prices if p.device == "H100-SXM" and p.provider == "runpod" and p.plan == "Secure Cloud"]
    assert {p.usd_per_gpu_hour for p in secure} == {3.99} and {p.price_date for p in secure} == {"2026-11-09"}
    # a list of instance sizes is one offer per size at the same per-GPU price
    assert sorted(p.gpus_per_instance for p in secure) == [1, 2, 4, 8]


def test_fp8_is_unsupported_not_zero_on_ampere(catalog):
    for name in ("A100-40GB", "A100-80GB", "A10G"):
        gpu = catalog.gpu(name)
        assert gpu.dense_flops_per_s["fp8"] is None
        assert not gpu.supports("fp8")
    assert catalog.gpu("H100-SXM").supports("fp8")


def test_datasheet_figures_are_converted_once(catalog):
    # H100 SXM: 80 GB HBM3, 3.35 TB/s, 989.4 dense BF16 TFLOPS (NVIDIA datasheet via glennklockwood.com)
    h100 = catalog.gpu("H100-SXM")
    assert h100.memory_bytes == 80 * GIB
    assert h100.hbm_bytes_per_s == 3350 * GB
    assert h100.dense_flops_per_s["bf16"] == pytest.approx(989.4 * TERA)
    # A100 40GB: deviceQuery "Total amount of global memory: 40441 MBytes (42405855232 bytes)"
    assert catalog.gpu("A100-40GB").usable_memory_bytes == pytest.approx(42_405_855_232, rel=1e-4)


def test_every_gpu_figure_has_a_source():
    raw = yaml.safe_load((ROOT / "catalogs" / "gpus.yaml").read_text())
    for entry in raw["gpus"]:
        for key, value in entry.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert key in entry["sources"], f"{entry['name']}.{key}"


def test_every_price_is_dated_and_sourced(catalog):
    for p in catalog.prices:
        assert p.source and p.price_date
        assert p.usd_per_gpu_hour > 0


def test_aliases_resolve_case_insensitively(catalog):
    assert catalog.gpu("h100").name == "H100-SXM"
    assert catalog.model("Llama-3.1-70B").name == "llama-3.1-70b"
    assert catalog.model("meta-llama/Llama-3.1-70B-Instruct").name == "llama-3.1-70b"


def _copy_catalog(tmp_path):
    dst = tmp_path / "catalogs"
    shutil.copytree(ROOT / "catalogs", dst)
    return dst


def test_unknown_gpu_key_names_file_entry_key_and_suggests(tmp_path):
    dst = _copy_catalog(tmp_path)
    raw = yaml.safe_load((dst / "gpus.yaml").read_text())
    raw["gpus"][2]["memory_gb"] = raw["gpus"][2].pop("memory_gib")
    (dst / "gpus.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(UnknownKeyError) as info:
        load_catalog(dst)
    msg = str(info.value)
    assert "gpus.yaml" in msg and "gpus[2]" in msg and "'memory_gb'" in msg and "did you mean 'memory_gib'" in msg


def test_missing_source_is_refused(tmp_path):
    dst = _copy_catalog(tmp_path)
    raw = yaml.safe_load((dst / "gpus.yaml").read_text())
    del raw["gpus"][0]["sources"]["hbm_gb_per_s"]
    (dst / "gpus.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(FieldValueError, match=r"sources\.hbm_gb_per_s: every figure needs a source"):
        load_catalog(dst)


def test_price_for_unknown_device_and_negative_price(tmp_path):
    dst = _copy_catalog(tmp_path)
    raw = yaml.safe_load((dst / "prices.yaml").read_text())
    raw["prices"][0]["device"] = "H100SXM"
    (dst / "prices.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(UnknownNameError, match=r"prices\[0\]\.device: unknown device 'H100SXM'"):
        load_catalog(dst)
    raw["prices"][0]["device"] = "H100-SXM"
    raw["prices"][0]["usd_per_gpu_hour"] = -1
    (dst / "prices.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(FieldValueError, match=r"usd_per_gpu_hour: expected a number > 0, got -1"):
        load_catalog(dst)


def test_a_bridge_needs_both_its_bandwidth_and_its_group_size(tmp_path):
    """bridge_gb_per_s without bridge_gpus (or the other way round) names the missing one; a bridge
    of one card is out of range."""
    for drop in ("bridge_gpus", "bridge_gb_per_s"):
        dst = _copy_catalog(tmp_path / drop)
        raw = yaml.safe_load((dst / "gpus.yaml").read_text())
        nvl = next(g for g in raw["gpus"] if g["name"] == "H100-NVL")
        del nvl[drop]
        (dst / "gpus.yaml").write_text(yaml.safe_dump(raw))
        with pytest.raises(FieldValueError, match=rf"'H100-NVL'.*{drop}: bridge_gb_per_s and bridge_gpus go together"):
            load_catalog(dst)
    dst = _copy_catalog(tmp_path / "one")
    raw = yaml.safe_load((dst / "gpus.yaml").read_text())
    next(g for g in raw["gpus"] if g["name"] == "H100-NVL")["bridge_gpus"] = 1
    (dst / "gpus.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(FieldValueError, match=r"bridge_gpus"):
        load_catalog(dst)


# Devices added for MLPerf submitters' and clouds' parts (H200 NVL, GH200 in both memory sizes,
# RTX PRO 6000 Blackwell Server Edition): every spelling a row, a workload or nvidia-smi gives.
NEW_DEVICE_NAMES = {
    "H200-NVL": ["H200-NVL", "h200-nvl", "H200NVL", "H200-NVL-141GB", "NVIDIA H200 NVL", "h200_nvl"],
    "GH200-96GB": ["GH200-96GB", "GH200-96GB_aarch64", "GH200-96GB-HBM3", "GH200-480GB", "GH200-120GB", "NVIDIA GH200 480GB", "NVIDIA GH200 120GB", "gh200_96gb", "GH200 Grace Hopper Superchip 96GB"],
    "GH200-144GB": ["GH200-144GB", "GH200-144GB_aarch64", "GH200-144GB-HBM3e", "GH200-144G", "NVIDIA GH200 144G HBM3e", "gh200_144gb", "GH200 Grace Hopper Superchip 144GB"],
    "RTX-PRO-6000": [
        "RTX-PRO-6000",
        "RTX-PRO-6000-SE",
        "RTX-PRO-6000-Server",
        "RTXPRO6000",
        "RTX-PRO-6000-Blackwell-Server",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "rtx_pro_6000",
        "rtx_pro_6000_server",
    ],
}


@pytest.mark.parametrize("device", sorted(NEW_DEVICE_NAMES))
def test_new_devices_resolve_from_name_aliases_and_nvidia_smi(catalog, device):
    gpu = catalog.gpu(device)
    assert gpu.name == device
    for spelling in NEW_DEVICE_NAMES[device]:
        assert catalog.gpu(spelling).name == device, spelling
    # every alias the entry declares is listed above (a new alias is tested, not just carried)
    assert set(gpu.aliases) <= set(NEW_DEVICE_NAMES[device])


# The accelerator_model_name of MLPerf Inference submissions' system descriptions
# (closed/*/systems/*.json of mlcommons/inference_results_v4.1@198fc467 and
# gbeezybez/inference_results_v6.0@232fbf90, read with git grep), the spelling a measurement row
# copied from a submission may carry as its `system`, and the catalog device each one is.
MLPERF_ACCELERATORS = {
    "NVIDIA H100-SXM-80GB": "H100-SXM",
    "NVIDIA H100-PCIe-80GB": "H100-PCIe",
    "NVIDIA H100-NVL-94GB": "H100-NVL",
    "NVIDIA H200-SXM-141GB": "H200-SXM",
    "NVIDIA H200-SXM-141GB-CTS": "H200-SXM",
    "NVIDIA H200-NVL-141GB": "H200-NVL",
    "NVIDIA A100-SXM-80GB": "A100-80GB",
    "NVIDIA L40S": "L40S",
    "NVIDIA L4": "L4",
    "NVIDIA L4-PCIe-24GB": "L4",
    "NVIDIA B200-SXM-180GB": "B200",
    "NVIDIA B300-SXM-270GB": "B300",
    "NVIDIA GB200": "GB200",
    "NVIDIA GB300": "GB300",
    "NVIDIA GH200 Grace Hopper Superchip 96GB": "GH200-96GB",
    "NVIDIA GH200 Grace Hopper Superchip 144GB": "GH200-144GB",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "RTX-PRO-6000",
    "AMD Instinct MI300X-NPS1-SPX-192GB-750W": "MI300X",
    "AMD MI300X-NPS1-SPX-192GB-750W": "MI300X",
    "AMD Instinct MI300X 192GB HBM3": "MI300X",
    "AMD Instinct MI350X 288GB HBM3e": "MI350X",
    "AMD Instinct MI355X 288GB HBM3e": "MI355X",
}


@pytest.mark.parametrize("name", sorted(MLPERF_ACCELERATORS))
def test_mlperf_accelerator_names_resolve(catalog, name):
    assert catalog.gpu(name).name == MLPERF_ACCELERATORS[name]


def test_a_partitioned_amd_accelerator_is_not_the_whole_chip(catalog):
    """NPS1 and SPX (one memory and one compute partition: the whole chip) are dropped from an
    MLPerf accelerator name; a compute partition of part of the chip (CPX: one XCD a logical GPU)
    or a split memory (NPS4) is kept, so the name matches no device rather than the whole MI355X."""
    assert catalog.gpu("AMD Instinct MI355X-NPS1-SPX-288GB-1400W").name == "MI355X"
    for name in ("AMD Instinct MI355X-NPS1-CPX-288GB-1400W", "AMD Instinct MI300X-NPS4-SPX-192GB-750W"):
        with pytest.raises(UnknownNameError, match="did you mean 'MI3"):
            catalog.gpu(name)


def test_no_device_shares_a_name_or_a_device_key():
    """The loader refuses a name or alias given twice (case-insensitively); device_key, which
    resolves nvidia-smi spellings, silently drops a key two devices share (Catalog._gpu_keys):
    no key may be shared, or a spelling that resolved before would be refused."""
    from sizer.catalog import device_key

    raw = yaml.safe_load((ROOT / "catalogs" / "gpus.yaml").read_text())
    owner: dict[str, str] = {}
    for entry in raw["gpus"]:
        for key in {device_key(k) for k in (entry["name"], *entry.get("aliases", []))}:
            assert owner.setdefault(key, entry["name"]) == entry["name"], f"{key!r}: {owner[key]} and {entry['name']}"
    for name in NEW_DEVICE_NAMES:
        assert name in {e["name"] for e in raw["gpus"]}


def test_a_shared_alias_is_refused(tmp_path):
    """The loader's own check that the test above leans on: an alias that already names another
    device stops the catalog from loading."""
    dst = _copy_catalog(tmp_path)
    raw = yaml.safe_load((dst / "gpus.yaml").read_text())
    next(g for g in raw["gpus"] if g["name"] == "H200-NVL")["aliases"].append("H200")
    (dst / "gpus.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(FieldValueError, match=r"'H200' already names 'H200-SXM'"):
        load_catalog(dst)


@pytest.mark.parametrize(
    "given, suggestion",
    [("GH200", "GH200-96GB"), ("NVIDIA GH200", "GH200-96GB"), ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000")],
)
def test_ambiguous_or_other_editions_are_refused(catalog, given, suggestion):
    """A bare GH200 names two GPUs (96 GB HBM3 and 144 GB HBM3e) and the Workstation Edition of
    the RTX PRO 6000 is a different card (1,792 GB/s): refused, a catalog name suggested."""
    with pytest.raises(UnknownNameError) as info:
        catalog.gpu(given)
    assert f"did you mean '{suggestion}'?" in str(info.value)


def test_new_device_figures_load_in_catalog_units(catalog):
    """gpus.yaml's units: memory in GiB (141 GiB), bandwidth in decimal GB/s, dense TFLOPS."""
    nvl = catalog.gpu("H200-NVL")
    assert nvl.memory_bytes == 141 * GIB
    assert nvl.usable_memory_bytes == pytest.approx(139.80 * GIB)
    assert nvl.hbm_bytes_per_s == 4800 * GB
    assert nvl.dense_flops_per_s["bf16"] == pytest.approx(835.5 * TERA)
    assert nvl.dense_flops_per_s["fp8"] == pytest.approx(1670.5 * TERA)
    assert not nvl.supports("fp4")
    assert nvl.interconnect == "pcie" and nvl.link_bytes_per_s == 64 * GB
    # NVLink bridge of up to four cards: TP2 and TP4 over the bridge, TP8 over PCIe
    assert nvl.link_for(2) == nvl.link_for(4) == 450 * GB
    assert nvl.link_for(8) == 64 * GB
    assert (nvl.family, nvl.gpus_per_node, nvl.tdp_w) == ("hopper", 8, 600)

    small, large = catalog.gpu("GH200-96GB"), catalog.gpu("GH200-144GB")
    assert (small.memory_bytes, large.memory_bytes) == (96 * GIB, 144 * GIB)
    assert small.usable_memory_bytes == pytest.approx(94.88 * GIB)
    assert large.usable_memory_bytes == pytest.approx(142.32 * GIB)
    assert (small.hbm_bytes_per_s, large.hbm_bytes_per_s) == (4000 * GB, 4900 * GB)
    assert small.dense_flops_per_s == large.dense_flops_per_s
    assert small.dense_flops_per_s["bf16"] == pytest.approx(990 * TERA)
    assert small.gpus_per_node == large.gpus_per_node == 1
    assert small.network_bytes_per_s == 50 * GB

    rtx = catalog.gpu("RTX-PRO-6000")
    assert rtx.memory_bytes == 96 * GIB
    assert rtx.usable_memory_bytes == pytest.approx(97250 / 1024 * GIB, abs=0.01 * GIB)
    assert rtx.hbm_bytes_per_s == 1597 * GB  # the Server Edition's, not the Workstation's 1,792
    assert rtx.dense_flops_per_s["bf16"] == pytest.approx(467.8 * TERA)
    assert rtx.dense_flops_per_s["fp4"] == pytest.approx(1871.2 * TERA)
    assert rtx.supports("fp4") and rtx.fp4_format == "nvfp4"
    assert rtx.interconnect == "pcie" and rtx.bridge_bytes_per_s is None and rtx.link_for(4) == 64 * GB
    assert (rtx.family, rtx.gpus_per_node, rtx.tdp_w) == ("blackwell", 8, 600)


def test_mi350x_is_mi355x_at_its_clock(catalog):
    """MI350X is "the same silicon at 2200MHz and 1000W, with everything scaled by the clock ratio"
    (stas00/ml-engineering@744d01e1 compute/accelerator/README.md, note 22), MI355X's at 2400 MHz:
    its dense figures are MI355X's x 2200/2400 (bf16 2500 -> 2291.7, AMD's rounded 2.3 PFLOPS; fp8
    5000 -> 4583.3; fp4 10100 -> 9258.3), with the same 288 GB of HBM3E at 8 TB/s."""
    a, b = catalog.gpu("MI350X"), catalog.gpu("MI355X")
    for fmt in ("bf16", "fp8", "int8", "fp4"):
        assert a.dense_flops_per_s[fmt] == pytest.approx(b.dense_flops_per_s[fmt] * 2200 / 2400, rel=1e-3)
    assert (a.memory_bytes, a.usable_memory_bytes, a.hbm_bytes_per_s) == (b.memory_bytes, b.usable_memory_bytes, b.hbm_bytes_per_s)
    assert (a.family, a.vendor, a.tdp_w, b.tdp_w) == ("cdna4", "amd", 1000, 1400)


def test_every_catalog_device_has_an_sm_count(catalog):
    """engines.SM_COUNT is keyed by catalog name; a device missing from it silently takes 132."""
    from sizer.engines import SM_COUNT

    assert {g.name for g in catalog.gpus} <= set(SM_COUNT)
    assert SM_COUNT["RTX-PRO-6000"] == 188


def test_a_model_entry_edited_on_disk_is_read_again(tmp_path):
    """load_model_entry reads a catalog entry once per version of the file (validating the shipped
    table resolves ~3,800 rows to a few dozen entries); an edit to the file is read, not the copy.
    Llama-3.1-8B has 32 layers (its config.json); the edited copy says 40 and the weights follow."""
    from sizer.catalog import load_model_entry

    path = tmp_path / "llama-3.1-8b.yaml"
    shutil.copy(ROOT / "catalogs" / "models" / "llama-3.1-8b.yaml", path)
    first = load_model_entry(path)
    assert first.num_hidden_layers == 32
    assert load_model_entry(path) is first  # unchanged file: the same object
    path.write_text(path.read_text().replace("num_hidden_layers: 32", "num_hidden_layers: 40"))
    edited = load_model_entry(path)
    assert edited.num_hidden_layers == 40
    assert edited.total_params() > first.total_params()
