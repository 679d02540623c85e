"""Valid calls, one per public callable: ``BASELINES[qualified name]`` is a zero-argument function
returning the keyword arguments of a small, fast, valid call (parameters left out take their
defaults). One file per area of ``qlib``; each call should take well under a second."""
