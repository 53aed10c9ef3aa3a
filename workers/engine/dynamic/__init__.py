"""Dynamic kernels: topology-changing rounds built from disjoint cavities (see DESIGN.md, "Dynamic
kernels"). :mod:`.cavity` resolves conflicting collapse cavities into an independent set and
:mod:`.collapse` runs edge-collapse rounds on top of it (:mod:`.quadrics`: the Garland-Heckbert
error quadrics decimation ranks collapses by); :mod:`.flip`, :mod:`.split` and :mod:`.relax` are
the edge flip, edge split and tangential relaxation rounds of remeshing (their claims in
:mod:`._edges`)."""
