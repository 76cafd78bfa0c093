"""The notebooks' figures: heads drawn on one colour scale, with the titles given."""

import matplotlib
import numpy as np

matplotlib.use("agg")

from mhsa_helpers.plots import HEAD_COLOURS, heads_figure


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
