"""GPU config files: bundled ones load and match the paper; user files load; bad files fail clearly."""

import dataclasses
import re
from pathlib import Path

import pytest

from simgpu.configs import (
    ConfigError,
    GPUConfig,
    available_configs,
    load_config,
)

BUNDLED = Path(__file__).resolve().parents[2] / "simgpu" / "configs"
TEMPLATE = (BUNDLED / "gtx260.toml").read_text(encoding="utf-8")


def write_variant(tmp_path, *edits, name="mygpu.toml", text=TEMPLATE):
    """Write gtx260.toml with edits applied; an edit is (key, new line) or (key, None) to drop the line."""
    for key, line in edits:
        pattern = re.compile(rf"(?m)^{re.escape(key)}\s*=.*$")
        assert pattern.search(text), f"template has no line for {key}"
        text = pattern.sub(line if line is not None else "", text, count=1)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- bundled configs

def test_bundled_names():
    assert {"gtx260", "h100", "h200"} <= set(available_configs())


@pytest.mark.parametrize("name", available_configs())
def test_every_bundled_config_loads(name):
    cfg = load_config(name)
    assert isinstance(cfg, GPUConfig)
    assert cfg.key == name
    text = cfg.describe()
    assert cfg.gpu.name in text and cfg.gpu.arch in text and str(cfg.gpu.sm_count) in text
    # Bandwidth consistency holds for every bundled file (the loader enforces it too).
    assert cfg.memory.peak_bandwidth_gbps == pytest.approx(cfg.memory.computed_bandwidth_gbps, rel=0.02)


def test_gtx260_matches_the_paper():
    """Figures of NOTES.md, 'Machine of the paper'."""
    cfg = load_config("gtx260")
    g, lim, mem = cfg.gpu, cfg.limits, cfg.memory
    assert g.compute_capability == "1.3" and g.arch == "sm_13" and g.arch_number == 13
    assert g.sm_count == 27 and g.cores_per_sm == 8 and g.total_cores == 216
    assert g.core_clock_mhz == 1242
    assert mem.peak_bandwidth_gbps == pytest.approx(111.9)
    assert mem.bus_width_bits == 448 and mem.memory_clock_mhz == 999 and mem.data_rate == 2
    assert mem.partitions == 7 and mem.partition_width_bits == 64
    assert mem.coalescing == "half-warp" and mem.min_access_bytes == 32
    assert lim.max_threads_per_sm == 1024
    assert lim.max_blocks_per_sm == 8
    assert lim.registers_per_sm == 16384
    assert lim.shared_memory_per_sm_bytes == 16 * 1024
    assert lim.max_threads_per_block == 512
    assert lim.max_warps_per_sm == 32
    assert cfg.issue.warp_issue_cycles == 4
    assert cfg.cache.present is False and cfg.cache.l2_bytes is None


def test_gtx280_has_every_gt200_mechanism_of_the_gtx260():
    """The same GT200 chip: the GTX 280 (the card of the published figures that
    validation/gt200 holds) has the GTX 260's TLBs, miss entries and crossbar, and an
    atomic unit at its own clocks -- not the model without them."""
    a, b = load_config("gtx260"), load_config("gtx280")
    assert b.tlb is not None and b.tlb == a.tlb
    assert b.issue.max_outstanding_misses_per_sm == a.issue.max_outstanding_misses_per_sm
    for key in ("interconnect_flit_bytes", "interconnect_header_bytes",
                "interconnect_queue_packets", "interconnect_sms_per_port"):
        assert getattr(b.memory, key) == getattr(a.memory, key), key
    assert b.memory.interconnect_clock_mhz == 602          # its core (ROP) clock
    assert b.atomics.unit_cycles_per_operation == pytest.approx(1296 / 602, abs=0.01)


@pytest.mark.parametrize("name, bandwidth, l2", [("h100", 3352.3, 50 * 2**20), ("h200", 4814.3, 60 * 2**20)])
def test_hopper_configs(name, bandwidth, l2):
    cfg = load_config(name)
    assert cfg.gpu.arch_number == 90 and cfg.gpu.compute_capability == "9.0"
    assert cfg.gpu.sm_count == 132
    assert cfg.limits.max_warps_per_sm == 64
    assert cfg.issue.warp_instructions_per_cycle == 4
    assert cfg.memory.coalescing == "sector"
    assert cfg.memory.peak_bandwidth_gbps == pytest.approx(bandwidth, rel=1e-3)
    assert cfg.cache.present and cfg.cache.sector_bytes == 32 and cfg.cache.l1_line_bytes == 128
    assert cfg.cache.l2_bytes == l2


def test_configs_are_frozen_and_cached():
    cfg = load_config("gtx260")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.gpu.sm_count = 30
    assert load_config("sim:gtx260") is cfg
    assert load_config("GTX260") is cfg


