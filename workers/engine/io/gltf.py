"""glTF 2.0 (GLB and ``.gltf``): the general reader, for every file :func:`glb.read_simple` does
not take (several meshes, primitives or instances, node transforms, external or embedded buffers,
strided, normalized, quantized or sparse accessors, compressed primitives and buffer views).

The scene is walked from its root nodes (the default scene's, else the first scene's, else every
node no other node names as a child), each node's matrix or translation/rotation/scale composed
with its parent's. Every primitive of every mesh a node places becomes triangles in world space:

- modes ``TRIANGLES`` (4), ``TRIANGLE_STRIP`` (5, every other triangle's order reversed, as the
  specification says) and ``TRIANGLE_FAN`` (6); points and lines (modes 0 to 3) are not surfaces
  and are counted in :attr:`Scene.dropped`;
- a node whose transform has a negative determinant (a mirror) has its triangles' order reversed,
  so they keep facing outwards (glTF 2.0, section 3.7.4);
- ``NORMAL`` moves by the inverse transpose and is re-unitized, ``COLOR_0`` becomes RGBA bytes,
  our writer's ``_name`` attributes come back under ``name``; a vertex attribute is kept when
  every primitive has it (as a mesh of the parts has one row per vertex);
- values that belong to the corners of the triangles are kept per corner
  (:attr:`Scene.corner_attrs`, ``(m, 3, k)``): ``TEXCOORD_0``, ``TEXCOORD_1``... as ``uv``,
  ``uv1``..., and ``NORMAL`` and ``COLOR_0`` as ``normal`` and ``color`` (RGBA in ``[0, 1]``)
  too, so a hard edge or a colour seam survives a weld (``normal`` and ``color`` only where
  the file has one, corners at one position with different values: :func:`has_seams`). A
  primitive without a set the others have gets zeros for it (it has no texture that reads
  them), without normals its flat face normals, without colours white (what glTF multiplies
  by when there are none);
- each primitive's ``material`` becomes the face attribute ``material`` (an index into
  :attr:`Scene.materials`, the document's materials, textures, samplers and images with the
  images' bytes, read from buffer views, ``data:`` URIs or the archive's files); primitives
  without one get glTF's default material, added at the end of the list;
- ``TANGENT`` is kept per corner as ``tangent`` (``(m, 3, 4)``: ``xyz`` moved by the node's
  transform and unitized, ``w`` the handedness, reversed by a mirror); a Draco primitive's
  tangents, skin joints and weights are not carried and are counted in :attr:`Scene.dropped`;
- ``KHR_draco_mesh_compression`` primitives are decoded with DracoPy, ``EXT_meshopt_compression``
  buffer views with meshoptimizer's decoders (with its octahedral, quaternion and exponential
  filters), and ``KHR_mesh_quantization``'s integer attributes are read as the accessor says
  (normalized integers to ``[-1, 1]`` or ``[0, 1]``, others as their values) before the node's
  transform applies.

Animation, skins and morph targets are not applied (the rest pose is read) and are counted in
:attr:`Scene.dropped` so the caller can say so. Every size is checked before memory is taken:
accessors must fit in their views, views in their buffers, and what decompression or zero-filled
(sparse) accessors produce is bounded by :data:`MAX_EXPANSION` times the file's size.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
import struct
from typing import Any, NamedTuple
from urllib.parse import unquote

import numpy as np

from ..errors import FormatError, MeshError
from ..materials import Materials, library_problem
from .glb import _COMPONENTS, _SHAPES, unit_rows

#: decompressed views and zero-filled accessors may hold this many times the file's bytes
MAX_EXPANSION = 64
_MIN_BUDGET = 64 << 20
_MAGIC, _JSON, _BIN = 0x46546C67, 0x4E4F534A, 0x004E4942
_TRIANGLES, _STRIP, _FAN = 4, 5, 6
_NORMALIZED_SCALE = {"i1": 127.0, "u1": 255.0, "<i2": 32767.0, "<u2": 65535.0}
_SIGNED = {"i1", "<i2"}


class Scene(NamedTuple):
    """What :func:`read_scene` read: positions ``V (n, 3) float64``, triangles ``F (m, 3)
    int64``, vertex attributes, what was left out (``{"lines and points": 2, "animations":
    1}``, empty when nothing was), corner attributes (``(m, 3, k)`` float32), face attributes
    (``material``) and the materials (None when the document has none)."""

    V: np.ndarray
    F: np.ndarray
    vertex_attrs: dict[str, np.ndarray]
    dropped: dict[str, int]
    corner_attrs: dict[str, np.ndarray] = {}
    face_attrs: dict[str, np.ndarray] = {}
    materials: Materials | None = None


def _fail(message: str, code: str = "format.parse_error", **detail: Any) -> FormatError:
    return FormatError(message, code=code, **detail)


def _index(x: Any, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        raise _fail(f"glTF {what} is not a whole number", value=repr(x)[:40])
    return x


def _item(tree: dict[str, Any], key: str, i: Any) -> dict[str, Any]:
    items = tree.get(key, [])
    i = _index(i, f"{key} index")
    if not isinstance(items, list) or i >= len(items) or not isinstance(items[i], dict):
        raise _fail(f"glTF names {key} {i}, which the file does not have", key=key, index=i)
    return items[i]


def split_glb(data: bytes) -> tuple[dict[str, Any], bytes | None]:
    """The JSON tree and the BIN chunk (None when absent) of a GLB, or the tree of a
    ``.gltf``'s text."""
    if data[:4] != b"glTF":
        text, binary = data, None
    else:
        if len(data) < 20:
            raise _fail("GLB shorter than its header")
        _, version, length = struct.unpack_from("<3I", data)
        if version != 2:
            raise _fail(
                f"GLB version {version} is not supported: only glTF 2.0 is read",
                code="format.gltf_version",
                version=str(version),
            )
        json_len, json_type = struct.unpack_from("<2I", data, 12)
        if json_type != _JSON or 20 + json_len > len(data):
            raise _fail("GLB's first chunk is not its JSON")
        text = data[20 : 20 + json_len]
        at = 20 + json_len
        binary = None
        if at + 8 <= min(length, len(data)):
            bin_len, bin_type = struct.unpack_from("<2I", data, at)
            if bin_type == _BIN:
                binary = data[at + 8 : at + 8 + bin_len]
    try:
        tree = json.loads(text)
    except (ValueError, RecursionError):
        raise _fail("glTF JSON is not valid") from None
    if not isinstance(tree, dict):
        raise _fail("glTF JSON is not an object")
    return tree, binary


