"""The H100 held-out set: every kernel's simulated output equals its numpy reference
(small sizes), on the counting engine and on the timed engine the comparison uses."""
import numpy as np
import pytest

import simgpu
from validation import heldout

CASES = heldout.cases("test")


def test_the_set_has_at_least_15_distinct_kernels_and_no_calibration_kernel():
    kernels = {c.kernel for c in heldout.cases("test")}
    assert len(kernels) >= 15
    # cuda_backend/calibrate.py's kernels and the built-in validation's copies
    assert not kernels & {"empty", "copy", "read", "write", "gather", "chase",
                          "atomic_one_counter", "atomic_spread", "copy_striding",
                          "copy_partitioning", "copy_with_stride"}


@pytest.mark.parametrize("engine", [None, "timed-block"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_simulated_output_equals_numpy(case, engine):
    dev = simgpu.get_device("sim:h100")
    dev.default_engine = engine
    outputs, reports = case.run(dev)
    ref = case.reference()
    assert set(outputs) == set(ref)
    for k in ref:
        assert outputs[k].dtype == ref[k].dtype, k
        np.testing.assert_array_equal(outputs[k], ref[k], err_msg=f"{case.name}: {k}")
    assert reports[-1].kernel == case.kernel


def test_the_reference_is_not_trivial():
    """A reference that any kernel would match (all zeros, the input unchanged) would
    make the output check empty: each case's reference has non-zero content."""
    for case in CASES:
        for k, v in case.reference().items():
            assert np.any(v != 0), (case.name, k)


def test_same_seed_same_inputs():
    a = [c.reference() for c in heldout.cases("test")]
    b = [c.reference() for c in heldout.cases("test")]
    for x, y in zip(a, b):
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])


def test_unknown_scale_is_refused():
    with pytest.raises(ValueError, match="scale must be"):
        heldout.cases("huge")
