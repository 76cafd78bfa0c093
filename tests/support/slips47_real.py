"""Issue 47's slips named by the checks (real), as learners wrote them; the format of
:mod:`tests.support.fresh_mistakes` (merged into its ``FRESH``).

Public attention code's conventions that the checks named only generically (or misnamed)
before issue 47, taken from :mod:`tests.support.real_code`.
"""

from mhsa_helpers.exercises import EXERCISES
from tests.support.real_code import REAL

_STEM = {e.name: e.notebook for e in EXERCISES}

#: The pieces of real code whose deviation issue 47 named.
NEWLY_NAMED = (
    "onnx_scores_four_axes",
    "onnx_head_boolean_mask",
    "onnx_padding_with_head_axis",
    "onnx_mhsa_three_axes",
    "onnx_decode_past_key",
    "keras_head_btnh",
    "llama_rope_outer_positions",
    "llama_decode_tokens_before_heads",
    "d2l_transpose_qkv",
)

SLIPS47_REAL = {
    f"real_{key}": (_STEM[REAL[key][0]], REAL[key][0], REAL[key][1], REAL[key][3])
    for key in NEWLY_NAMED
}