class _Reader:
    """Buffers, views and accessors of one file, each read once."""

    def __init__(
        self,
        tree: dict[str, Any],
        binary: bytes | None,
        resources: dict[str, bytes] | None,
        base: str,
        budget: int,
    ) -> None:
        self.tree, self.binary, self.resources, self.base = tree, binary, resources, base
        self.budget = budget
        self._buffers: dict[int, bytes] = {}
        self._views: dict[int, bytes] = {}

    def _spend(self, nbytes: int, what: str) -> None:
        if nbytes > self.budget:
            raise _fail(
                f"glTF {what} would expand beyond {MAX_EXPANSION} times the file's size",
                code="format.count_exceeds_size",
                bytes=nbytes,
                limit=self.budget,
            )
        self.budget -= nbytes

    def buffer(self, i: int) -> bytes:
        if i in self._buffers:
            return self._buffers[i]
        b = _item(self.tree, "buffers", i)
        uri = b.get("uri")
        if uri is None:
            if self.binary is None:
                raise _fail("glTF buffer has no data (no uri and no GLB binary chunk)", buffer=i)
            data = self.binary
        elif not isinstance(uri, str):
            raise _fail("glTF buffer uri is not text", buffer=i)
        else:
            found = self.uri(uri, f"buffer {i}")
            if found is None:
                raise _fail(
                    f"the glTF's buffer '{uri[:100]}' was not sent with it: send the .gltf with "
                    "its .bin (and textures) in a zip, or the asset as one GLB",
                    code="format.gltf_missing_buffer",
                    uri=uri[:200],
                )
            data = found
        length = _index(b.get("byteLength", len(data)), "buffer byteLength")
        if length > len(data):
            raise _fail(
                "glTF buffer is shorter than its byteLength",
                code="format.count_exceeds_size",
                buffer=i,
                declared=length,
                holds=len(data),
            )
        self._buffers[i] = data
        return data

    def uri(self, uri: str, what: str) -> bytes | None:
        """The bytes a URI names: a ``data:`` URI's, or the archive's file at that path
        relative to the ``.gltf`` (None when it was not sent)."""
        if uri.startswith("data:"):
            head, _, payload = uri.partition(",")
            if not head.endswith(";base64"):
                raise _fail(f"glTF data uri of {what} is not base64")
            try:
                return base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError):
                raise _fail(f"glTF data uri of {what} is not valid base64") from None
        path = posixpath.normpath(posixpath.join(posixpath.dirname(self.base), unquote(uri)))
        if self.resources is None or path not in self.resources:
            return None
        return self.resources[path]

    def view(self, i: int) -> bytes:
        if i in self._views:
            return self._views[i]
        v = _item(self.tree, "bufferViews", i)
        meshopt = (v.get("extensions") or {}).get("EXT_meshopt_compression")
        if isinstance(meshopt, dict):
            data = self._meshopt_view(meshopt)
        else:
            buf = self.buffer(_index(v.get("buffer"), "bufferView buffer"))
            start = _index(v.get("byteOffset", 0), "bufferView byteOffset")
            length = _index(v.get("byteLength"), "bufferView byteLength")
            if start + length > len(buf):
                raise _fail(
                    "glTF buffer view runs past its buffer",
                    code="format.count_exceeds_size",
                    view=i,
                )
            data = buf[start : start + length]
        self._views[i] = data
        return data

    def _meshopt_view(self, ext: dict[str, Any]) -> bytes:
        import meshoptimizer as mo

        buf = self.buffer(_index(ext.get("buffer"), "meshopt buffer"))
        start = _index(ext.get("byteOffset", 0), "meshopt byteOffset")
        length = _index(ext.get("byteLength"), "meshopt byteLength")
        stride = _index(ext.get("byteStride"), "meshopt byteStride")
        count = _index(ext.get("count"), "meshopt count")
        mode, filt = ext.get("mode"), ext.get("filter", "NONE")
        if start + length > len(buf) or stride == 0:
            raise _fail("glTF meshopt view runs past its buffer", code="format.count_exceeds_size")
        self._spend(count * stride, "meshopt buffer view")
        source = np.frombuffer(buf, dtype=np.uint8, count=length, offset=start)
        try:
            if mode == "ATTRIBUTES":
                out = mo.decode_vertex_buffer(count, stride, source)
                out = np.ascontiguousarray(out).view(np.uint8).reshape(-1)
                if filt != "NONE":
                    decode = {
                        "OCTAHEDRAL": mo.decode_filter_oct,
                        "QUATERNION": mo.decode_filter_quat,
                        "EXPONENTIAL": mo.decode_filter_exp,
                    }.get(filt)
                    if decode is None:
                        raise _fail(f"unknown meshopt filter {str(filt)[:40]}")
                    out = np.ascontiguousarray(decode(out, count, stride)).view(np.uint8)
            elif mode in ("TRIANGLES", "INDICES"):
                decode_idx = (
                    mo.decode_index_buffer if mode == "TRIANGLES" else (mo.decode_index_sequence)
                )
                out = np.ascontiguousarray(decode_idx(count, stride, source))
                out = out.astype({2: "<u2", 4: "<u4"}[stride], copy=False).view(np.uint8)
            else:
                raise _fail(f"unknown meshopt mode {str(mode)[:40]}")
        except FormatError:
            raise
        except Exception:
            raise _fail(
                "a meshopt-compressed buffer view could not be decoded",
                code="format.gltf_meshopt",
            ) from None
        data = out.reshape(-1).tobytes()
        if len(data) != count * stride:
            raise _fail(
                "a meshopt buffer view decoded to the wrong size", code="format.gltf_meshopt"
            )
        return data

    def accessor(self, i: int, as_float: bool = False) -> np.ndarray:
        """The accessor's values, ``(count,) + element shape``, in native order: the component
        type's own values, or with ``as_float`` float64 with normalized integers scaled as the
        specification says."""
        a = _item(self.tree, "accessors", i)
        component, kind = a.get("componentType"), a.get("type")
        dt = _COMPONENTS.get(component) if isinstance(component, int) else None
        shape = _SHAPES.get(kind) if isinstance(kind, str) else None
        if dt is None or shape is None:
            raise _fail("glTF accessor of unknown type", accessor=i)
        dtype = np.dtype(dt)
        width = int(np.prod(shape, dtype=np.int64))
        row = dtype.itemsize * width
        count = _index(a.get("count"), "accessor count")
        if "bufferView" in a:
            view_index = _index(a["bufferView"], "accessor bufferView")
            view = self.view(view_index)
            stride = _index(
                _item(self.tree, "bufferViews", view_index).get("byteStride", row) or row,
                "bufferView byteStride",
            )
            start = _index(a.get("byteOffset", 0), "accessor byteOffset")
            if stride < row or (count and start + (count - 1) * stride + row > len(view)):
                raise _fail(
                    "glTF accessor declares more data than its buffer view holds",
                    code="format.count_exceeds_size",
                    accessor=i,
                )
            if count == 0:
                values = np.zeros((0, width), dtype=dtype)
            else:
                raw = np.ndarray((count, row), np.uint8, view, start, (stride, 1))
                values = np.ascontiguousarray(raw).view(dtype).reshape(count, width)
        else:
            self._spend(count * row, "accessor without a buffer view")
            values = np.zeros((count, width), dtype=dtype)
        sparse = a.get("sparse")
        if isinstance(sparse, dict):
            values = self._sparse(values, sparse, dtype, width, count)
        values = values.astype(dtype.newbyteorder("="), copy=False)
        if as_float:
            scale = _NORMALIZED_SCALE.get(dt)
            f = values.astype(np.float64)
            if a.get("normalized") and scale is not None:
                f = f / scale
                if dt in _SIGNED:
                    f = np.maximum(f, -1.0)
            values = f
        return values.reshape((count, *shape))

    def _sparse(
        self, values: np.ndarray, sparse: dict[str, Any], dtype: np.dtype, width: int, count: int
    ) -> np.ndarray:
        n = _index(sparse.get("count"), "sparse count")
        idx_spec, val_spec = sparse.get("indices"), sparse.get("values")
        if not isinstance(idx_spec, dict) or not isinstance(val_spec, dict):
            raise _fail("glTF sparse accessor without indices or values")
        idt = np.dtype(_COMPONENTS.get(idx_spec.get("componentType"), "") or "<u4")
        if idt.kind != "u":
            raise _fail("glTF sparse indices are not unsigned integers")
        iv = self.view(_index(idx_spec.get("bufferView"), "sparse indices bufferView"))
        vv = self.view(_index(val_spec.get("bufferView"), "sparse values bufferView"))
        io_ = _index(idx_spec.get("byteOffset", 0), "sparse indices byteOffset")
        vo = _index(val_spec.get("byteOffset", 0), "sparse values byteOffset")
        if io_ + n * idt.itemsize > len(iv) or vo + n * dtype.itemsize * width > len(vv):
            raise _fail(
                "glTF sparse accessor runs past its views", code="format.count_exceeds_size"
            )
        at = np.frombuffer(iv, dtype=idt, count=n, offset=io_).astype(np.int64)
        if n and int(at.max()) >= count:
            raise _fail("glTF sparse index past the accessor's count")
        new = np.frombuffer(vv, dtype=dtype, count=n * width, offset=vo).reshape(n, width)
        values = np.array(values)  # writable
        values[at] = new
        return values


