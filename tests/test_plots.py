"""The notebooks' figures: heads drawn on one colour scale, with the titles given,
and every figure the course draws sized for JupyterLab's output area.

A figure shown inline is ``figure.dpi`` CSS pixels per inch (the retina PNG has
twice the pixels, shown at the same size). JupyterLab shrinks a figure wider
than its output area, and its text with it: so no figure may be wider than
``MAX_WIDTH_PX``, and no text smaller than ``FONT_PX``, the notebook's body text.
"""

import matplotlib
import numpy as np
import pytest
from IPython.core.pylabtools import retina_figure

matplotlib.use("agg")

import matplotlib.pyplot as plt
from matplotlib.text import Text

import mhsa_helpers as mh
from mhsa_helpers import line_plots, plot_style
from mhsa_helpers.plot_style import HEAD_COLOURS
from mhsa_helpers.plots import heads_figure, heatmap, heatmaps


def images(fig):
    return [ax.images[0] for ax in fig.axes if ax.images]


def test_heads_share_one_colour_scale_unless_told_otherwise():
    H = np.stack([np.full((3, 3), 0.1), np.arange(9.0).reshape(3, 3) - 2])  # head 2 has < 0
    clims = {im.get_clim() for im in images(heads_figure(H))}
    assert clims == {(-6.0, 6.0)}
    clims = {im.get_clim() for im in images(heads_figure(H, vmin=0, vmax=1))}
    assert clims == {(0.0, 1.0)}


def test_titles_are_the_ones_given_in_head_colours():
    fig = heads_figure(np.ones((3, 2, 2)), titles=["robotics", "NLP", "music"])
    titles = [ax.get_title() for ax in fig.axes if ax.images]
    assert titles == ["robotics", "NLP", "music"]
    colours = [ax.title.get_color() for ax in fig.axes if ax.images]
    assert colours == HEAD_COLOURS[:3]


# ------------------------------------------------ every figure the course draws

song, students = mh.get_example("song"), mh.get_example("students")
EXAMPLES = {name: mh.get_example(name) for name in mh.EXAMPLES}


def attention(e, h, mask=None, scale=1.0):
    return mh.multi_head_self_attention(e.X, scale * e.W_q, scale * e.W_k, e.W_v, e.W_o, h, mask)[1]


def capstone_heads():
    eye = np.eye(7)
    W = mh.examples.STUDENT_SELECTIVE_SCALE * eye
    A7 = mh.multi_head_self_attention(students.X, W, W, eye, eye, n_heads=7)[1]
    picked = [students.features.index(f) for f in ("AI", "robotics", "NLP", "chemical eng.")]
    titles = [f"head '{students.features[i]}'" for i in picked]
    return heads_figure(A7[picked], students.tokens, students.tokens, vmin=0, vmax=1, titles=titles)


