"""The exploit battery's bad answers (``leaderboards/battery_solution.py``, the program the battery sends as a
submission): what each rounding and each generic answer gives. The battery end to end is in test_problem_cases.py."""

from __future__ import annotations

import torch

from leaderboards import battery_solution as solution


def test_tf32_keeps_ten_mantissa_bits_rounding_to_nearest_even() -> None:
    ulp = 2.0**-10
    x = torch.tensor([1 + ulp / 2, 1 + 3 * ulp / 2, 1 + ulp / 4, 1 + 3 * ulp / 4, -(1 + 3 * ulp / 4)])
    assert solution.round_to(x, "tf32").tolist() == [1.0, 1 + 2 * ulp, 1.0, 1 + ulp, -(1 + ulp)]


def test_fp8_is_scaled_per_tensor_so_large_values_survive() -> None:
    x = torch.tensor([1000.0, -500.0, 3.0])
    rounded = solution.round_to(x, "fp8")
    assert torch.isfinite(rounded).all()
    assert rounded[0] == 1000.0  # the largest value maps to e4m3's largest, 448, and back
    assert ((rounded - x).abs() <= 2**-4 * 1000).all()


def test_a_lower_precision_applies_only_below_the_widest_input() -> None:
    fp32, fp16 = torch.ones(2, dtype=torch.float32), torch.ones(2, dtype=torch.float16)
    ints = torch.arange(3)
    assert solution.lower_precision((fp16, ints), "tf32") is None  # fp16 is exact in TF32
    assert solution.lower_precision((fp16,), "fp8") is None  # only bf16 goes down to fp8
    rounded = solution.lower_precision((fp32 / 3, fp16, ints), "bf16")
    assert rounded is not None
    assert rounded[0].dtype == torch.float32 and not torch.equal(rounded[0], fp32 / 3)
    assert torch.equal(rounded[1], fp16) and torch.equal(rounded[2], ints)  # only the widest dtype is rounded


def test_generic_answers_keep_the_output_structure() -> None:
    data = (torch.arange(6.0).reshape(2, 3), torch.zeros(3))
    ref = (torch.full((3, 2), 4.0, dtype=torch.float16), torch.tensor([1, 2, 3]))
    through = solution.passed_through(data, ref)
    assert through[0].shape == (3, 2) and through[0].dtype == torch.float16
    assert through[0].flatten().tolist() == [0, 1, 2, 3, 4, 5]
    assert through[1].tolist() == [0, 1, 2]  # the first input again, cut to three and cast to int
    assert solution.first_row(torch.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist() == [[1.0, 2.0], [1.0, 2.0]]
    assert solution.first_row([5.0, 6.0, 7.0]) == [5.0, 5.0, 5.0]
    assert solution.constant([1.0, 3.0]) == [2.0, 2.0]
    assert solution.same(ref, solution.constant(ref)) is False
    assert solution.same((torch.ones(2),), (torch.ones(2),)) is True


def test_the_rough_answer_is_off_by_a_sixteenth_of_the_rms() -> None:
    ref = torch.tensor([3.0, -4.0, 3.0, -4.0])  # rms 3.5355
    rough = solution.rough(ref)
    assert torch.allclose((rough - ref).abs(), torch.full((4,), 3.5355 / 16), rtol=1e-4)
    assert solution.same(solution.rough(torch.arange(4)), torch.arange(4))  # integers are left as they are


def test_an_empty_tensor_rounds_to_itself() -> None:
    """A KV cache of no past tokens (llama_layer's first test) is an empty bf16 input: fp8's per-tensor scale has no
    maximum to take."""
    empty = torch.empty(1, 2, 0, 16, dtype=torch.bfloat16)
    assert solution.round_to(empty, "fp8").shape == empty.shape
    rounded = solution.lower_precision((torch.ones(2, dtype=torch.bfloat16), empty), "fp8")
    assert rounded is not None and rounded[1].shape == empty.shape
