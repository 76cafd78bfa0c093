"""The course's exercises: the one list that everything else reads.

Every exercise is one function the learner writes. The reference exports
(:mod:`mhsa_helpers.reference`), the checks, the progress report, the
explorer, the grading (which test cell grades which function, for how many
points) and the tables of the README and of the
start-here notebook all come from :data:`EXERCISES` and :data:`NOTEBOOKS`.

Adding an exercise means: an entry here, a reference function, a check
(``mhsa_helpers/checks/``) and its cells in a notebook source (``course/``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EXERCISES",
    "NOTEBOOKS",
    "Exercise",
    "Notebook",
    "by_grade_id",
    "exercise",
    "exercise_table",
    "forbidden",
    "function_table",
    "names",
    "of_notebook",
]


@dataclass(frozen=True)
class Notebook:
    """One notebook of the course.

    Attributes
    ----------
    stem : str
        File name without ``.ipynb``, e.g. ``"07_softmax"``.
    step : str
        What the notebook teaches, as the tables list it.
    """

    stem: str
    step: str


@dataclass(frozen=True)
class Exercise:
    """One function the learner writes, and how it is graded.

    Attributes
    ----------
    name : str
        The function's name (the contract of COURSE.md).
    notebook : str
        Stem of the notebook that asks for it.
    signature : str
        Its parameters, as the tables show them.
    returns : str
        What it returns, as the tables show it.
    grade_id : str
        nbgrader id of the test cell that grades it (named after behaviour).
    points : int
        Points of that test cell.
    checks : str
        The test cell's docstring: ``"Check that …"``.

    The hidden tests' inputs are not here: they come from a key that only
    the instructor's course directory holds
    (:func:`mhsa_helpers.checks.hidden_seed`).
    """

    name: str
    notebook: str
    signature: str
    returns: str
    grade_id: str
    points: int
    checks: str

    @property
    def answer_id(self) -> str:
        """nbgrader id of the answer cell."""
        return f"{self.name}_answer"

    @property
    def may_use(self) -> tuple[str, ...]:
        """Reference functions the answer may call through ``mh``: those of earlier notebooks."""
        earlier = [nb.stem for nb in NOTEBOOKS]
        earlier = earlier[: earlier.index(self.notebook)]
        return tuple(e.name for e in EXERCISES if e.notebook in earlier)


NOTEBOOKS: tuple[Notebook, ...] = (
    Notebook("00_start_here", "what the course is, how to check your work, your progress"),
    Notebook("01_input", "1. the input: token vectors + positional encoding"),
    Notebook("02_parameters", "2. the learnable parameters $W_Q, W_K, W_V, W_O$"),
    Notebook("03_qkv", "3. queries, keys and values"),
    Notebook("04_heads", "4. dividing into heads"),
    Notebook("05_scores", "5. the score matrix $Z = QK^\\top/\\sqrt{d_k}$"),
    Notebook("06_masking", "6. masking"),
    Notebook("07_softmax", "7. the attention matrix"),
    Notebook("08_head_output", "8. the output of a head"),
    Notebook("09_multi_head", "9. concatenating the heads, output projection"),
    Notebook("10_capstone", "the whole layer, an explorer, multi-query attention"),
    Notebook("11_rope", "extension: rotary position embeddings (RoPE)"),
    Notebook("12_gqa", "extension: grouped-query attention"),
    Notebook("13_kv_cache", "extension: decoding with a KV cache"),
    Notebook("14_tiled", "extension: tiled attention with an online softmax"),
    Notebook("15_cross", "extension: cross-attention"),
    Notebook("16_sliding_window", "extension: sliding-window masks"),
    Notebook("17_backward", "the backward pass: gradients of the softmax, a head, the layer"),
    Notebook(
        "18_training", "training a tiny transformer with your backward pass: what its heads learn"
    ),
)

EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "positional_encoding",
        "01_input",
        "(seq_len, d_model)",
        "`(seq_len, d_model)` sinusoidal encoding",
        "positional_encoding_matches_formula",
        2,
        "Check that positional_encoding matches the sinusoidal formula of the paper.",
    ),
    Exercise(
        "init_weights",
        "02_parameters",
        "(d_in, d_out, rng)",
        "`(d_in, d_out)` Glorot-uniform matrix",
        "init_weights_glorot_uniform",
        2,
        "Check that init_weights is Glorot-uniform, shaped (d_in, d_out) and reproducible "
        "from rng.",
    ),
    Exercise(
        "project_qkv",
        "03_qkv",
        "(X, W_q, W_k, W_v)",
        "`(Q, K, V)`, each `(..., T, d_model)`",
        "project_qkv_uses_each_weight_on_the_right",
        2,
        "Check that project_qkv returns (X @ W_q, X @ W_k, X @ W_v), each weight on the right.",
    ),
    Exercise(
        "split_heads",
        "04_heads",
        "(M, n_heads)",
        "`(..., h, T, d_k)`",
        "split_heads_head_i_owns_its_columns",
        2,
        "Check that split_heads gives each head its own block of d_k columns, shape "
        "(..., h, T, d_k).",
    ),
    Exercise(
        "merge_heads",
        "04_heads",
        "(H)",
        "`(..., T, h*d_k)`, undoing `split_heads`",
        "merge_heads_undoes_split_heads",
        2,
        "Check that merge_heads(split_heads(M, h)) gives back M (feedback names the likely "
        "mistake).",
    ),
    Exercise(
        "attention_scores",
        "05_scores",
        "(Q, K)",
        "`(..., T_q, T_k)` = Q·Kᵀ/√d_k",
        "attention_scores_divides_by_sqrt_d_k",
        2,
        "Check that attention_scores is Q·Kᵀ/√d_k (the feedback names a wrong scale or "
        "orientation).",
    ),
    Exercise(
        "causal_mask",
        "06_masking",
        "(seq_len)",
        "`(T, T)` additive mask (0 / −∞)",
        "causal_mask_blocks_the_future",
        2,
        "Check that causal_mask puts -inf above the diagonal only (the feedback names a flipped "
        "mask).",
    ),
    Exercise(
        "padding_mask",
        "06_masking",
        "(lengths, seq_len)",
        "additive mask of shape `lengths.shape + (1, seq_len)`",
        "padding_mask_blocks_padded_keys",
        2,
        "Check that padding_mask hides the padded key columns, shape lengths.shape + (1, seq_len).",
    ),
    Exercise(
        "softmax",
        "07_softmax",
        "(Z, axis=-1)",
        "rows sum to 1, stable",
        "softmax_rows_sum_to_one",
        3,
        "Check that softmax rows sum to one, stay stable for large scores and masked rows.",
    ),
    Exercise(
        "attention_head",
        "08_head_output",
        "(Q, K, V, mask=None)",
        "`(output, weights)`",
        "attention_head_weights_then_values",
        3,
        "Check that attention_head returns (softmax(QKᵀ/√d_k + M) V, weights), mask on the scores.",
    ),
    Exercise(
        "multi_head_self_attention",
        "09_multi_head",
        "(X, W_q, W_k, W_v, W_o, n_heads, mask=None)",
        "`(output (..., T, d_model), weights (..., h, T, T))`",
        "multi_head_self_attention_matches_reference",
        4,
        "Check that the whole layer matches the reference on the song and the question sentence.",
    ),
    Exercise(
        "multi_query_attention",
        "10_capstone",
        "(X, W_q, W_k, W_v, W_o, n_heads, mask=None)",
        "`(output, weights)` with one K/V head shared by all heads",
        "multi_query_attention_shares_one_kv_head",
        3,
        "Check that multi_query_attention shares one K and V across the heads.",
    ),
    Exercise(
        "kv_cache_size",
        "10_capstone",
        "(seq_len, d_model, n_heads, multi_query=False)",
        "numbers cached for K and V per sequence and layer",
        "kv_cache_size_counts_k_and_v",
        1,
        "Check that kv_cache_size counts K and V for multi-head and multi-query attention.",
    ),
    Exercise(
        "rotary_embedding",
        "11_rope",
        "(X, positions=None, base=10000.0)",
        "`(..., T, d)`, each pair (2i, 2i+1) rotated by p·θ_i",
        "rotary_embedding_rotates_interleaved_pairs",
        3,
        "Check that rotary_embedding rotates each pair (2i, 2i+1) by p·base^(-2i/d).",
    ),
    Exercise(
        "grouped_query_attention",
        "12_gqa",
        "(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None)",
        "`(output, weights)`; with g = n_heads // n_kv_heads, query heads 1 … g share K/V "
        "head 1, heads g+1 … 2g K/V head 2, … (index i reads index i // g)",
        "grouped_query_attention_shares_kv_heads_in_groups",
        3,
        "Check that grouped_query_attention lets each group of consecutive query heads share "
        "one K/V head.",
    ),
    Exercise(
        "decode_step",
        "13_kv_cache",
        "(x, cache, W_q, W_k, W_v, W_o, n_heads)",
        "`(y (..., d_model), (K', V'))`, the cache grown by one position",
        "decode_step_matches_causal_attention",
        3,
        "Check that decode_step, token by token, gives the rows of causal attention and grows "
        "the cache.",
    ),
    Exercise(
        "tiled_attention",
        "14_tiled",
        "(Q, K, V, block_size, causal=False)",
        "`(..., T_q, d_v)`, without the T_q×T_k matrix",
        "tiled_attention_matches_without_the_full_matrix",
        3,
        "Check that tiled_attention equals attention_head block by block, without building "
        "the T_q×T_k matrix.",
    ),
    Exercise(
        "cross_attention",
        "15_cross",
        "(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None)",
        "`(output (..., T_q, d_model), weights (..., h, T_q, T_k))`",
        "cross_attention_queries_from_x_keys_from_c",
        3,
        "Check that cross_attention takes its queries from X and its keys and values from C.",
    ),
    Exercise(
        "sliding_window_mask",
        "16_sliding_window",
        "(seq_len, window)",
        "`(T, T)` additive mask: 0 where i − window < j ≤ i",
        "sliding_window_mask_keeps_the_last_window_keys",
        2,
        "Check that sliding_window_mask lets query i see keys i-window+1 … i, and nothing else.",
    ),
    Exercise(
        "softmax_backward",
        "17_backward",
        "(A, dA, axis=-1)",
        "`dZ`, the shape of `A`: `A * (dA − sum(dA * A, axis))`",
        "softmax_backward_keeps_the_row_sum_term",
        3,
        "Check that softmax_backward gives dZ = A·(dA − Σ dA·A) along the softmax's axis, as "
        "central differences do.",
    ),
    Exercise(
        "attention_head_backward",
        "17_backward",
        "(Q, K, V, dOut, mask=None)",
        "`(dQ, dK, dV)`, the shapes of `Q`, `K`, `V`; no gradient through a blocked position",
        "attention_head_backward_matches_central_differences",
        3,
        "Check that attention_head_backward gives dQ, dK and dV through the scale, the mask and "
        "the softmax, as central differences do.",
    ),
    Exercise(
        "multi_head_self_attention_backward",
        "17_backward",
        "(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None)",
        "`(dX, (dW_q, dW_k, dW_v, dW_o))`, each weight's gradient summed over batch axes",
        "multi_head_self_attention_backward_matches_central_differences",
        3,
        "Check that multi_head_self_attention_backward gives dX and the four weights' gradients "
        "through split and merge, as central differences do.",
    ),
)


def names() -> list[str]:
    """Every exercise's function name, in course order."""
    return [e.name for e in EXERCISES]


