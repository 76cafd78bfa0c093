"""Interactive explorer of multi-head self-attention (ipywidgets 8 + matplotlib).

:class:`Explorer` walks through the nine steps on a worked example, with
controls for the example, the number of heads (only divisors of d_model),
the mask (none / causal / padding with a length slider), the query token and
Prev/Next through the steps. It runs on the course's reference or on the
learner's own functions (``functions=globals()``): a function that is not
implemented yet, or fails, is replaced by the reference and the status line
says so.

The figure is built once per layout (example, heads, step) and afterwards
only its data are replaced, so a control change costs a recomputation and
one redraw (see ``benchmarks/bench_widgets.py``).
"""

from __future__ import annotations

import base64
import io

import ipywidgets as widgets
import matplotlib
import numpy as np
import PIL.Image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from . import reference as ref
from .examples import EXAMPLES, get_example
from .exercises import names
from .plots import DIVERGING, HEAD_COLOURS, SEQUENTIAL

__all__ = ["STEPS", "Explorer"]

STEPS = (
    "1. Input embeddings X",
    "2. Learnable parameters W_Q, W_K, W_V, W_O",
    "3. Queries, keys, values: Q = X·W_Q, K = X·W_K, V = X·W_V",
    "4. Dividing into heads",
    "5. Scores Z = Q·Kᵀ/√d_k, per head",
    "6. Masking: Z + M",
    "7. Attention A = softmax(Z + M), per head",
    "8. Output of each head: A·V",
    "9. Concatenate the heads, project with W_O",
)
MASKS = ("none", "causal", "padding")


def _cmap(name):
    return matplotlib.colormaps[name].with_extremes(bad="#d9d9d9")  # masked (-inf) cells


_CMAPS = {name: _cmap(name) for name in (SEQUENTIAL, DIVERGING)}


class _Panel:
    """One heatmap in the figure: its image and the query-row highlight.

    Values are not written into the picture (drawing text costs milliseconds
    per label); the explorer lists the query's row in an HTML table instead.
    """

    def __init__(self, ax, shape, rows, cols, title, colour, show_rows=True):
        self.ax = ax
        # Animated artists are left out of the full draw and drawn on their own
        # over the saved background (blitting): only they change on an update.
        self.im = ax.imshow(np.zeros(shape), aspect="auto", animated=True, interpolation="nearest")
        rotate = 45 if cols and max(len(str(c)) for c in cols) > 3 else 0
        ax.set_xticks(range(shape[1]), labels=cols, fontsize=7, rotation=rotate)
        ax.set_yticks(range(shape[0]), labels=rows if show_rows else [], fontsize=7)
        ax.set_title(title, fontsize=9, color=colour or "black")
        if colour:
            for spine in ax.spines.values():
                spine.set_edgecolor(colour)
                spine.set_linewidth(3)
        self.box = Rectangle(
            (-0.5, -0.5),
            shape[1],
            1,
            fill=False,
            lw=2.5,
            ec="#D55E00",
            visible=False,
            animated=True,
        )
        ax.add_patch(self.box)

    def set(self, M, highlight=None):
        M = np.asarray(M, dtype=float)
        finite = np.isfinite(M)
        data = M[finite]
        if data.size and data.min() < 0:
            cmap, vmax = DIVERGING, float(np.abs(data).max()) or 1.0
            vmin = -vmax
        else:
            cmap, vmin = SEQUENTIAL, 0.0
            vmax = float(data.max()) if data.size and data.max() > 0 else 1.0
        self.im.set_cmap(_CMAPS[cmap])
        self.im.set_data(np.ma.masked_where(~finite, M))
        self.im.set_clim(vmin, vmax)
        self.box.set_visible(highlight is not None)
        if highlight is not None:
            self.box.set_y(highlight - 0.5)

    def draw(self):
        """Draw the animated artists over the restored background."""
        self.ax.draw_artist(self.im)
        if self.box.get_visible():
            self.ax.draw_artist(self.box)


def _fmt(v) -> str:
    return "\u2212\u221e" if np.isneginf(v) else f"{v:.2f}"