def _node_matrix(node: dict[str, Any]) -> np.ndarray:
    """A node's local transform (4 x 4, column vectors)."""
    try:
        if "matrix" in node:
            m = np.array(node["matrix"], dtype=np.float64)
            if m.shape != (16,):
                raise ValueError
            return m.reshape(4, 4).T  # stored column by column
        t = np.array(node.get("translation", [0, 0, 0]), dtype=np.float64)
        q = np.array(node.get("rotation", [0, 0, 0, 1]), dtype=np.float64)
        s = np.array(node.get("scale", [1, 1, 1]), dtype=np.float64)
        if t.shape != (3,) or q.shape != (4,) or s.shape != (3,):
            raise ValueError
    except (ValueError, TypeError):
        raise _fail("glTF node transform is not numbers of the right count") from None
    x, y, z, w = q / (np.linalg.norm(q) or 1.0)
    r = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
    m = np.eye(4)
    m[:3, :3] = r * s[None, :]
    m[:3, 3] = t
    return m


def _placements(tree: dict[str, Any]) -> list[tuple[int, np.ndarray]]:
    """``(mesh index, world matrix)`` of every mesh instance, in depth-first order from the
    scene's roots; a node reached twice (a cycle) is an error."""
    nodes = tree.get("nodes", [])
    if not isinstance(nodes, list):
        raise _fail("glTF nodes is not a list")
    scenes = tree.get("scenes", [])
    if isinstance(scenes, list) and scenes:
        scene = _item(tree, "scenes", tree.get("scene", 0))
        roots = scene.get("nodes", [])
    else:
        children = {c for n in nodes if isinstance(n, dict) for c in n.get("children", []) or []}
        roots = [i for i in range(len(nodes)) if i not in children]
    if not isinstance(roots, list):
        raise _fail("glTF scene nodes is not a list")
    out: list[tuple[int, np.ndarray]] = []
    seen: set[int] = set()
    stack = [(_index(r, "scene node"), np.eye(4)) for r in reversed(roots)]
    while stack:
        i, parent = stack.pop()
        if i in seen:
            raise _fail("glTF node hierarchy has a cycle or shares a node", node=i)
        seen.add(i)
        node = _item(tree, "nodes", i)
        world = parent @ _node_matrix(node)
        if "mesh" in node:
            out.append((_index(node["mesh"], "node mesh"), world))
        children = node.get("children", []) or []
        if not isinstance(children, list):
            raise _fail("glTF node children is not a list", node=i)
        stack.extend((_index(c, "node child"), world) for c in reversed(children))
    return out


