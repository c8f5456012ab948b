"""Collectives hold SMs (``model.comm_sms``): a block beside one runs on the rest of the GPU."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import parsim
from parsim.methods.predict import clear_caches
from parsim.model import comm_sms
from parsim.model.comm_sms import beside_collective_s


def test_a_collective_shorter_than_the_block_costs_its_share_of_the_sms():
    # 108 SMs, 16 held for the first 2 ms of a 10 ms block: 2 ms x 16/108 more
    assert beside_collective_s(10e-3, 2e-3, 108, 16) == pytest.approx(10e-3 + 2e-3 * 16 / 108)


def test_a_collective_longer_than_the_block_slows_all_of_it():
    # 92 of 108 SMs for the whole block: 10 ms x 108/92
    assert beside_collective_s(10e-3, 1.0, 108, 16) == pytest.approx(10e-3 * 108 / 92)


def test_nothing_beside_it_leaves_the_block_alone():
    assert beside_collective_s(10e-3, 0.0, 108) == 10e-3
    assert beside_collective_s(10e-3, -1e-3, 108) == 10e-3


@given(
    st.floats(1e-6, 10.0),
    st.floats(0.0, 20.0),
    st.integers(20, 200),
    st.integers(0, 19),
)
def test_the_block_is_never_faster_nor_slower_than_on_the_sms_left(compute, overlap, sms, held):
    seconds = beside_collective_s(compute, overlap, sms, held)
    assert compute <= seconds <= compute * sms / (sms - held) * (1 + 1e-12)
    assert seconds <= compute + max(overlap, 0.0) * held / sms * (1 + 1e-12) + 1e-15


def test_fsdp_units_beside_their_gathers_take_longer(monkeypatch):
    params = {
        "model": "gpt2",
        "batch": 4,
        "seq": 512,
        "sync": "ring",
        "scaling": "weak",
        "dtype": "bfloat16",
        "optimizer": "adam",
        "zero": 3,
    }
    clear_caches()
    held = parsim.predict("data_parallel", params, cluster="dgx-a100").latency_s
    monkeypatch.setattr(comm_sms.beside_collective_s, "__defaults__", (0,))  # NCCL_SMS = 0
    clear_caches()
    free = parsim.predict("data_parallel", params, cluster="dgx-a100").latency_s
    clear_caches()
    assert held > free
