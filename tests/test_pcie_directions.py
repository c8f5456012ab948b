"""PCIe's two directions: device-to-host copies write 256-B packets, host-to-device reads come
back in 128-B completions, so D2H streams faster by the ratio of the packet efficiencies."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.specs import PACKET_SIZES_B
from parsim.hardware.tomlio import loads_hardware
from parsim.methods.predict import predict
from parsim.model.transfer import pinned_bandwidth_Bps, transfer_s

PCIE4 = registry.link("pcie4-x16")


def test_device_to_host_by_hand():
    # 256 B of data per 282 B written; 128 B per 150 B read back: 25 GB/s x 0.9078 / 0.8533
    assert pinned_bandwidth_Bps(PCIE4, "h2d") == 25e9
    assert pinned_bandwidth_Bps(PCIE4, "d2h") == pytest.approx(25e9 * (256 / 282) / (128 / 150), rel=1e-12)
    assert pinned_bandwidth_Bps(PCIE4, "d2h") == pytest.approx(26.596e9, rel=1e-4)


def test_a_link_without_packet_sizes_is_symmetric():
    link = attrs.evolve(PCIE4, write_payload_B=None, read_completion_B=None)
    assert pinned_bandwidth_Bps(link, "d2h") == pinned_bandwidth_Bps(link, "h2d") == 25e9
    nvlink = registry.link("nvlink3")
    assert pinned_bandwidth_Bps(nvlink, "d2h") == nvlink.bandwidth_Bps


def test_never_above_the_peak():
    link = attrs.evolve(PCIE4, bandwidth_Bps=31e9, write_payload_B=4096, read_completion_B=64)
    assert pinned_bandwidth_Bps(link, "d2h") == link.peak_bandwidth_Bps


@given(write=st.sampled_from(PACKET_SIZES_B), read=st.sampled_from(PACKET_SIZES_B), n=st.integers(1, 10**9))
def test_bigger_packets_never_slow_a_direction(write, read, n):
    link = attrs.evolve(PCIE4, write_payload_B=write, read_completion_B=read)
    d2h, h2d = transfer_s(link, n, True, "d2h"), transfer_s(link, n, True, "h2d")
    # same latency; the direction whose packets carry the larger share of data is the faster one
    writes_carry_more = write / (write + 26) >= read / (read + 22)
    assert (d2h <= h2d) == writes_carry_more


@pytest.mark.parametrize("method", ["analytic", "engine"])
def test_both_methods_time_a_d2h_copy_alike(method):
    n = 2**24  # 64 MiB of float32
    p = predict("copy", {"n": n, "direction": "d2h", "pinned": True}, device="a100-80gb", method=method)
    expected = PCIE4.latency_s + 4 * n / pinned_bandwidth_Bps(PCIE4, "d2h")
    assert p.breakdown["transfer"] == pytest.approx(expected, rel=1e-9)
    assert p.latency_s == pytest.approx(p.breakdown["transfer"] + p.breakdown["overhead"], rel=1e-9)


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ("write_payload_B = 256", "read_completion_B"),
        ("read_completion_B = 128", "write_payload_B"),
        ("write_payload_B = 300\nread_completion_B = 128", "one of 64, 128, 256"),
    ],
)
def test_toml_packet_sizes_are_validated(fields, needle):
    text = (
        '[link]\nid = "mine"\nname = "my PCIe"\nbandwidth_Bps = 2.5e10\npeak_bandwidth_Bps = 3.15e10\n'
        f"pageable_bandwidth_Bps = 1e10\nlatency_s = 2.5e-6\n{fields}\n"
    )
    with pytest.raises(ParsimError, match=needle):
        loads_hardware(text)


def test_packet_sizes_belong_to_pcie():
    with pytest.raises(ParsimError, match="write_payload_B"):
        attrs.evolve(registry.link("nvlink3"), write_payload_B=256, read_completion_B=128)