def _triangles(flat: np.ndarray, mode: int) -> np.ndarray:
    """Triangles ``(m, 3)`` of the index list of a primitive of ``mode``."""
    n = flat.shape[0]
    if mode == _TRIANGLES:
        if n % 3:
            raise _fail("glTF triangle list length is not a multiple of 3", count=n)
        return flat.reshape(-1, 3)
    if n < 3:
        return np.zeros((0, 3), dtype=np.int64)
    k = np.arange(n - 2)
    if mode == _FAN:
        return np.stack([np.full(n - 2, flat[0]), flat[k + 1], flat[k + 2]], axis=1)
    odd = k % 2 == 1  # a strip's odd triangles are (i + 1, i, i + 2)
    a = np.where(odd, flat[k + 1], flat[k])
    b = np.where(odd, flat[k], flat[k + 1])
    return np.stack([a, b, flat[k + 2]], axis=1)


def _draco(
    reader: _Reader, ext: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, dict[str, np.ndarray]]:
    """Positions, triangles, normals (None when absent) and the texture coordinate sets
    (``{"TEXCOORD_0": (n, 2)}``, by the extension's attribute ids) of a Draco primitive."""
    import DracoPy

    data = reader.view(_index(ext.get("bufferView"), "Draco bufferView"))
    try:
        mesh = DracoPy.decode(bytes(data))
    except Exception:
        raise _fail(
            "a Draco-compressed primitive could not be decoded", code="format.gltf_draco"
        ) from None
    V = np.asarray(mesh.points, dtype=np.float64).reshape(-1, 3)
    F = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))), dtype=np.int64).reshape(-1, 3)
    N = getattr(mesh, "normals", None)
    N = np.asarray(N, dtype=np.float64).reshape(-1, 3) if N is not None and len(N) else None
    reader._spend(V.nbytes + F.nbytes, "Draco primitive")
    ids = ext.get("attributes") if isinstance(ext.get("attributes"), dict) else {}
    sets: dict[str, np.ndarray] = {}
    for name, uid in ids.items():
        if not (isinstance(name, str) and name.startswith("TEXCOORD_")):
            continue
        found = mesh.get_attribute_by_unique_id(_index(uid, "Draco attribute id"))
        data = None if found is None else found.get("data")
        if data is None:
            raise _fail(
                f"the Draco primitive has no attribute {uid} for {name[:20]}",
                code="format.gltf_draco",
            )
        sets[name] = np.asarray(data, dtype=np.float64).reshape(V.shape[0], -1)
    return V, F, N if N is not None and N.shape == V.shape else None, sets


