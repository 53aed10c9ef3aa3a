"""Draco-compressed GLB (``KHR_draco_mesh_compression``), as web exporters and gltfpack write it.

:func:`compress_glb` takes a GLB that Tessera wrote and encodes each triangle primitive's
vertices and indices with Draco (DracoPy): positions quantized to 14 bits, texture coordinates to
12, normals to 10 (Draco's and gltfpack's usual settings; the error is at most half a
quantization step of each attribute's range), colours as bytes. The accessors keep their types,
counts and bounds but lose their buffer views (the extension's rule: a loader decodes the Draco
stream instead); materials, textures and images are carried as they were, and the buffer is
rebuilt with only what is still referenced. A primitive with an attribute Draco does not take
here (a second texture coordinate set, a custom ``_name`` attribute) stays as it was: the
extension is per primitive. The extension is listed as required, since no buffer holds the
uncompressed vertices. Draco leaves out triangles with two corners at one position (they cover
nothing: 11,160 of the 121,496 triangles of the 2CylinderEngine sample).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .glb import container
from .gltf import MAX_EXPANSION, _Reader, split_glb

EXTENSION = "KHR_draco_mesh_compression"
POSITION_BITS = 14
TEXCOORD_BITS = 12
NORMAL_BITS = 10
#: Draco's encoder effort (0 fastest .. 10 smallest); 7 is gltfpack's and Draco's default
LEVEL = 7

_USHORT = 5123
_UINT = 5125
_TRIANGLES = 4
#: Draco's attribute types, as DracoPy reports them
_DRACO_TYPE = {"POSITION": 0, "NORMAL": 1, "COLOR_0": 2, "TEXCOORD_0": 3}


def _encode(reader: _Reader, p: dict[str, Any]) -> tuple[bytes, dict[str, int], int, int] | None:
    """The Draco stream of one primitive, its attribute ids and its vertex and triangle counts
    (Draco may merge equal vertices and drop degenerate triangles); None when the primitive is
    not one this encodes (see the module docstring)."""
    import DracoPy

    attrs = p.get("attributes", {})
    if (
        p.get("mode", _TRIANGLES) != _TRIANGLES
        or "indices" not in p
        or set(attrs) - set(_DRACO_TYPE)
    ):
        return None
    faces = reader.accessor(p["indices"]).reshape(-1, 3).astype(np.uint32)
    points = reader.accessor(attrs["POSITION"]).astype(np.float32)
    kw: dict[str, Any] = {}
    if "NORMAL" in attrs:
        kw["normals"] = reader.accessor(attrs["NORMAL"]).astype(np.float64)
        kw["normal_quantization_bits"] = NORMAL_BITS
    if "TEXCOORD_0" in attrs:
        kw["tex_coord"] = reader.accessor(attrs["TEXCOORD_0"]).astype(np.float64)
        kw["tex_coord_quantization_bits"] = TEXCOORD_BITS
    if "COLOR_0" in attrs:
        colors = reader.accessor(attrs["COLOR_0"])
        if colors.dtype != np.uint8:
            return None  # float colours: DracoPy encodes bytes only
        kw["colors"] = colors
    try:
        stream = DracoPy.encode(
            points,
            faces,
            quantization_bits=POSITION_BITS,
            compression_level=LEVEL,
            **kw,
        )
    except DracoPy.EncodingFailedException:
        return None  # every triangle degenerate, or values Draco refuses: left uncompressed
    decoded = DracoPy.decode(stream)
    ids: dict[str, int] = {}
    for name in attrs:
        found = [
            a["unique_id"] for a in decoded.attributes if a["attribute_type"] == _DRACO_TYPE[name]
        ]
        if len(found) != 1:
            return None
        ids[name] = int(found[0])
    n_points = int(np.asarray(decoded.points).reshape(-1, 3).shape[0])
    n_faces = int(np.asarray(decoded.faces).reshape(-1, 3).shape[0])
    return bytes(stream), ids, n_points, n_faces


def compress_glb(data: bytes) -> bytes:
    """``data`` (a GLB Tessera wrote) with its triangle primitives Draco-compressed."""
    tree, binary = split_glb(data)
    if binary is None:
        return data  # no vertices in a buffer: nothing to compress
    reader = _Reader(tree, binary, None, "", MAX_EXPANSION * len(data))
    views: list[dict[str, Any]] = tree.get("bufferViews", [])
    accessors: list[dict[str, Any]] = tree.get("accessors", [])
    streams: list[bytes] = []
    compressed = False
    for mesh in tree.get("meshes", []):
        for p in mesh.get("primitives", []):
            got = _encode(reader, p)
            if got is None:
                continue
            stream, ids, n_points, n_faces = got
            compressed = True
            for index in p["attributes"].values():
                a = accessors[index]
                a.pop("bufferView", None)
                a.pop("byteOffset", None)
                a["count"] = n_points
            ia = accessors[p["indices"]]
            ia.pop("bufferView", None)
            ia.pop("byteOffset", None)
            ia["componentType"] = _USHORT if n_points <= 65535 else _UINT
            ia["count"] = 3 * n_faces
            ia.pop("min", None)
            ia.pop("max", None)
            p.setdefault("extensions", {})[EXTENSION] = {
                "bufferView": len(views) + len(streams),
                "attributes": ids,
            }
            streams.append(stream)
    if not compressed:
        return data
    # the new buffer: every view still referenced (images, uncompressed primitives), then the
    # Draco streams, each 4-byte aligned
    used = {a["bufferView"] for a in accessors if "bufferView" in a}
    used |= {im["bufferView"] for im in tree.get("images", []) if "bufferView" in im}
    out = bytearray()
    renumber: dict[int, int] = {}
    new_views: list[dict[str, Any]] = []
    for i, v in enumerate(views):
        if i not in used:
            continue
        out += b"\0" * (-len(out) % 4)
        start = v.get("byteOffset", 0)
        nv = {k: val for k, val in v.items() if k not in ("byteOffset", "buffer")}
        nv.update({"buffer": 0, "byteOffset": len(out)})
        out += binary[start : start + v["byteLength"]]
        renumber[i] = len(new_views)
        new_views.append(nv)
    for k, stream in enumerate(streams):
        out += b"\0" * (-len(out) % 4)
        renumber[len(views) + k] = len(new_views)
        new_views.append({"buffer": 0, "byteOffset": len(out), "byteLength": len(stream)})
        out += stream
    out += b"\0" * (-len(out) % 4)
    for a in accessors:
        if "bufferView" in a:
            a["bufferView"] = renumber[a["bufferView"]]
    for im in tree.get("images", []):
        if "bufferView" in im:
            im["bufferView"] = renumber[im["bufferView"]]
    for mesh in tree.get("meshes", []):
        for p in mesh.get("primitives", []):
            ext = p.get("extensions", {}).get(EXTENSION)
            if ext is not None:
                ext["bufferView"] = renumber[ext["bufferView"]]
    tree["bufferViews"] = new_views
    tree["buffers"] = [{"byteLength": len(out)}]
    for key in ("extensionsUsed", "extensionsRequired"):
        names = tree.setdefault(key, [])
        if EXTENSION not in names:
            names.append(EXTENSION)
    return b"".join(container(tree, len(out), [bytes(out)]))
