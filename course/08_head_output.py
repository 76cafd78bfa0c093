# %% [markdown]
# # Step 8 — The output of a head
#
# Each query now has weights over all keys. Its output is the **weighted
# average of the values** with those weights: what it takes in from the tokens
# it attends to.

# %% setup
import matplotlib.pyplot as plt

from mhsa_helpers.plots import check_shape, heads_figure, heatmap

song = mh.get_example("song")
students = mh.get_example("students")


# %% [markdown]
# $$\operatorname{head}(Q, K, V) = A\,V, \qquad
# A = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)$$
#
# $A$ is $(\dots, T_q, T_k)$ and $V$ is $(\dots, T_k, d_v)$, so the output is
# $(\dots, T_q, d_v)$. Put steps 5–7 together (write them again, paste your own,
# or use the course's versions of earlier steps, `mh.attention_scores` and
# `mh.softmax`; not `mh.attention_head`, the checks notice), add the mask to the
# **scores** if one is given, and return both the output and the weights.
#
# ### Exercise 8.1 — `attention_head`


# %% answer="attention_head"
def attention_head(Q, K, V, mask=None):
    """Scaled dot-product attention of one head.

    Parameters
    ----------
    Q : ndarray of shape (..., T_q, d_k)
    K : ndarray of shape (..., T_k, d_k)
    V : ndarray of shape (..., T_k, d_v)
    mask : ndarray broadcastable to (..., T_q, T_k), optional

    Returns
    -------
    output : ndarray of shape (..., T_q, d_v)
    weights : ndarray of shape (..., T_q, T_k)
    """
    ### BEGIN SOLUTION
    Z = mh.attention_scores(Q, K)  # (..., T_q, T_k), step 5
    if mask is not None:
        Z = Z + mask  # on the scores, before the softmax
    A = mh.softmax(Z)  # (..., T_q, T_k), step 7
    return A @ V, A  # (..., T_q, d_v)
    ### END SOLUTION


# %% tests="attention_head"

# %% [markdown]
# ## The students after they met: $T = R' \cdot Q$
#
# With $Q = K = V$, each student's new profile is a mix of everybody's
# interests, weighted by how much they have in common.

# %%
T_students, R_prime = mh.attention_head(students.X, students.X, students.X)
fig, axes = plt.subplots(1, 2, figsize=(14, 3.8))
heatmap(students.X, students.tokens, students.features, "before: Q", ax=axes[0])
heatmap(T_students, students.tokens, students.features, "after: T = R'·Q", ax=axes[1])
fig.tight_layout()
m = students.tokens.index("Monica")
top = np.argsort(R_prime[m])[::-1][:3]
print(
    "Monica attends most to:", [(students.tokens[j], round(float(R_prime[m, j]), 3)) for j in top]
)

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