def _colors(a: dict[str, Any], reader: _Reader, index: int) -> np.ndarray:
    """COLOR_0 as RGBA bytes."""
    values = reader.accessor(index, as_float=True)
    if values.ndim != 2 or values.shape[1] not in (3, 4):
        raise _fail("glTF COLOR_0 is not RGB or RGBA")
    if np.dtype(_COMPONENTS[a["componentType"]]).kind == "u" and not a.get("normalized"):
        values = values / 255.0
    rgba = np.clip(np.round(np.nan_to_num(values) * 255.0), 0, 255).astype(np.uint8)
    if rgba.shape[1] == 3:
        rgba = np.concatenate([rgba, np.full((rgba.shape[0], 1), 255, np.uint8)], axis=1)
    return rgba


def read_scene(data: bytes, resources: dict[str, bytes] | None = None, base: str = "") -> Scene:
    """Read a GLB or ``.gltf`` (with the files it refers to in ``resources``, keyed by their
    path in an archive, ``base`` being the ``.gltf``'s own path) as one mesh: see the module
    docstring."""
    tree, binary = split_glb(data)
    asset = tree.get("asset")
    if not isinstance(asset, dict) or "version" not in asset:
        raise _fail("glTF has no asset version: not a glTF file")
    version = str(asset["version"])
    if not version.startswith("2"):
        raise _fail(
            f"glTF {version or 'without a version'} is not supported: only glTF 2.0 is read "
            "(convert the file to glTF 2.0 first)",
            code="format.gltf_version",
            version=version[:20],
        )
    required = tree.get("extensionsRequired", []) or []
    known = {
        "KHR_draco_mesh_compression",
        "EXT_meshopt_compression",
        "KHR_mesh_quantization",
        "KHR_texture_transform",
        "KHR_materials_unlit",
        "KHR_texture_basisu",
        "EXT_texture_webp",
    }
    unknown = (
        [str(n)[:60] for n in required if not isinstance(n, str) or n not in known]
        if isinstance(required, list)
        else []
    )
    if unknown:
        raise _fail(
            "the glTF requires extensions that are not read: " + ", ".join(unknown[:5]),
            code="format.gltf_extension",
            extensions=unknown[:20],
        )
    total = len(data) + sum(len(r) for r in (resources or {}).values())
    reader = _Reader(tree, binary, resources, base, max(_MIN_BUDGET, MAX_EXPANSION * total))
    dropped = _dropped_keys(tree)
    parts: list[_Part] = []
    for mesh_index, world in _placements(tree):
        mesh = _item(tree, "meshes", mesh_index)
        primitives = mesh.get("primitives", [])
        if not isinstance(primitives, list):
            raise _fail("glTF mesh primitives is not a list", mesh=mesh_index)
        for p in primitives:
            if not isinstance(p, dict):
                raise _fail("glTF primitive is not an object", mesh=mesh_index)
            part = _primitive(reader, p, world, dropped)
            if part is not None:
                parts.append(part)
    if not parts:
        if dropped.get("lines and points"):
            raise MeshError("mesh has no faces", code="mesh.no_faces")
        raise MeshError("mesh has no vertices", code="mesh.empty")
    offsets = np.cumsum([0] + [p.V.shape[0] for p in parts])
    V = np.concatenate([p.V for p in parts])
    F = np.concatenate([p.F + offsets[k] for k, p in enumerate(parts)])
    common = set.intersection(*(set(p.attrs) for p in parts))
    attrs: dict[str, np.ndarray] = {}
    for name in [n for n in parts[0].attrs if n in common]:
        arrays = [p.attrs[name] for p in parts]
        if len({x.shape[1:] for x in arrays}) == 1:
            attrs[name] = np.concatenate(arrays)
    corners = _corners(parts)
    for name, vertex_name in (("normal", "vertex_normals"), ("color", "vertex_colors")):
        if name in corners and vertex_name in attrs and not has_seams(V, attrs[vertex_name]):
            del corners[name]  # the vertex attribute says it all
    materials = read_materials(reader, dropped)
    face_attrs: dict[str, np.ndarray] = {}
    if materials is not None:
        n_doc = len(materials.names)
        if any(p.material is None for p in parts):  # glTF's default material, named
            materials.names.append("default")
            materials.gltf.setdefault("materials", []).append({"name": "default"})
        for p in parts:
            if p.material is not None and p.material >= n_doc:
                raise _fail(
                    f"glTF primitive names material {p.material}, which the file does not have",
                    key="materials",
                    index=p.material,
                )
        face_attrs["material"] = np.concatenate(
            [
                np.full(p.F.shape[0], n_doc if p.material is None else p.material, np.int32)
                for p in parts
            ]
        )
    return Scene(V, F, attrs, dropped, corners, face_attrs, materials)


