"""Dynamic kernels: topology-changing rounds built from cavities (see DESIGN.md, "Dynamic
kernels"). :mod:`.cavity` resolves conflicting cavities into an independent set;
:mod:`.collapse` runs edge-collapse rounds on top of it; :mod:`.quadrics` holds the
Garland-Heckbert error quadrics that decimation ranks collapses by."""
