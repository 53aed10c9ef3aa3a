"""Dynamic kernels: topology-changing rounds of disjoint cavities (flip, split, collapse)."""
