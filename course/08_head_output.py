# %% [markdown]
# # Step 8 — The output of a head
#
# Each query now has weights over all keys. Its output is the **weighted
# average of the values** with those weights: what it takes in from the tokens
# it attends to.

# %% setup
from mhsa_helpers.plots import check_shape, heads_figure, heatmaps

song = mh.get_example("song")
students = mh.get_example("students")


# %% [markdown]
# $$\operatorname{head}(Q, K, V) = A\,V, \qquad
# A = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right) \label{head}$$
#
# $A$ is $(\dots, T_q, T_k)$ and $V$ is $(\dots, T_k, d_v)$, so the output is
# $(\dots, T_q, d_v)$. Put steps 5–7 together (write them again, paste your own,
# or use the course's versions of earlier steps, `mh.attention_scores` and
# `mh.softmax`; not `mh.attention_head`, the checks notice), add the mask to the
# **scores** if one is given, and return both the output and the weights. A
# query whose every key is blocked (a padded sequence with no real token) gets
# weights 0 and output 0, as notebook 07's softmax gives an all $-\infty$ row.
#
# ### Exercise 8.1 — `attention_head`


# %% answer="attention_head"
def attention_head(Q, K, V, mask=None):
    ### BEGIN SOLUTION
    Z = mh.attention_scores(Q, K)  # (..., T_q, T_k), step 5
    if mask is not None:
        Z = Z + mask  # on the scores, before the softmax
    A = mh.softmax(Z)  # (..., T_q, T_k), step 7
    return A @ V, A  # (..., T_q, d_v)
    ### END SOLUTION


# %% tests="attention_head"

# %% [markdown]
# ## The students after they met: $Y = A \cdot V$
#
# With $V = X$, each student's new profile is a mix of everybody's interests,
# weighted by how much they have in common. With the article's weights $R'$
# ($Q = K = X$) the mix is nearly an even average of all six; with the sharper
# scores of step 7 ($W_Q = W_K = s\,I$) each student keeps more of their own
# interests and of those they share most with.

# %%
s = mh.examples.STUDENT_SELECTIVE_SCALE
W = s * np.eye(len(students.features))  # (7, 7)
Y_article, R_prime = mh.attention_head(students.X, students.X, students.X)
Y_selective, A_selective = mh.attention_head(students.X @ W, students.X @ W, students.X)
heatmaps(
    [
        (students.X, students.tokens, students.features, "before: V = X"),
        (Y_article, students.tokens, students.features, "after: R'·V (Q = K = X)"),
        (Y_selective, students.tokens, students.features, f"after: A·V (W_Q = W_K = {s:g}·I)"),
    ],
    vmin=0.0,
    vmax=float(students.X.max()),  # one colour scale for the three
)
m = students.tokens.index("Monica")
for label, A in (("R'", R_prime), (f"{s:g}·I", A_selective)):
    top = np.argsort(A[m])[::-1][:3]
    print(f"Monica attends most to ({label}):", [(students.tokens[j], round(float(A[m, j]), 2)) for j in top])

# %% [markdown]
# ## The song: each head's output, causal
#
# Each head outputs $d_k = 2$ numbers per token. The first token can only see
# itself, so its output is exactly its own value vector:

# %%
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
Qh, Kh, Vh = (mh.split_heads(M, 2) for M in (Q, K, V))  # (h, T, d_k) each
out, A = mh.attention_head(Qh, Kh, Vh, mh.causal_mask(song.T))
check_shape(out, (2, song.T, 2))
heads_figure(out, song.tokens, ["c0", "c1"], "head outputs A·V")
print("token 'List', head 1: output", out[0, 0], "= its value", Vh[0, 0])