class Explorer:
    """Step-by-step explorer of multi-head self-attention.

    Parameters
    ----------
    functions : dict, optional
        The learner's functions by name (``globals()`` works); only the
        course's exercises are kept. Any function the explorer needs that is
        not given, not implemented or failing is taken from the reference.
    example : str
        One of ``mhsa_helpers.EXAMPLES``.
    n_heads : int, optional
        Defaults to the second smallest divisor of d_model.
    mask : {"none", "causal", "padding"}
    step : int
        1 to 9.
    controls : tuple of str, optional
        Which controls to show, among "example", "heads", "mask", "query" and
        "step"; all by default (the small widgets of the step notebooks show
        one or two).
    """

    def __init__(
        self,
        functions=None,
        example="song",
        n_heads=None,
        mask="none",
        step=1,
        query=0,
        controls=("example", "heads", "mask", "query", "step"),
    ):
        self.functions = {
            n: f for n, f in dict(functions or {}).items() if n in names() and callable(f)
        }
        self.notes = []
        e = get_example(example)
        self.example_w = widgets.Dropdown(
            options=list(EXAMPLES), value=example, description="example"
        )
        self.heads_w = widgets.ToggleButtons(
            options=e.head_choices,
            description="heads",
            value=n_heads or e.head_choices[min(1, len(e.head_choices) - 1)],
        )
        self.mask_w = widgets.ToggleButtons(options=MASKS, value=mask, description="mask")
        self.length_w = widgets.IntSlider(
            value=max(1, e.T - 2), min=1, max=e.T, description="length", disabled=mask != "padding"
        )
        self.query_w = widgets.ToggleButtons(
            options=self._token_options(e), value=query, description="query"
        )
        self.prev_w = widgets.Button(description="\u25c0 Prev")
        self.next_w = widgets.Button(description="Next \u25b6")
        self.step_w = widgets.IntSlider(value=step, min=1, max=len(STEPS), description="step")
        self.title_w = widgets.HTML()
        self.values_w = widgets.HTML()
        self.status_w = widgets.HTML()
        self.image = widgets.Image(format="png")
        for w in (self.heads_w, self.mask_w, self.length_w, self.query_w, self.step_w):
            w.observe(self._on_change, names="value")
        self.example_w.observe(self._on_example, names="value")
        self.prev_w.on_click(lambda _: self._move(-1))
        self.next_w.on_click(lambda _: self._move(+1))
        rows = {
            "example": [self.example_w],
            "heads": [self.heads_w],
            "mask": [widgets.HBox([self.mask_w, self.length_w])],
            "query": [self.query_w],
            "step": [widgets.HBox([self.prev_w, self.next_w, self.step_w])],
        }
        shown = [w for c in controls for w in rows[c]]
        self.widget = widgets.VBox([*shown, self.title_w, self.status_w, self.image, self.values_w])
        self._fig = None
        self._key = None
        self._cache = {}  # layout key -> (figure, panels, background)
        self._panels = []
        self._busy = False
        self.update()

    # ------------------------------------------------------------------ state
    @property
    def example(self):
        return get_example(self.example_w.value)

    @staticmethod
    def _token_options(e):
        seen = {}
        options = []
        for i, t in enumerate(e.tokens):
            seen[t] = seen.get(t, 0) + 1
            options.append((t if seen[t] == 1 else f"{t} ({i + 1})", i))
        return options

    def _call(self, name, *args):
        """The learner's function if it works here, else the reference (and a note)."""
        fn = self.functions.get(name)
        if fn is not None:
            try:
                with np.errstate(all="ignore"):
                    return fn(*args)
            except NotImplementedError:
                self.notes.append(f"your <code>{name}</code> is not implemented yet")
            except Exception as exc:  # shown to the learner, then the reference is used
                self.notes.append(f"your <code>{name}</code> raised {type(exc).__name__}: {exc}")
        return getattr(ref, name)(*args)

    def compute(self) -> dict:
        """Every intermediate matrix of the current state."""
        e = self.example
        h = self.heads_w.value
        self.notes = []
        Q, K, V = self._call("project_qkv", e.X, e.W_q, e.W_k, e.W_v)
        Qh, Kh, Vh = (self._call("split_heads", M, h) for M in (Q, K, V))
        Z = self._call("attention_scores", Qh, Kh)
        if self.mask_w.value == "causal":
            M = self._call("causal_mask", e.T)
        elif self.mask_w.value == "padding":
            M = self._call("padding_mask", self.length_w.value, e.T) + np.zeros((e.T, e.T))
        else:
            M = np.zeros((e.T, e.T))
        A = self._call("softmax", Z + M)  # step 7: the learner's softmax
        heads, _ = self._call("attention_head", Qh, Kh, Vh, M)  # step 8
        concat = self._call("merge_heads", heads)
        out = concat @ e.W_o
        return dict(
            X=e.X,
            Q=Q,
            K=K,
            V=V,
            Qh=Qh,
            Z=Z,
            M=M,
            ZM=Z + M,
            A=A,
            heads=heads,
            concat=concat,
            out=out,
        )

    # ------------------------------------------------------------------ drawing
    def _panels_for_step(self, s):
        """(key, title, colour, rows, cols, highlight?) for each panel of the current step."""
        e = self.example
        h = self.heads_w.value
        d_k = e.d_model // h
        tok, feat = e.tokens, e.features
        kcols = [f"c{i}" for i in range(d_k)]
        step = self.step_w.value
        per_head = [(f"head {i + 1}", HEAD_COLOURS[i % len(HEAD_COLOURS)]) for i in range(h)]
        if step == 1:
            return [(s["X"], "X (input)", None, tok, feat, True)]
        if step == 2:
            return [
                (W, n, None, feat, feat, False)
                for n, W in zip(("W_Q", "W_K", "W_V", "W_O"), e.weights, strict=True)
            ]
        if step == 3:
            return [(s[n], n, None, tok, feat, True) for n in "QKV"]
        if step == 4:
            return [
                (s["Qh"][i], f"Q, {t}", c, tok, kcols, True) for i, (t, c) in enumerate(per_head)
            ]
        if step == 5:
            return [(s["Z"][i], f"Z, {t}", c, tok, tok, True) for i, (t, c) in enumerate(per_head)]
        if step == 6:
            return [(s["M"], "mask M", None, tok, tok, True)] + [
                (s["ZM"][i], f"Z + M, {t}", c, tok, tok, True) for i, (t, c) in enumerate(per_head)
            ]
        if step == 7:
            return [(s["A"][i], f"A, {t}", c, tok, tok, True) for i, (t, c) in enumerate(per_head)]
        if step == 8:
            return [
                (s["heads"][i], f"A·V, {t}", c, tok, kcols, True)
                for i, (t, c) in enumerate(per_head)
            ]
        q = self.query_w.value
        return [
            (s["concat"], "concatenated heads", None, tok, feat, True),
            (s["out"], "output = concat · W_O", None, tok, feat, True),
            (
                np.stack([s["X"][q], s["out"][q]]),
                "query token: input vs output",
                None,
                ["input", "output"],
                feat,
                False,
            ),
        ]

    def _values_table(self, panels, q) -> str:
        """HTML table of the query token's row in every panel that highlights it."""
        rows = [(title, colour, M[q], cols) for M, title, colour, _, cols, hl in panels if hl]
        if not rows:
            return ""
        token = self.example.tokens[q]
        html = [
            f"<table class='mhsa-values'><caption>row of the query '{token}'</caption>",
            "<tr><th></th>" + "".join(f"<th>{c}</th>" for c in rows[0][3]) + "</tr>",
        ]
        for title, colour, values, cols in rows:
            style = f" style='color:{colour}'" if colour else ""
            cells = "".join(
                f"<td title='{c}'>{_fmt(v)}</td>" for c, v in zip(cols, values, strict=True)
            )
            html.append(f"<tr><th{style}>{title}</th>{cells}</tr>")
        return "".join(html) + "</table>"

    def _build(self, panels):
        """Make the figure for a layout: axes, ticks, titles, and its saved background.

        Fixed margins (in inches) instead of a layout engine: laying out is
        most of the cost of a new figure.
        """
        n = len(panels)
        widths = [max(1.6, 0.42 * p[0].shape[1] + 0.5) for p in panels]
        left, gap, right, top, bottom = 0.9, 0.35, 0.1, 0.35, 0.75  # inches
        if any(p[3] != q[3] for p, q in zip(panels[1:], panels[:-1], strict=True)):
            gap = left  # a later panel writes its own row labels
        n_rows = max(p[0].shape[0] for p in panels)
        fig_w = left + sum(widths) + gap * (n - 1) + right
        fig_h = top + 0.3 * n_rows + 0.4 + bottom
        fig = Figure(figsize=(fig_w, fig_h), dpi=72)
        axes = fig.subplots(
            1,
            n,
            squeeze=False,
            width_ratios=widths,
            gridspec_kw=dict(
                left=left / fig_w,
                right=1 - right / fig_w,
                bottom=bottom / fig_h,
                top=1 - top / fig_h,
                wspace=gap * n / sum(widths),
            ),
        )[0]
        self._panels = [
            _Panel(
                ax, M.shape, rows, cols, title, colour, show_rows=k == 0 or rows != panels[k - 1][3]
            )
            for k, (ax, (M, title, colour, rows, cols, _)) in enumerate(
                zip(axes, panels, strict=True)
            )
        ]
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        self._background = fig.canvas.copy_from_bbox(fig.bbox)
        self._fig = fig

    def render(self) -> bytes:
        """Recompute, redraw and return the current figure as PNG bytes."""
        s = self.compute()
        panels = self._panels_for_step(s)
        key = (
            self.example_w.value,
            self.heads_w.value,
            self.step_w.value,
            tuple(p[0].shape for p in panels),
        )
        if key != self._key:
            if key in self._cache:  # a layout seen before: reuse its figure
                self._fig, self._panels, self._background = self._cache[key]
            else:
                self._build(panels)
                self._cache[key] = (self._fig, self._panels, self._background)
            self._key = key
        q = self.query_w.value
        canvas = self._fig.canvas
        canvas.restore_region(self._background)
        for panel, (M, *_rest, hl) in zip(self._panels, panels, strict=True):
            panel.set(M, q if hl else None)
            panel.draw()
        self.values_w.value = self._values_table(panels, q)
        buf = io.BytesIO()
        PIL.Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).save(
            buf, format="png", compress_level=1
        )
        return buf.getvalue()

    def update(self):
        """Bring the title, status line and picture up to date with the controls."""
        if self._busy:
            return
        e = self.example
        h = self.heads_w.value
        self.length_w.disabled = self.mask_w.value != "padding"
        self.prev_w.disabled = self.step_w.value == 1
        self.next_w.disabled = self.step_w.value == len(STEPS)
        self.image.value = self.render()
        self.title_w.value = f"<b>Step {STEPS[self.step_w.value - 1]}</b>"
        mask = self.mask_w.value
        if mask == "padding":
            mask += f" (length {self.length_w.value})"
        status = (
            f"<span class='mhsa-status'>{e.title} · <b>h = {h}</b> heads of "
            f"d_k = {e.d_model // h} · mask: {mask} · query: "
            f"'{e.tokens[self.query_w.value]}'</span>"
        )
        if self.notes:
            status += (
                "<br><span style='color:#D55E00'>Using the reference because "
                + "; ".join(dict.fromkeys(self.notes))
                + ".</span>"
            )
        self.status_w.value = status

    # ------------------------------------------------------------------ events
    def _on_change(self, _change):
        self.update()

    def _on_example(self, change):
        e = get_example(change["new"])
        self._busy = True
        try:
            h = self.heads_w.value
            self.heads_w.options = e.head_choices
            self.heads_w.value = (
                h if h in e.head_choices else e.head_choices[min(1, len(e.head_choices) - 1)]
            )
            self.query_w.options = self._token_options(e)
            self.query_w.value = 0
            self.length_w.max = e.T
            self.length_w.value = min(self.length_w.value, e.T)
        finally:
            self._busy = False
        self.update()

    def _move(self, delta):
        self.step_w.value = int(np.clip(self.step_w.value + delta, 1, len(STEPS)))

    # ------------------------------------------------------------------ display
    def static(self):
        """The current state as a static image, for readers without a live kernel."""
        from IPython.display import Image

        return Image(data=self.image.value, format="png")

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, plus a PNG of the current state for static viewers.

        JupyterLab prefers the widget view; where widgets are not live (a
        rendered notebook on a website) the picture is shown instead.
        """
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["image/png"] = base64.b64encode(bytes(self.image.value)).decode("ascii")
        return bundle