def _dropped_keys(tree: dict[str, Any]) -> dict[str, int]:
    """The document's parts the mesh does not carry (animations, skins, cameras), counted."""
    out: dict[str, int] = {}
    for key in ("animations", "skins", "cameras"):
        if isinstance(tree.get(key), list) and tree[key]:
            out[key] = len(tree[key])
    return out


class _Part(NamedTuple):
    """One primitive in world space: its positions, triangles, vertex attributes, corner
    attributes (``(m, 3, k)``) and material index (None: glTF's default)."""

    V: np.ndarray
    F: np.ndarray
    attrs: dict[str, np.ndarray]
    corners: dict[str, np.ndarray]
    material: int | None


def _corners(parts: list[_Part]) -> dict[str, np.ndarray]:
    """The parts' corner attributes joined: a part without a texture coordinate set the others
    have gets zeros for it, one without normals its flat face normals, one without colours
    white, one without tangents those computed from its normals and first texture coordinate
    set (:func:`~..tangents.corner_tangents`, as glTF asks of a client when a file has none)."""
    names: list[str] = []
    for p in parts:
        names += [n for n in p.corners if n not in names]
    out: dict[str, np.ndarray] = {}
    for name in names:
        arrays = []
        for p in parts:
            if name in p.corners:
                arrays.append(p.corners[name])
            elif name == "normal":
                arrays.append(np.repeat(_face_normals(p.V, p.F)[:, None, :], 3, axis=1))
            elif name == "color":  # no COLOR_0: glTF's white
                arrays.append(np.ones((p.F.shape[0], 3, 4), np.float32))
            elif name == "tangent":
                from ..tangents import corner_tangents

                normal = p.corners.get("normal")
                if normal is None:
                    normal = np.repeat(_face_normals(p.V, p.F)[:, None, :], 3, axis=1)
                uv = p.corners.get("uv", np.zeros((p.F.shape[0], 3, 2), np.float32))
                arrays.append(corner_tangents(p.V, p.F, normal, uv))
            else:
                arrays.append(np.zeros((p.F.shape[0], 3, 2), np.float32))
        out[name] = np.concatenate(arrays)
    return out


def has_seams(V: np.ndarray, values: np.ndarray) -> bool:
    """Whether vertices at the same position (as float32, the mesh's) have different
    ``values`` (a row each): a hard edge of the normals, a seam of the colours, which only
    corner attributes keep through a weld. Without one, the vertex attribute says everything
    and no corner attribute is kept beside it (so an operation that recomputes the vertex
    normals leaves nothing stale behind). A 32-bit hash of the positions, sorted, finds the
    few candidates that the exact comparison then looks at."""
    n = V.shape[0]
    if n < 2:
        return False
    P = np.ascontiguousarray(np.asarray(V, dtype=np.float32) + np.float32(0.0))  # -0 is 0
    u = P.view(np.uint32).reshape(n, 3)
    h = u[:, 0] * np.uint32(0x9E3779B1)
    h ^= u[:, 1] * np.uint32(0x85EBCA77)
    h ^= u[:, 2] * np.uint32(0xC2B2AE3D)
    s = np.sort(h)
    repeated = s[1:][s[1:] == s[:-1]]
    if repeated.size == 0:
        return False
    take = np.isin(h, repeated)
    pos = np.ascontiguousarray(P[take]).view(np.uint8).reshape(-1, 12)
    X = np.ascontiguousarray(values[take])
    both = np.ascontiguousarray(
        np.concatenate([pos, X.view(np.uint8).reshape(pos.shape[0], -1)], 1)
    )
    rows = both.view(np.dtype((np.void, both.shape[1]))).reshape(-1)
    return len(np.unique(rows)) != len(np.unique(pos.view(np.dtype((np.void, 12))).reshape(-1)))


def corner_colors(rgba: np.ndarray, F: np.ndarray) -> np.ndarray:
    """RGBA bytes per vertex as the corner attribute ``color``: float32 in ``[0, 1]``."""
    return (rgba.astype(np.float32) / np.float32(255.0))[F]


