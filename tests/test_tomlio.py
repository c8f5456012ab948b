"""Hardware TOML files: round trips, and every kind of bad file refused with a clear line."""

import os

import pytest

from parsim.base.errors import ParsimError
from parsim.hardware.tomlio import dumps_hardware, load_hardware, loads_hardware, save_hardware
from tests.systems import TINY_CPU, TINY_GPU, TINY_LINK


@pytest.mark.parametrize("spec", [TINY_CPU, TINY_GPU, TINY_LINK])
def test_round_trip(spec, tmp_path):
    path = save_hardware(spec, tmp_path / "hw.toml", meta={"source": "test"})
    assert load_hardware(path) == spec


def test_matrix_rates_survive_the_round_trip():
    import attrs

    spec = attrs.evolve(TINY_GPU, matrix_flops_per_s={"float16": 1e14, "bfloat16": 1e14})
    assert dict(loads_hardware(dumps_hardware(spec)).matrix_flops_per_s) == {
        "float16": 1e14,
        "bfloat16": 1e14,
    }


def _bad(text):
    with pytest.raises(ParsimError) as info:
        loads_hardware(text, source="bad.toml")
    message = str(info.value)
    assert "\n" not in message and message.startswith("bad.toml: ")
    return message


def test_malformed_toml_names_the_line():
    assert "line 2" in _bad("[processor]\nid = = 3\n")


def test_unknown_key_is_refused():
    text = dumps_hardware(TINY_CPU).replace("cores = 2", "cores = 2\ncorez = 3")
    assert "unknown key 'processor.corez'" in _bad(text)


def test_unknown_nested_key_is_refused():
    text = dumps_hardware(TINY_CPU).replace("latency_s = 1e-06", "latency_s = 1e-06\nlatncy = 1")
    assert "processor.memory.latncy" in _bad(text)


def test_unknown_section_is_refused():
    assert "unknown section [gpu]" in _bad("[gpu]\nid = 'x'\n")


def test_missing_key_is_named():
    text = dumps_hardware(TINY_LINK).replace("latency_s = 1e-06\n", "")
    assert "missing key 'link.latency_s'" in _bad(text)


def test_bad_value_names_field_bound_and_value():
    text = dumps_hardware(TINY_CPU).replace("bandwidth_Bps = 1000000000.0", "bandwidth_Bps = -3.0", 1)
    assert "'bandwidth_Bps' must be in [1000, 1e+15] B/s: -3.0" in _bad(text)


def test_wrong_type_is_refused():
    text = dumps_hardware(TINY_CPU).replace("cores = 2", 'cores = "many"')
    assert "'cores' must be an integer from 1 to 1000000: 'many'" in _bad(text)


def test_both_or_neither_table_is_refused():
    assert "exactly one" in _bad("")


def test_huge_and_missing_files(tmp_path):
    with pytest.raises(ParsimError, match="no such hardware file"):
        load_hardware(tmp_path / "nope.toml")
    huge = tmp_path / "huge.toml"
    huge.write_text("# " + "x" * 1_000_001)
    with pytest.raises(ParsimError, match="larger than"):
        load_hardware(huge)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('kind = "cpu"', 'kind = "fpga"', "'kind' must be one of cpu, gpu, tpu: 'fpga'"),
        ("fma = true", 'fma = "no"', "'fma' must be true or false: 'no'"),
        ("cores = 2", "cores = [1, 2]", "'cores' must be an integer from 1 to 1000000"),
        (
            "[processor.matrix_flops_per_s]",
            'op_rates_per_core = "abc"\n[processor.matrix_flops_per_s]',
            "op_rates_per_core",
        ),
    ],
)
def test_wrong_types_are_one_line_errors(old, new, expected):
    assert expected in _bad(dumps_hardware(TINY_CPU).replace(old, new))


def test_a_linked_or_special_hardware_file_is_refused_not_followed(tmp_path):
    # issue 25's red team: `hardware show` and --device read a link's target (here a TOML file
    # elsewhere) though a model's config.json is refused through one; a FIFO was "no such file"
    target = tmp_path / "elsewhere.toml"
    target.write_text(dumps_hardware(TINY_CPU))
    link = tmp_path / "cpu.toml"
    link.symlink_to(target)
    with pytest.raises(ParsimError, match=r"cpu\.toml is a symbolic link; parsim does not read through"):
        load_hardware(link)
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(ParsimError, match=r"fifo\.toml is not a regular file"):
        load_hardware(fifo)
    assert load_hardware(target) == TINY_CPU