def test_cycle_conversion():
    cfg = load_config("gtx260")
    assert cfg.ns_to_cycles(1000) == pytest.approx(1242)
    assert cfg.cycles_to_ns(cfg.ns_to_cycles(40.0)) == pytest.approx(40.0)


# --------------------------------------------------------------------------- user files

def test_user_file_loads(tmp_path):
    path = write_variant(tmp_path, ("name", 'name = "My GTX 260 variant"'), ("sm_count", "sm_count = 24"))
    for arg in (path, str(path)):
        cfg = load_config(arg)
        assert cfg.gpu.name == "My GTX 260 variant"
        assert cfg.gpu.sm_count == 24
        assert cfg.key == "mygpu" and cfg.source == str(path)
    # Equal content, equal config.
    assert load_config(write_variant(tmp_path, name="copy.toml")) == load_config("gtx260")


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.toml")


def test_unknown_bundled_name_lists_the_available_ones():
    with pytest.raises(ConfigError) as e:
        load_config("gtx999")
    msg = str(e.value)
    assert "gtx999" in msg
    for name in available_configs():
        assert name in msg


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


# --------------------------------------------------------------------------- bad files

def check_error(path, *fragments):
    with pytest.raises(ConfigError) as e:
        load_config(path)
    msg = str(e.value)
    assert str(path) in msg, msg
    for fragment in fragments:
        assert fragment in msg, msg
    return msg


def test_missing_key(tmp_path):
    check_error(write_variant(tmp_path, ("sm_count", None)), "gpu.sm_count", "missing", "integer")


def test_unknown_key(tmp_path):
    msg = check_error(write_variant(tmp_path, ("sm_count", "sm_cout = 27")), "gpu.sm_cout", "unknown")
    assert "sm_count" in msg  # the message lists the keys the section takes


def test_wrong_type(tmp_path):
    check_error(write_variant(tmp_path, ("sm_count", 'sm_count = "27"')), "gpu.sm_count", "integer", "'27'")
    check_error(write_variant(tmp_path, ("core_clock_mhz", "core_clock_mhz = true")), "gpu.core_clock_mhz")
    check_error(write_variant(tmp_path, ("max_block_dim", "max_block_dim = [512, 512]")), "limits.max_block_dim")
    check_error(write_variant(tmp_path, ("partitions", "partitions = 0")), "memory.partitions", "positive")


def test_float_accepted_where_int_given_but_not_the_reverse(tmp_path):
    cfg = load_config(write_variant(tmp_path, ("core_clock_mhz", "core_clock_mhz = 1242.5")))
    assert cfg.gpu.core_clock_mhz == 1242.5
    check_error(write_variant(tmp_path, ("sm_count", "sm_count = 27.0")), "gpu.sm_count", "integer")


def test_inconsistent_bandwidth(tmp_path):
    msg = check_error(write_variant(tmp_path, ("peak_bandwidth_gbps", "peak_bandwidth_gbps = 150.0")),
                      "memory.peak_bandwidth_gbps")
    assert "111.9" in msg  # says what bus width x clock x data rate gives
    # Within 2 % is fine.
    assert load_config(write_variant(tmp_path, ("peak_bandwidth_gbps", "peak_bandwidth_gbps = 112.0")))


def test_inconsistent_warps(tmp_path):
    check_error(write_variant(tmp_path, ("max_warps_per_sm", "max_warps_per_sm = 24")), "limits.max_warps_per_sm")


def test_arch_and_compute_capability_must_agree(tmp_path):
    check_error(write_variant(tmp_path, ("compute_capability", 'compute_capability = "1.2"')),
                "gpu.compute_capability")
    check_error(write_variant(tmp_path, ("arch", 'arch = "gt200"')), "gpu.arch")


def test_bad_coalescing_value(tmp_path):
    check_error(write_variant(tmp_path, ("coalescing", 'coalescing = "warp"')), "memory.coalescing", "half-warp")


def test_missing_and_unknown_sections(tmp_path):
    no_pcie = re.sub(r"(?ms)^\[pcie\].*?(?=^\[atomics\])", "", TEMPLATE)
    check_error(write_variant(tmp_path, text=no_pcie), "[pcie]", "missing section")
    extra = TEMPLATE + "\n[turbo]\nboost = 1\n"
    check_error(write_variant(tmp_path, text=extra), "[turbo]", "unknown section")


