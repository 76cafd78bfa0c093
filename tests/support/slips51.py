# ruff: noqa: E501  (learners' answers, kept as they wrote them)
"""Issue 51's slips in ``induction_scores`` (19_induction), as learners write them; the
format of :mod:`tests.support.fresh_mistakes` (merged into its ``FRESH``), and right
answers written unusually (merged into :mod:`tests.support.fresh_correct`'s ``CORRECT``)."""

SLIPS51 = {
    # Reads key t - L for the induction score: the earlier occurrence of the current token.
    "induction_scores_key_t_minus_L": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    h, T = A.shape[-3], A.shape[-1]
    t = np.arange(1, period + 1)
    previous = A[..., t, t - 1].reshape(-1, h, period).mean(axis=(0, 2))
    t = np.arange(period, T)
    induction = A[..., t, t - period].reshape(-1, h, T - period).mean(axis=(0, 2))
    return previous, induction
""",
        "reads key t − L, the earlier occurrence",
    ),
    # Off by one the other way: key t - L + 2.
    "induction_scores_key_t_minus_L_plus_2": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    h, T = A.shape[-3], A.shape[-1]
    L = period
    prev = np.mean([A[..., t, t - 1] for t in range(1, L + 1)], axis=0)
    ind = np.mean([A[..., t, t - L + 2] for t in range(L, T)], axis=0)
    return prev.reshape(-1, h).mean(0), ind.reshape(-1, h).mean(0)
""",
        "reads key t − L + 2, one past the token to copy",
    ),
    # np.diagonal at offset -(L - 1) for the induction stripe: starts at query L - 1 (key 0).
    "induction_scores_diagonal_counts_query_L_minus_1": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    A = np.asarray(A)
    h = A.shape[-3]
    prev = np.diagonal(A, offset=-1, axis1=-2, axis2=-1)[..., :period]
    ind = np.diagonal(A, offset=-(period - 1), axis1=-2, axis2=-1)
    return prev.reshape(-1, h, prev.shape[-1]).mean(axis=(0, 2)), ind.reshape(-1, h, ind.shape[-1]).mean(axis=(0, 2))
""",
        "also counts query L − 1, the first period's last token",
    ),
    # Averages the induction stripe over every query of the sequence, 0 … T - 1.
    "induction_scores_induction_over_every_query": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    h, T = A.shape[-3], A.shape[-1]
    t = np.arange(1, period + 1)
    previous = A[..., t, t - 1].reshape(-1, h, period).mean(axis=(0, 2))
    t = np.arange(T)
    induction = A[..., t, t - period + 1].reshape(-1, h, T).mean(axis=(0, 2))
    return previous, induction
""",
        "averages over every query t = 0 … T − 1",
    ),
    # The previous-token stripe over all queries: np.diagonal(A, -1) whole.
    "induction_scores_previous_over_all_queries": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    A = np.asarray(A)
    h, T = A.shape[-3], A.shape[-1]
    prev = np.diagonal(A, -1, -2, -1)
    t = np.arange(period, T)
    ind = A[..., t, t - period + 1]
    return prev.reshape(-1, h, T - 1).mean(axis=(0, 2)), ind.reshape(-1, h, T - period).mean(axis=(0, 2))
""",
        "averages over every query t = 1 … T − 1",
    ),
    # range(period + 1) for the previous-token queries: query 0 reads key -1.
    "induction_scores_previous_counts_query_0": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    h, T = A.shape[-3], A.shape[-1]
    t = np.arange(period + 1)
    previous = A[..., t, t - 1].reshape(-1, h, period + 1).mean(axis=(0, 2))
    t = np.arange(period, T)
    induction = A[..., t, t - period + 1].reshape(-1, h, T - period).mean(axis=(0, 2))
    return previous, induction
""",
        "counts query 0, which has no previous token",
    ),
    # range(period) for the previous-token queries: query 0 in, query L out.
    "induction_scores_previous_over_range_L": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    h, T = A.shape[-3], A.shape[-1]
    prev = sum(A[..., t, t - 1] for t in range(period)) / period
    ind = sum(A[..., t, t - period + 1] for t in range(period, T)) / (T - period)
    return prev.reshape(-1, h).mean(axis=0), ind.reshape(-1, h).mean(axis=0)
""",
        "runs over t = 0 … L − 1 (range(L))",
    ),
    # Averages over the head axis (and the sequences) instead of the queries.
    "induction_scores_averaged_over_heads": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    T = A.shape[-1]
    t = np.arange(1, period + 1)
    prev = A[..., t, t - 1]
    t2 = np.arange(period, T)
    ind = A[..., t2, t2 - period + 1]
    lead = tuple(range(prev.ndim - 1))
    return prev.mean(axis=lead), ind.mean(axis=lead)
""",
        "averaged over the heads instead of the queries",
    ),
    # Written for one sequence: the mean over the queries only, the leading axes kept.
    "induction_scores_leading_axes_kept": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    T = A.shape[-1]
    t = np.arange(1, period + 1)
    previous = A[..., t, t - 1].mean(axis=-1)
    t = np.arange(period, T)
    induction = A[..., t, t - period + 1].mean(axis=-1)
    return previous, induction
""",
        "keep the leading (sequence) axes",
    ),
    # Indexes the weights as A[key, query].
    "induction_scores_rows_for_keys": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    h, T = A.shape[-3], A.shape[-1]
    t = np.arange(1, period + 1)
    previous = A[..., t - 1, t].reshape(-1, h, period).mean(axis=(0, 2))
    t = np.arange(period, T)
    induction = A[..., t - period + 1, t].reshape(-1, h, T - period).mean(axis=(0, 2))
    return previous, induction
""",
        "rows are queries and columns keys",
    ),
}

SLIPS51_CORRECT = {
    # Loops over heads and queries, one weight at a time.
    "induction_scores_loops": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    A = np.asarray(A)
    h, T = A.shape[-3], A.shape[-1]
    flat = A.reshape(-1, h, T, T)
    previous, induction = np.zeros(h), np.zeros(h)
    for k in range(h):
        previous[k] = np.mean([flat[:, k, t, t - 1] for t in range(1, period + 1)])
        induction[k] = np.mean([flat[:, k, t, t - period + 1] for t in range(period, T)])
    return previous, induction
""",
    ),
    # The two diagonals, cut to their queries, averaged after moving the head axis first.
    "induction_scores_diagonals": (
        "19_induction",
        "induction_scores",
        """def induction_scores(A, period):
    A = np.asarray(A)
    prev = np.diagonal(A, -1, -2, -1)[..., :period]  # queries 1 … L
    ind = np.diagonal(A, -(period - 1), -2, -1)[..., 1:]  # queries L … T-1
    prev, ind = np.moveaxis(prev, -2, 0), np.moveaxis(ind, -2, 0)
    h = prev.shape[0]
    return prev.reshape(h, -1).mean(1), ind.reshape(h, -1).mean(1)
""",
    ),
}
