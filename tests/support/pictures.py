"""Reading the pictures in tests: the explorer's SVG drawn in Python (cells, tooltips, ids
left out), and the pictures drawn in the page, against the layer computed with numpy."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import numpy as np

_CELL = re.compile(
    r"<g class='cell ([^']*)'><rect [^>]*?fill='([^']+)'/>(?:<text [^>]*>([^<]*)</text>)?</g>"
)
#: A cell's target for the pointer and Tab (transparent, over the cell), by the cell's class.
_HIT = re.compile(r"<rect class='hit [^']*?\b(c\d+)'[^>]*?( tabindex='0')?/>")
_LINK = re.compile(r"<g class='link ([^']*)'( tabindex='0')?>")
_TIP = re.compile(r"<text class='tip (c\d+)'[^>]*>(.*?)</text>")
_LINE = re.compile(r"(?:^|<tspan [^>]*>)([^<]*)")
KEY = re.compile(r"c\d+")  # a cell's own class, which its tooltip carries too
_IDS = re.compile(r"\b(mhsa|blocked|notyet|bar)-\d+-[0-9a-f]+\b")


@dataclass
class Cell:
    """One cell of a picture: its link classes, fill, number (or None), tooltip lines."""

    links: str
    fill: str
    number: str | None
    tip: list[str]
    tab: bool

    @property
    def text(self) -> str:
        """The tooltip's lines as one sentence."""
        return " | ".join(self.tip)


def tips(picture: str) -> dict[str, list[str]]:
    """Each tooltip's lines (unescaped), by the class of the element it belongs to."""
    return {
        key: [html.unescape(t).strip() for t in _LINE.findall(body)]
        for key, body in _TIP.findall(picture)
    }


def cells(picture: str) -> list[Cell]:
    """Every cell of ``picture``, in drawing order."""
    found = tips(picture)
    tabs = dict(_HIT.findall(picture))
    out = []
    for classes, fill, number in _CELL.findall(picture):
        names = classes.split()
        key = next(n for n in names if KEY.fullmatch(n))
        links = " ".join(n for n in names if n != key)
        out.append(Cell(links, fill, number or None, found[key], bool(tabs[key])))
    return out


def links(picture: str) -> list[tuple[str, list[str]]]:
    """``(link classes, tooltip lines)`` of every line of a query's view."""
    found = tips(picture)
    out = []
    for classes, _ in _LINK.findall(picture):
        names = classes.split()
        key = next(n for n in names if KEY.fullmatch(n))
        out.append((" ".join(n for n in names if n != key), found[key]))
    return out


def without_ids(picture: str) -> str:
    """``picture`` with its drawing's own ids replaced by one name (to compare drawings)."""
    return _IDS.sub(r"\1-ID", picture)


def size(picture: str) -> tuple[int, int]:
    """The picture's width and height in CSS px."""
    w, h = re.search(r"<svg [^>]*width='(\d+)' height='(\d+)'", picture).groups()
    return int(w), int(h)


def shown(picture: str) -> list[tuple[str, str | None, tuple[str, ...]]]:
    """What ``picture``'s cells show, whatever their size: fill, number and tooltip of each.

    Two drawings of the same numbers compare equal even where the room left by the
    notes made one's cells larger.
    """
    return [(c.fill, c.number, tuple(c.tip)) for c in cells(picture)]


# --------------------------------------------------------------------------
# The pictures drawn in the page (front/*.js): what a page shows, read in the
# browser, against the layer computed here with numpy (not with the course's code).
# --------------------------------------------------------------------------
#: What an explorer (``.mhsa-w``) shows: its controls' values and, for every panel of its
#: picture, each cell's [fill, number or null, aria-label, tabindex] in drawing order
#: (row after row); for the query's view, each line's [weight, dashes, aria-label].
READ = """(w) => {
    const pressed = (n) => { const b = w.querySelector(`.mhsa-${n} button[aria-pressed=true]`);
        return b ? b.textContent : null; };
    const svg = w.querySelector('.mhsa-box svg');
    return {
        example: w.querySelector('.mhsa-example select').value,
        heads: Number(pressed('heads')), mask: pressed('mask'), view: pressed('view'),
        length: Number(w.querySelector('.mhsa-length output').textContent),
        step: Number(w.querySelector('.mhsa-step output').textContent),
        query: Number(w.querySelector('.mhsa-query select').value),
        size: [svg.width.baseVal.value, svg.height.baseVal.value],
        panels: [...svg.querySelectorAll(':scope > g.panel')].map((g) =>
            [...g.querySelectorAll(':scope > g.cell')].map((c) => {
                const t = c.querySelector('text');
                return [c.querySelector('rect').getAttribute('fill'), t ? t.textContent : null,
                        c.getAttribute('aria-label'), c.getAttribute('tabindex')]; })),
        links: [...svg.querySelectorAll('g.link')].map((g) => { const l = g.querySelector('line');
            return [l.getAttribute('data-weight'), l.getAttribute('stroke-dasharray'),
                    g.getAttribute('aria-label')]; }),
    };
}"""

_VALUE = re.compile(r" = (\u2212?\d+\.\d+)(?:\. |$)")


def number(text: str) -> float:
    """A number as the pictures write it (a true minus)."""
    return float(text.replace("\u2212", "-"))


