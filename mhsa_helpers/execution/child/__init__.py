"""The child program: everything the child process runs, and nothing else.

This package imports nothing outside itself (numpy and the standard library
only), so that it runs in a sandbox that holds neither the course's package,
nor its reference implementation, nor its checks. It is started as the
folder above it (``python mhsa_helpers/execution``, whose ``__main__.py``
calls :func:`child.main.main`), where it is the top-level package ``child``;
the course imports the same modules as ``mhsa_helpers.execution.child``.

* :mod:`.contract`: what one call of a learner's function returns (also used
  in the notebook, by the checks);
* :mod:`.wire`: the frames both sides write, safe unpickling, the protocol's words;
* :mod:`.main`: the entry point and main loop (the protocol, request by request);
* :mod:`.supervisor`: starting, limiting, watching and killing a notebook's process;
* :mod:`.notebook`: the body of a notebook's process (its cells, then its calls);
* :mod:`.seccomp`: the system-call filter a notebook's process runs under.
"""