def gqa_reads():
    panels = []
    for kv in (8, 2, 1):
        reads = np.zeros((8, kv))
        reads[np.arange(8), np.arange(8) // (8 // kv)] = 1
        rows, cols = [f"q{i + 1}" for i in range(8)], [f"kv{j + 1}" for j in range(kv)]
        panels.append((reads, rows, cols, f"n_kv_heads = {kv}"))
    return heatmaps(panels, vmin=0, vmax=1, annotate=False)


def reach():
    sees = (mh.sliding_window_mask(16, 3) == 0).astype(int)
    panels = [
        (np.linalg.matrix_power(sees, L) > 0, None, None, f"{L} layer(s), window 3")
        for L in (1, 2, 4)
    ]
    return heatmaps(panels, vmin=0, vmax=1, annotate=False)


def rope_scores():
    T = 8
    q, k = np.random.default_rng(0).normal(size=(2, 8))
    S = mh.rotary_embedding(np.tile(q, (T, 1))) @ mh.rotary_embedding(np.tile(k, (T, 1))).T
    return heatmap(
        S, [f"m={m}" for m in range(T)], [f"n={n}" for n in range(T)], "RoPE: q at m · k at n"
    ).figure


def weights_of(e):
    return heatmaps(
        [
            (W, e.features, e.features, name)
            for name, W in zip(["W_Q", "W_K", "W_V", "W_O"], e.weights, strict=True)
        ]
    )


FIGURES = {
    # one heatmap
    **{
        f"X of {name}": (lambda e=EXAMPLES[name]: heatmap(e.X, e.tokens, e.features, "X").figure)
        for name in mh.EXAMPLES
    },
    "positional encoding 50 x 16": lambda: (
        heatmap(
            mh.positional_encoding(50, 16),
            annotate=False,
            title="positional encoding",
            xlabel="feature",
            ylabel="position",
        ).figure
    ),
    "cos(p θ_i), 12 x 8": lambda: (
        heatmap(
            np.cos(np.arange(12)[:, None] * 1e4 ** (-np.arange(0, 16, 2) / 16)),
            [f"p={p}" for p in range(12)],
            [f"θ{i}" for i in range(8)],
            "cos(p·θ_i): pair i of a token at position p",
        ).figure
    ),
    "RoPE scores": rope_scores,
    "one query, 8 keys": lambda: (
        heatmap(
            mh.softmax(np.arange(1, 9) * 1.6),
            ["query"],
            [f"key {j}" for j in range(8)],
            "its attention weights",
            vmin=0,
            vmax=1,
        ).figure
    ),
    # heatmaps side by side
    "X of two examples": lambda: heatmaps(
        [
            (song.X, song.tokens, song.features, '"List new ideas for a song": X'),
            (students.X, students.tokens, students.features, "Six students: X"),
        ]
    ),
    **{
        f"weights of {name}": (lambda e=EXAMPLES[name]: weights_of(e))
        for name in ("song", "trained")
    },
    "masks right and wrong": lambda: heatmaps(
        [
            (mh.causal_mask(6), song.tokens, song.tokens, "right: −∞ where key j > query i"),
            (
                np.where(np.add.outer(range(6), range(6)) > 5, -np.inf, 0.0),
                song.tokens,
                song.tokens,
                "wrong (article): anti-triangle",
            ),
        ],
        xlabel="key j",
        ylabel="query i",
    ),
    "three 6 x 7 on one scale": lambda: heatmaps(
        [
            (students.X, students.tokens, students.features, t)
            for t in ("before: V = X", "after: R'·V (Q = K = X)", "after: A·V (W_Q = W_K = 8·I)")
        ],
        vmin=0,
        vmax=0.5,
    ),
    "R' and selective": lambda: heatmaps(
        [
            (
                attention(students, 1)[0],
                students.tokens,
                students.tokens,
                "R' = softmax(R / √7): W_Q = W_K = I",
            )
        ]
        * 2,
        vmin=0,
        vmax=1,
    ),
    "n_kv_heads reads": gqa_reads,
    "cached K and weights": lambda: heatmaps(
        [
            (song.X[:, :2], song.tokens, ["k0", "k1"], "head 1: cached K"),
            {
                "M": attention(song, 2, mh.causal_mask(6))[0],
                "row_labels": song.tokens,
                "col_labels": song.tokens,
                "title": "head 1: weights, step by step",
                "vmin": 0,
                "vmax": 1,
            },
        ]
    ),
    "reach of layers": reach,
    "one query over a padded memory": lambda: (
        heatmap(
            attention(song, 1, mh.padding_mask(3, 6))[0][:2],
            ["List", "new"],
            song.tokens,
            "memory of length 3",
            vmin=0,
            vmax=1,
            mask=mh.padding_mask(3, 6),
        ).figure
    ),
    # heads
    **{
        f"{h} heads of {name}": (
            lambda e=EXAMPLES[name], h=h: heads_figure(
                attention(e, h), e.tokens, e.tokens, "attention per head", vmin=0, vmax=1
            )
        )
        for name in mh.EXAMPLES
        for h in EXAMPLES[name].head_choices
    },
    "capstone's four heads": capstone_heads,
    "2 heads of song, causal, with the mask": lambda: heads_figure(
        attention(song, 2, mh.causal_mask(6)),
        song.tokens,
        song.tokens,
        "attention per head",
        vmin=0,
        vmax=1,
        mask=mh.causal_mask(6),
    ),
    "Q split into 2 heads": lambda: heads_figure(
        mh.split_heads(song.X @ song.W_q, 2), song.tokens, ["c0", "c1"], "Q split into 2 heads"
    ),
    "scores per head": lambda: heads_figure(
        mh.attention_scores(*mh.split_heads(np.stack([song.X @ song.W_q, song.X @ song.W_k]), 2)),
        song.tokens,
        song.tokens,
        "Z per head",
    ),
    "sliding windows": lambda: heads_figure(
        np.stack([mh.sliding_window_mask(6, w) for w in (1, 2, 3, 6)]),
        song.tokens,
        song.tokens,
        titles=[f"window = {w}" for w in (1, 2, 3, 6)],
    ),
    "one head's gradient": lambda: heads_figure(
        np.abs(attention(song, 2)[:1] - 0.2),
        song.tokens,
        song.tokens,
        titles=["|dZ|, the scores' gradient"],
    ),
    # line plots
    "training curves": lambda: line_plots.training_curves(
        np.geomspace(3.3, 0.01, 600), np.arange(0, 601, 25), np.linspace(0.04, 1, 25), 26, 0.99
    ),
    "accuracy by position": lambda: line_plots.accuracy_by_position(
        np.linspace(0.04, 1, 8), np.arange(8) >= 3.5, 26
    ),
    "turning pair": lambda: line_plots.turning_figure(
        [[np.cos(0.6 * p), np.sin(0.6 * p)] for p in range(6)]
    ),
}


@pytest.fixture(params=sorted(FIGURES), name="fig", scope="module")
def figure(request):
    fig = FIGURES[request.param]()
    fig.canvas.draw()
    yield fig
    plt.close(fig)


def shown_width(fig):
    """Width of the figure in a notebook, in CSS px: its tight box and the margins around it.

    That is what ``savefig(bbox_inches="tight")`` crops to, the inline backend's setting.
    """
    box = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    return (box.width + 2 * plt.rcParams["savefig.pad_inches"]) * fig.dpi


@pytest.mark.slow  # every figure drawn
def test_figure_is_never_shrunk_to_the_output_area(fig):
    assert fig.dpi == plot_style.DPI  # the inline backend shows figure.dpi CSS px per inch
    assert fig.get_figwidth() * fig.dpi <= plot_style.MAX_WIDTH_PX
    assert shown_width(fig) <= plot_style.MAX_WIDTH_PX


@pytest.mark.parametrize("name", ["capstone's four heads", "training curves"])
def test_the_width_is_the_width_of_the_png_ipython_sends(name):
    fig = FIGURES[name]()
    _, size = retina_figure(fig, bbox_inches="tight")  # what the inline backend sends
    assert size["width"] == pytest.approx(shown_width(fig), abs=2)  # whole pixels
    plt.close(fig)


@pytest.mark.slow  # every figure drawn
def test_no_text_smaller_than_the_notebook_text(fig):
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert texts
    small = {
        t.get_text(): round(t.get_fontsize() * fig.dpi / 72, 1)
        for t in texts
        if t.get_fontsize() * fig.dpi / 72 < plot_style.FONT_PX - 1e-6
    }
    assert not small, f"text below {plot_style.FONT_PX} CSS px: {small}"


def cells(ax):
    """Width and height of one cell of a heatmap, in CSS px."""
    n_r, n_c = ax.images[0].get_array().shape
    box = ax.get_window_extent()
    return (
        box.width / n_c * plot_style.DPI / ax.figure.dpi,
        box.height / n_r * plot_style.DPI / ax.figure.dpi,
    )


@pytest.mark.slow  # every figure drawn
def test_numbers_fit_their_cells_and_every_numbered_cell_is_as_high(fig):
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        numbers = [t for t in ax.texts if t.get_text()]
        if not ax.images or not numbers:
            continue
        width, height = cells(ax)
        assert height == pytest.approx(plot_style.CELL_HEIGHT_PX)
        widest = (
            max(t.get_window_extent(renderer).width for t in numbers) * plot_style.DPI / fig.dpi
        )
        assert widest <= width - 8, (ax.get_title(), widest, width)


def test_shrunk_cells_go_without_numbers():
    fig = FIGURES["7 heads of students"]()
    assert all(not ax.texts for ax in fig.axes if ax.images)
    assert {round(cells(ax)[1]) for ax in fig.axes if ax.images} == {round(cells(fig.axes[0])[0])}
    plt.close(fig)


def test_heads_that_do_not_fit_in_one_row_wrap_into_two():
    fig = capstone_heads()
    tops = {round(ax.get_position().y1, 3) for ax in fig.axes if ax.images}
    assert len(tops) == 2
    assert all(ax.texts for ax in fig.axes if ax.images)
    plt.close(fig)


def test_heatmap_into_a_given_axes_keeps_it():
    fig, ax = plt.subplots(figsize=(4, 3))
    assert heatmap(song.X, song.tokens, song.features, ax=ax) is ax
    assert len(fig.axes) == 2  # and its colour bar
    plt.close(fig)


def drawn_texts(ax):
    """The texts of ``ax`` that are drawn: tick labels only of ticks within the view."""
    texts = [ax.title, *ax.texts]
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = sorted(axis.get_view_interval())
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            if lo - 1e-9 * (hi - lo) <= tick.get_loc() <= hi + 1e-9 * (hi - lo):
                texts += [tick.label1, tick.label2]
        texts.append(axis.label)
    if ax.get_legend() is not None:
        texts += ax.get_legend().get_texts()
    return texts


@pytest.mark.slow  # every figure drawn
def test_texts_of_two_panels_do_not_overlap(fig):
    """Tick labels, colour bar labels, titles and numbers of one panel keep off the others'."""
    renderer = fig.canvas.get_renderer()
    owner, names, boxes = [], [], []
    for k, ax in enumerate(fig.axes):  # a colour bar is an Axes of its own
        for t in drawn_texts(ax):
            if t.get_visible() and t.get_text().strip():
                owner.append(k)
                names.append(t.get_text())
                boxes.append(t.get_window_extent(renderer).extents)
    owner, (x0, y0, x1, y1) = np.array(owner), np.array(boxes).T
    clash = (
        (x0[:, None] < x1[None, :])
        & (x0[None, :] < x1[:, None])
        & (y0[:, None] < y1[None, :])
        & (y0[None, :] < y1[:, None])
        & (owner[:, None] != owner[None, :])
    )
    pairs = [(names[i], names[j]) for i, j in zip(*np.nonzero(np.triu(clash)), strict=True)]
    assert not pairs, pairs[:5]


# ------------------------------------------------ cells blocked by a mask

#: The pictures' legend for a blocked cell (plot_style.BLOCKED_LABEL, sent to the page), word
#: for word.
BLOCKED = "blocked by the mask (score \u2212\u221e, weight 0, no number)"
ABOVE_DIAGONAL = {(r, c) for r in range(6) for c in range(6) if c > r}  # causal, T = 6


def panels(fig):
    """The heatmaps of a figure (a colour bar is an Axes without an image)."""
    return [ax for ax in fig.axes if ax.images]


def numbers_at(ax):
    """Text written in the cells: {(row, col): text}."""
    return {
        (round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts
    }


def hatched_cells(ax):
    """Cells covered by a hatched grey patch with dark stripes: {(row, col)}."""
    cells = set()
    for patch in ax.patches:
        if not patch.get_hatch():
            continue
        assert matplotlib.colors.to_hex(patch.get_facecolor()) == "#d0d0d0"
        assert matplotlib.colors.to_hex(patch.get_hatchcolor()) == "#303030"
        x, y = patch.get_xy()
        assert (patch.get_width(), patch.get_height()) == (1, 1)
        cells.add((round(y + 0.5), round(x + 0.5)))
    return cells


def legend_texts(fig):
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def weights(mask):
    return attention(song, 2, mask)  # (2, 6, 6)


@pytest.mark.parametrize(
    "mask",
    [mh.causal_mask(6), np.triu(np.ones((6, 6), dtype=bool), k=1)],
    ids=["additive", "boolean"],
)
def test_blocked_weights_are_hatched_without_a_number(mask):
    A = weights(mh.causal_mask(6))
    assert np.all(A[:, np.triu_indices(6, 1)[0], np.triu_indices(6, 1)[1]] == 0)  # 0.00 once
    fig = heads_figure(A, song.tokens, song.tokens, vmin=0, vmax=1, mask=mask)
    assert len(panels(fig)) == 2
    for ax in panels(fig):
        written = numbers_at(ax)
        assert not ABOVE_DIAGONAL & set(written), "a blocked cell has a number"
        assert len(written) == 21  # every allowed cell has its number
        assert hatched_cells(ax) == ABOVE_DIAGONAL
    assert legend_texts(fig).count(BLOCKED) == 1
    plt.close(fig)


def test_scores_of_minus_infinity_are_blocked_without_being_told():
    Z = mh.attention_scores(song.X @ song.W_q, song.X @ song.W_k) + mh.causal_mask(6)
    fig = heatmaps([(Z, song.tokens, song.tokens, "Z + M")])
    (ax,) = panels(fig)
    assert hatched_cells(ax) == ABOVE_DIAGONAL
    assert not ABOVE_DIAGONAL & set(numbers_at(ax))
    assert all("\u221e" not in text for text in numbers_at(ax).values())
    assert legend_texts(fig) == [BLOCKED]
    plt.close(fig)


def test_a_mask_is_drawn_as_a_mask_white_and_hatched_with_no_colour_bar():
    """Notebook 16 draws sliding-window masks: allowed cells are white with no number, not
    a colour of a weights' scale reading "0.00"; blocked cells hatched; no colour bar."""
    masks = np.stack([mh.sliding_window_mask(6, w) for w in (1, 3)])
    fig = heads_figure(masks, song.tokens, song.tokens, titles=["window = 1", "window = 3"])
    assert len(fig.axes) == len(panels(fig)) == 2  # no colour bar
    window = {(r, c) for r in range(6) for c in range(6) if c > r or c < r - 2}
    for ax, blocked in zip(
        panels(fig),
        (ABOVE_DIAGONAL | {(r, c) for r in range(6) for c in range(r)}, window),
        strict=True,
    ):
        assert hatched_cells(ax) == blocked and not numbers_at(ax)
        image = ax.get_images()[0]
        allowed = [(r, c) for r in range(6) for c in range(6) if (r, c) not in blocked]
        assert {tuple(image.cmap(image.norm(image.get_array()[r, c]))) for r, c in allowed} == {
            (1.0, 1.0, 1.0, 1.0)
        }
    assert legend_texts(fig) == ["allowed (0)", BLOCKED]
    plt.close(fig)


def test_a_padding_mask_of_one_row_blocks_the_same_keys_in_every_row_and_head():
    A = weights(mh.padding_mask(4, 6))
    fig = heads_figure(A, song.tokens, song.tokens, vmin=0, vmax=1, mask=mh.padding_mask(4, 6))
    padded = {(r, c) for r in range(6) for c in (4, 5)}
    for ax in panels(fig):
        assert hatched_cells(ax) == padded
        assert not padded & set(numbers_at(ax))
    plt.close(fig)


def test_a_mask_per_head_blocks_each_head_its_own_cells():
    masks = np.stack([mh.causal_mask(6), mh.sliding_window_mask(6, 2)])
    Qh, Kh, Vh = (mh.split_heads(M, 2) for M in mh.project_qkv(song.X, *song.weights[:3]))
    A = mh.attention_head(Qh, Kh, Vh, masks)[1]  # (2, 6, 6): head i under masks[i]
    fig = heads_figure(A, song.tokens, song.tokens, mask=masks)
    window = {(r, c) for r in range(6) for c in range(6) if c > r or c < r - 1}
    assert [hatched_cells(ax) for ax in panels(fig)] == [ABOVE_DIAGONAL, window]
    plt.close(fig)


def test_heatmap_into_a_given_axes_hatches_and_has_the_legend():
    fig, ax = plt.subplots(figsize=(5, 4))
    heatmap(weights(mh.causal_mask(6))[0], song.tokens, song.tokens, ax=ax, mask=mh.causal_mask(6))
    assert hatched_cells(ax) == ABOVE_DIAGONAL
    assert not ABOVE_DIAGONAL & set(numbers_at(ax))
    assert legend_texts(fig) == [BLOCKED]
    plt.close(fig)


def test_a_figure_without_a_mask_has_no_hatching_and_no_legend():
    A = weights(None)
    for fig in (
        heads_figure(A, song.tokens, song.tokens, vmin=0, vmax=1),
        heatmaps([(A[0], song.tokens, song.tokens, "A")]),
    ):
        assert all(not hatched_cells(ax) for ax in panels(fig))
        assert all(len(numbers_at(ax)) == 36 for ax in panels(fig))
        assert BLOCKED not in legend_texts(fig)
        plt.close(fig)


def test_a_mask_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match="broadcast"):
        heads_figure(weights(None), mask=mh.causal_mask(5))


def figures_of_notebook_cell(stem, marker):
    """Run a solution notebook's code cells in this process up to the first containing
    ``marker`` (the visible checks are skipped); the figures that cell draws."""
    import nbformat

    from tests.support.nbgrader_course import SOLUTIONS

    nb = nbformat.read(str(SOLUTIONS / f"{stem}.ipynb"), as_version=4)
    namespace = {"__name__": f"notebook_{stem}"}
    for cell in nb.cells:
        if cell.cell_type != "code" or "raises-exception" in cell.metadata.get("tags", []):
            continue
        before = set(plt.get_fignums())
        exec(compile(cell.source, f"{stem}.ipynb", "exec"), namespace)
        if marker in cell.source:
            figs = [plt.figure(n) for n in plt.get_fignums() if n not in before]
            plt.close("all")
            return figs
    raise AssertionError(f"no cell of {stem} contains {marker!r}")


def test_notebook_09_hatches_the_causal_weights_of_every_head():
    figs = figures_of_notebook_cell("09_multi_head", "heads_figure(A,")
    (fig,) = [f for f in figs if f._suptitle and f._suptitle.get_text() == "attention per head"]
    assert len(panels(fig)) == 2
    for ax in panels(fig):
        assert hatched_cells(ax) == ABOVE_DIAGONAL
        assert not ABOVE_DIAGONAL & set(numbers_at(ax))
    assert legend_texts(fig) == [BLOCKED]


def test_notebook_17_hatches_the_blocked_weights_and_gradients():
    figs = figures_of_notebook_cell("17_backward", "heads_figure(A1[None]")
    titled = {ax.get_title(): ax for fig in figs for ax in panels(fig)}
    for title in ("weights A (head 1)", "|dZ|, the scores' gradient"):
        ax = titled[title]
        assert hatched_cells(ax) == ABOVE_DIAGONAL, title
        assert not ABOVE_DIAGONAL & set(numbers_at(ax)), title
    assert all(legend_texts(fig) == [BLOCKED] for fig in figs)
