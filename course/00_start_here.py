# %% [markdown]
# # Multi-head self-attention, step by step
#
# Welcome. In these notebooks you build the attention layer of a Transformer
# yourself, in numpy, one step at a time:

# %% [markdown] generated="exercise_table"

# %% [markdown]
# Each notebook stands on its own: earlier steps come from the course's
# reference implementation (`mhsa_helpers`), so if you are stuck on step 4 you
# can still do step 7.
#
# ## How to check your work
#
# Each exercise is a cell with a function whose body is
# `raise NotImplementedError()`. Replace that line with your code and run the
# **test cell** below it. You get a line starting with ✓ when your function
# passes, a line starting with ✗ while it is not written yet, or an error whose
# last line says in one sentence what is most likely wrong (for example
# *"divided by √T (the sequence length) … divide by √d_k"*). Instructors may
# run more (hidden) tests of the same functions on other shapes and values.
#
# Every check holds your function to the same contract: it leaves its inputs
# as they were (no `Z -= ...` on the array it was given), gives the same
# answer when called twice with the same inputs, and computes without a numpy
# warning (a warning counts as an error: avoid the operation that warns
# rather than cleaning up its NaN). Where an exercise says to raise a
# `ValueError`, it must come from a check of your own (`raise ValueError(...)`),
# not from numpy failing later on.

# %% setup
from mhsa_helpers.plots import heatmaps

song = mh.get_example("song")

# %% [markdown]
# ## The worked examples
#
# Every notebook uses the same small examples, so that you can follow each
# number through the layer. They live in `mhsa_helpers` (nothing below is
# typed in: it is printed from the data).

# %%
for name in mh.EXAMPLES:
    e = mh.get_example(name)
    print(f"{e.title!r}: {e.T} tokens, d_model = {e.d_model}, heads possible: {e.head_choices}")
    print(f"    tokens: {e.tokens}")
    print(f"    {e.source}\n")

# %%
students = mh.get_example("students")
heatmaps([
    (song.X, song.tokens, song.features, '"List new ideas for a song": X'),
    (students.X, students.tokens, students.features, "Six students: X"),
]);

# %% [markdown]
# ## Your progress
#
# Run the cell below at any time: it runs the visible check of every exercise
# on the answers saved in your notebooks (save them first) and lists which pass.
# It is this notebook's only test (worth no points): until every exercise
# passes, its last line says how many are left, and the toolbar's Validate
# button on this notebook lists it as failing; Validate on any other notebook
# runs that notebook's own tests.

# %% progress
from mhsa_helpers.progress import show_progress

show_progress()