def exercise(name: str) -> Exercise:
    """The exercise whose function is ``name``."""
    for e in EXERCISES:
        if e.name == name:
            return e
    raise KeyError(f"no exercise named {name!r}; the exercises are {', '.join(names())}.")


def by_grade_id(grade_id: str) -> Exercise | None:
    """The exercise graded by the test cell ``grade_id``, or None."""
    return next((e for e in EXERCISES if e.grade_id == grade_id), None)


def of_notebook(stem: str) -> list[Exercise]:
    """The exercises of one notebook, in order."""
    return [e for e in EXERCISES if e.notebook == stem]


def forbidden(name: str) -> frozenset[str]:
    """Reference functions an answer for ``name`` may not call: all but the earlier ones."""
    return frozenset(names()) - set(exercise(name).may_use)


def exercise_table() -> str:
    """The start-here notebook's table: every notebook, its step and its exercises."""
    rows = ["| notebook | step | you write |", "|---|---|---|"]
    for nb in NOTEBOOKS[1:]:
        written = ", ".join(f"`{e.name}`" for e in of_notebook(nb.stem))
        rows.append(f"| `{nb.stem}` | {nb.step} | {written} |")
    return "\n".join(rows)


def function_table() -> str:
    """The README's table: every function the learner writes, what it returns, where."""
    rows = ["| notebook | function | returns |", "|---|---|---|"]
    for e in EXERCISES:
        rows.append(f"| `{e.notebook}` | `{e.name}{e.signature}` | {e.returns} |")
    return "\n".join(rows)