def test_cache_keys_follow_present(tmp_path):
    # present = false with cache keys given: those keys would do nothing.
    check_error(write_variant(tmp_path, ("present", "present = false\nl2_bytes = 1048576")),
                "cache.l2_bytes", "present = false")
    # present = true needs the cache figures.
    check_error(write_variant(tmp_path, ("present", "present = true")), "cache.l1_bytes_per_sm", "missing")
    cache = "\n".join([
        "present = true", "l1_bytes_per_sm = 16384", "l1_line_bytes = 128", "sector_bytes = 32",
        "l1_latency_cycles = 30", "l2_bytes = 262144", "l2_latency_cycles = 200",
    ])
    cfg = load_config(write_variant(tmp_path, ("present", cache)))
    assert cfg.cache.present and cfg.cache.l2_bytes == 262144 and cfg.cache.l2_bandwidth_gbps is None


def test_invalid_toml(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("[gpu\nname = 1\n", encoding="utf-8")
    check_error(path, "not valid TOML")


def test_l1_sets_is_optional_and_checked(tmp_path):
    h100 = (BUNDLED / "h100.toml").read_text(encoding="utf-8")
    assert load_config("h100").cache.l1_sets == 4
    dropped = write_variant(tmp_path, ("l1_sets", None), text=h100, name="a.toml")
    assert load_config(dropped).cache.l1_sets == 4             # the schema's default
    too_many = write_variant(tmp_path, ("l1_sets", "l1_sets = 4096"), text=h100, name="b.toml")
    with pytest.raises(ConfigError, match="l1_sets"):
        load_config(too_many)


def test_dram_keys_and_l2_fill_are_checked(tmp_path):
    h100 = (BUNDLED / "h100.toml").read_text(encoding="utf-8")
    drain = write_variant(tmp_path, ("write_drain_high", "write_drain_high = 600"), text=h100,
                          name="a.toml")
    with pytest.raises(ConfigError, match=r"dram.write_drain_high: expected write_drain_low < "
                                          r"write_drain_high <= write_queue_depth, got 256, 600, 512"):
        load_config(drain)
    groups = write_variant(tmp_path, ("bank_groups", "bank_groups = 3"), text=h100, name="d.toml")
    with pytest.raises(ConfigError, match=r"dram.bank_groups: memory.dram_banks_per_partition = "
                                          r"32 does not split"):
        load_config(groups)
    rc = write_variant(tmp_path, ("trc", "trc = 20"), text=h100, name="e.toml")
    with pytest.raises(ConfigError, match=r"dram.trc: 20 is below tras = 79"):
        load_config(rc)
    # the sustained rates are no longer config keys: they follow from the timings
    old = write_variant(tmp_path, ("min_access_bytes", "min_access_bytes = 32\nread_efficiency = 0.67"),
                        text=h100, name="f.toml")
    with pytest.raises(ConfigError, match=r"memory.read_efficiency: unknown key"):
        load_config(old)
    odd = write_variant(tmp_path, ("l2_fill_bytes", "l2_fill_bytes = 48"), text=h100,
                        name="b.toml")
    with pytest.raises(ConfigError, match=r"l2_fill_bytes: 48 is not a multiple of sector_bytes"):
        load_config(odd)
    plain = write_variant(tmp_path, *((k, None) for k in (
        "l2_store_bandwidth_gbps",
        "l2_combined_bandwidth_gbps", "l2_dirty_bytes", "l2_fill_bytes", "kernel_fixed_us",
        "block_dispatch_ns")), text=h100, name="c.toml")
    cfg = load_config(plain)                 # every one of them optional
    assert cfg.cache.l2_fill_bytes is None
    assert cfg.issue.kernel_fixed_us == 0.0 and cfg.issue.block_dispatch_ns == 0.0   # the schema's defaults


def test_the_split_l2_keys_are_described_and_checked(tmp_path):
    h100 = load_config("h100")
    assert h100.cache.l2_halves == 2 and h100.cache.l2_far_latency_cycles == 185
    text = h100.describe()
    assert "2 halves (the far one +185 cycles, 1050 GB/s each way between them)" in text
    assert "1.2 cycles per request" in text
    src = (BUNDLED / "h100.toml").read_text(encoding="utf-8")
    odd = write_variant(tmp_path, ("partitions", "partitions = 5"), name="odd.toml", text=src)
    check_error(odd, "cache.l2_halves", "even number of memory partitions")


def test_docs_key_table_is_the_schemas():
    """docs/configs.md's key table is generated from the schema (python -m
    simgpu.configs.key_table --write); a key added, removed or redocumented without
    regenerating it fails here."""
    from simgpu.configs import key_table
    page = key_table.DOC_PAGE.read_text(encoding="utf-8")
    assert page == key_table.page_with_table(page), \
        "docs/configs.md's key table is stale: run python -m simgpu.configs.key_table --write"
    for section, cls in key_table._SECTIONS.items():     # every key has its row
        for f in dataclasses.fields(cls):
            assert f"| `{section}.{f.name}`" in page