def layer(example, heads: int, mask: str, length: int, softmax=None) -> dict:
    """Every matrix the explorer draws for one data state, computed here with numpy.

    ``softmax`` (of the masked scores, shape (h, T, T)) stands in for the right one, as a
    learner's failing function drawn anyway does.
    """
    X = np.asarray(example.X, dtype=float)  # (T, d_model)
    T, d = X.shape
    dk = d // heads
    Q, K, V = (X @ np.asarray(W, dtype=float) for W in (example.W_q, example.W_k, example.W_v))

    def split(M):  # (T, d) -> (h, T, d_k): head i is columns i*d_k .. (i+1)*d_k
        return M.reshape(T, heads, dk).transpose(1, 0, 2)

    M = np.zeros((T, T))
    if mask == "causal":
        M[np.triu_indices(T, 1)] = -np.inf
    elif mask == "padding":
        M[:, length:] = -np.inf
    Z = split(Q) @ split(K).transpose(0, 2, 1) / np.sqrt(dk)  # (h, T, T)
    ZM = Z + M
    if softmax is None:
        E = np.exp(ZM - ZM.max(axis=-1, keepdims=True))
        A = E / E.sum(axis=-1, keepdims=True)
    else:
        A = softmax(ZM)
    heads_out = A @ split(V)  # (h, T, d_k)
    concat = heads_out.transpose(1, 0, 2).reshape(T, d)
    Wq, Wk, Wv, Wo = (
        np.asarray(W, dtype=float) for W in (example.W_q, example.W_k, example.W_v, example.W_o)
    )
    return dict(X=X, W=[Wq, Wk, Wv, Wo], Q=Q, K=K, V=V, Z=Z, M=M, ZM=ZM, A=A,
                heads=heads_out, concat=concat, out=concat @ Wo)  # fmt: skip


def expected_panels(a: dict, step: int, query: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(values, blocked)`` of each panel of step ``step``, in drawing order."""
    none = np.zeros_like
    if step == 1:
        return [(a["X"], none(a["X"], bool))]
    if step == 2:
        return [(W, none(W, bool)) for W in a["W"]]
    if step in (3, 4):  # step 4: the heads side by side are Q, K, V again
        return [(a[n], none(a[n], bool)) for n in "QKV"]
    if step == 5:
        return [(Z, none(Z, bool)) for Z in a["Z"]]
    if step == 6:
        return [(M, np.isneginf(M)) for M in (a["M"], *a["ZM"])]
    if step == 7:
        return [(A, np.isneginf(a["M"])) for A in a["A"]]
    if step == 8:
        return [(H, none(H, bool)) for H in a["heads"]]
    both = np.stack([a["X"][query], a["out"][query]])
    return [(a["concat"], none(a["concat"], bool)), (a["out"], none(a["out"], bool)),
            (both, none(both, bool))]  # fmt: skip


def drawn_wrong(shown: dict, a: dict, numbers: bool = False) -> list[str]:
    """What ``shown`` (:data:`READ`) draws otherwise than the arrays ``a`` (:func:`layer`):
    a cell blocked and not hatched or the reverse, a number on a blocked cell, a value in a
    cell's words or on the cell that is not the array's (to the digits written), a cell out
    of Tab's reach; with ``numbers``, a cell of a coloured panel with no number."""
    wrong = []
    if shown["view"] == "query":
        expected = [(a[n], np.zeros_like(a[n], bool)) for n in "QKV"]
        lines = [(a["A"][i][shown["query"]][j], np.isneginf(a["M"][shown["query"]][j]))
                 for i in range(len(a["A"])) for j in range(a["M"].shape[0])]  # fmt: skip
        if len(lines) != len(shown["links"]):
            wrong.append(f"{len(shown['links'])} lines for {len(lines)} keys")
        for k, ((w, blocked), (weight, dashes, _)) in enumerate(zip(lines, shown["links"])):  # noqa: B905
            if blocked != (dashes is not None and weight == "") or (
                not blocked and abs(float(weight) - w) > 5e-5 + 1e-9
            ):
                wrong.append(f"line {k}: {weight!r} {dashes!r} for {w} (blocked {blocked})")
    else:
        expected = expected_panels(a, shown["step"], shown["query"])
    if len(expected) != len(shown["panels"]):
        return [*wrong, f"{len(shown['panels'])} panels for {len(expected)}"]
    for p, ((values, blocked), cells) in enumerate(zip(expected, shown["panels"], strict=True)):
        if values.size != len(cells):
            wrong.append(f"panel {p}: {len(cells)} cells for {values.shape}")
            continue
        neutral = p == 0 and shown["view"] != "query" and shown["step"] == 6  # the mask M
        for (r, c), (fill, text, label, tab) in zip(np.ndindex(values.shape), cells, strict=True):
            v, where = values[r, c], f"panel {p} cell ({r}, {c}) {label!r}"
            hatched = fill.endswith("-blocked)")
            if tab != "0":
                wrong.append(f"{where}: Tab does not reach it")
            if hatched != bool(blocked[r, c]):
                wrong.append(f"{where}: hatched {hatched} for {v}")
            if hatched:
                if text is not None:
                    wrong.append(f"{where}: a number on a blocked cell")
                continue
            said = _VALUE.search(label or "")
            if said is None or abs(number(said.group(1)) - v) > 5e-5 + 1e-9:
                wrong.append(f"{where}: says {said and said.group(1)} for {v:.6f}")
            if text is not None:
                digits = len(text.split(".")[1]) if "." in text else 0
                if abs(number(text) - v) > 0.5 * 10**-digits + 1e-9:
                    wrong.append(f"{where}: shows {text} for {v:.6f}")
            elif numbers and not neutral and shown["view"] != "query":
                wrong.append(f"{where}: no number")
    return wrong