def _face_normals(V: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Unit normals of the triangles (zero for degenerate ones), float32."""
    a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    return unit_rows(np.cross(b - a, c - a))


_MIME_EXT = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/webp": ".webp",
    "image/ktx2": ".ktx2",
}


def image_mime_type(data: bytes) -> str | None:
    """The media type of an image's bytes, told by their signature (None when unknown)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:12] == b"\xabKTX 20\xbb\r\n\x1a\n":
        return "image/ktx2"
    return None


def read_materials(reader: _Reader, dropped: dict[str, int]) -> Materials | None:
    """The document's materials, textures, samplers and images as :class:`Materials` (None
    when it has neither materials nor textures). Each image's bytes become a file of the
    library, named after the image's URI or name (else ``image<i>``), and the image refers to
    it by ``uri``; an external image not sent with the file keeps its URI and is counted in
    ``dropped``. The document's ``extensionsRequired`` is kept beside the arrays (under that
    key) for the writer, which requires those its materials and textures still use."""
    tree = reader.tree
    gltf: dict[str, list[Any]] = {}
    for key in ("materials", "textures", "samplers", "images"):
        items = tree.get(key, [])
        if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
            raise _fail(f"glTF {key} is not a list of objects", key=key)
        if items:
            gltf[key] = json.loads(json.dumps(items))  # a copy the mesh owns
    if not gltf.get("materials") and not gltf.get("textures"):
        return None
    problem = library_problem(gltf)
    if problem is not None:
        raise _fail(f"glTF material library is malformed: {problem}", key="materials")
    required = tree.get("extensionsRequired")
    if isinstance(required, list) and required:
        gltf["extensionsRequired"] = [str(x) for x in required]
    files: dict[str, bytes] = {}
    # images of the same bytes (the same view or URI) share one file: a thousand images of one
    # view are not a thousand copies of it
    named: dict[tuple[str, Any], str] = {}
    for i, image in enumerate(gltf.get("images", [])):
        uri = image.get("uri")
        if "bufferView" in image:
            source: tuple[str, Any] = ("view", _index(image["bufferView"], "image bufferView"))
        elif isinstance(uri, str):
            source = ("uri", uri)
        else:
            raise _fail("glTF image has neither uri nor bufferView", image=i)
        if source in named:
            image.pop("bufferView", None)
            image["uri"] = named[source]
            continue
        if source[0] == "view":
            data: bytes | None = bytes(reader.view(source[1]))
        else:
            data = reader.uri(source[1], f"image {i}")
        if data is None:
            dropped["images not sent with the file"] = (
                dropped.get("images not sent with the file", 0) + 1
            )
            continue
        mime = image_mime_type(data) or image.get("mimeType")  # text: library_problem checked
        base = uri if isinstance(uri, str) and not uri.startswith("data:") else image.get("name")
        name = posixpath.basename(unquote(base)) if isinstance(base, str) else ""
        name = "".join(ch for ch in name if ch.isalnum() or ch in "._-")[:100].strip(".")
        name = name or f"image{i}"  # nothing but dots ("..") is no file name
        if not posixpath.splitext(name)[1] and mime in _MIME_EXT:
            name += _MIME_EXT[mime]
        if name in files:
            name = f"{i}_{name}"
        files[name] = data
        named[source] = name
        image.pop("bufferView", None)
        image["uri"] = name
        if isinstance(mime, str):
            image["mimeType"] = mime
    names = [str(m.get("name") or f"material{i}") for i, m in enumerate(gltf.get("materials", []))]
    return Materials(names=names, gltf=gltf, files=files)


_SET_NAMES = {
    "JOINTS_": "skin joints",
    "WEIGHTS_": "skin weights",
}


def _uv_name(attribute: str) -> str | None:
    """``uv`` for TEXCOORD_0, ``uv1`` for TEXCOORD_1...; None for a malformed name."""
    digits = attribute[len("TEXCOORD_") :]
    if not digits.isdigit() or len(digits) > 3 or digits != str(int(digits)):
        return None
    return "uv" if int(digits) == 0 else f"uv{int(digits)}"


def _primitive(
    reader: _Reader, p: dict[str, Any], world: np.ndarray, dropped: dict[str, int]
) -> _Part | None:
    mode = p.get("mode", _TRIANGLES)
    if mode not in (_TRIANGLES, _STRIP, _FAN):
        if mode in (0, 1, 2, 3):
            dropped["lines and points"] = dropped.get("lines and points", 0) + 1
            return None
        raise _fail("glTF primitive of unknown mode", mode=repr(mode)[:20])
    if p.get("targets"):
        dropped["morph targets"] = dropped.get("morph targets", 0) + len(p["targets"])
    attributes = p.get("attributes")
    if not isinstance(attributes, dict) or "POSITION" not in attributes:
        raise _fail("glTF primitive has no POSITION")
    for name in attributes:
        kind = next((k for k in _SET_NAMES if name.startswith(k)), None)
        if kind is not None:
            dropped[_SET_NAMES[kind]] = dropped.get(_SET_NAMES[kind], 0) + 1
    material = p.get("material")
    if material is not None:
        material = _index(material, "primitive material")
    draco = (p.get("extensions") or {}).get("KHR_draco_mesh_compression")
    N = None
    tangents = None
    sets: dict[str, np.ndarray] = {}
    if isinstance(draco, dict):
        V, F, N, sets = _draco(reader, draco)
        if "TANGENT" in attributes:  # not among the attributes the Draco decoder gives
            dropped["tangents"] = dropped.get("tangents", 0) + 1
        if mode != _TRIANGLES:
            raise _fail("a Draco primitive must be triangles", code="format.gltf_draco")
    else:
        V = reader.accessor(_index(attributes["POSITION"], "POSITION"), as_float=True)
        if V.ndim != 2 or V.shape[1] != 3:
            raise _fail("glTF POSITION is not 3-vectors")
        if "indices" in p:
            flat = reader.accessor(_index(p["indices"], "indices")).reshape(-1)
            if flat.dtype.kind != "u":
                raise _fail("glTF indices are not unsigned integers")
            flat = flat.astype(np.int64)
        else:
            flat = np.arange(V.shape[0], dtype=np.int64)
        F = _triangles(flat, mode)
        if "NORMAL" in attributes:
            N = reader.accessor(_index(attributes["NORMAL"], "NORMAL"), as_float=True)
        if "TANGENT" in attributes:
            tangents = reader.accessor(_index(attributes["TANGENT"], "TANGENT"), as_float=True)
            if tangents.shape != (V.shape[0], 4):
                raise _fail(
                    "glTF TANGENT is not one 4-vector per vertex",
                    count=int(tangents.shape[0]),
                    n_vertices=int(V.shape[0]),
                )
        for name, index in attributes.items():
            if name.startswith("TEXCOORD_"):
                sets[name] = reader.accessor(_index(index, name), as_float=True)
    if F.shape[0] and (int(F.min()) < 0 or int(F.max()) >= V.shape[0]):
        raise MeshError(
            "face index out of range",
            code="mesh.index_out_of_range",
            max_index=int(F.max()),
            n_vertices=int(V.shape[0]),
        )
    linear, shift = world[:3, :3], world[:3, 3]
    if not np.isfinite(world).all():
        raise _fail("glTF node transform is not finite")
    V = V @ linear.T + shift
    if np.linalg.det(linear) < 0:
        F = F[:, ::-1]  # a mirror turns the triangles inside out: keep them facing outwards
    attrs: dict[str, np.ndarray] = {}
    corners: dict[str, np.ndarray] = {}
    for name, values in sorted(sets.items()):
        key = _uv_name(name)
        if key is None:  # not a set glTF defines: nothing reads it
            dropped["texture coordinate sets"] = dropped.get("texture coordinate sets", 0) + 1
            continue
        if values.shape != (V.shape[0], 2):
            raise _fail(
                f"glTF {name[:20]} is not one 2-vector per vertex",
                count=int(values.shape[0]),
                n_vertices=int(V.shape[0]),
            )
        corners[key] = values.astype(np.float32)[F]
    if N is not None and N.shape == V.shape:
        try:
            inverse = np.linalg.inv(linear)
        except np.linalg.LinAlgError:
            inverse = None
        if inverse is not None:
            with np.errstate(invalid="ignore", over="ignore"):  # non-finite rows stay so
                attrs["vertex_normals"] = unit_rows(N @ inverse)
            corners["normal"] = attrs["vertex_normals"][F]
    if tangents is not None:
        corners["tangent"] = _tangents(tangents, linear)[F]
    if "COLOR_0" in attributes and not isinstance(draco, dict):
        ci = _index(attributes["COLOR_0"], "COLOR_0")
        colors = _colors(_item(reader.tree, "accessors", ci), reader, ci)
        if colors.shape[0] == V.shape[0]:
            attrs["vertex_colors"] = colors
            corners["color"] = corner_colors(colors, F)
    for name, index in attributes.items():
        if name.startswith("_") and not isinstance(draco, dict):
            a = reader.accessor(_index(index, name))
            if a.shape[0] == V.shape[0] and a.dtype.kind in "iuf":
                attrs[name[1:]] = a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a
    return _Part(V, np.ascontiguousarray(F, dtype=np.int64), attrs, corners, material)


def _tangents(T: np.ndarray, linear: np.ndarray) -> np.ndarray:
    """glTF tangents ``(n, 4)`` in world space, float32: ``xyz`` moved by the node's linear
    part (a tangent lies in the surface, so it moves as positions do) and unitized; ``w`` the
    sign of the handedness (a mirror reverses it), +1 where the file's is not negative."""
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite rows stay so
        xyz = unit_rows(T[:, :3] @ linear.T)
    w = np.where(T[:, 3] < 0, -1.0, 1.0) * (-1.0 if np.linalg.det(linear) < 0 else 1.0)
    w = np.where(np.isfinite(T[:, 3]), w, np.nan)
    return np.concatenate([xyz, w[:, None].astype(np.float32)], axis=1)


def dropped_by_simple(data: bytes) -> dict[str, int]:
    """What :func:`glb.read_simple`'s file held that it does not read (animations, cameras):
    the same counts :func:`read_scene` gives."""
    tree, _ = split_glb(data)
    return _dropped_keys(tree)


__all__ = [
    "MAX_EXPANSION",
    "dropped_by_simple",
    "Scene",
    "image_mime_type",
    "read_materials",
    "read_scene",
    "split_glb",
]
