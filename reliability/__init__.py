"""Long reliability runs against a real stack (``python -m reliability chaos|redis|load``).

Each run starts its own Redis (AOF on), API (uvicorn) and workers as processes on loopback, does
damage, checks the promises on every job and on the blob store, and prints its figures. The
figures measured here are in ``RESULTS.md``; the fast versions of the same checks are in
``tests/reliability``.
"""
