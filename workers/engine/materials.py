"""What a textured asset carries beside its geometry: its materials, their textures and the
image files, kept as the file gave them so that a written asset looks as the one read.

A mesh's faces name their material by index (the face attribute ``material``, int32, into
:attr:`Materials.names`). The library is held in glTF's own terms (``gltf``: the ``materials``,
``textures``, ``samplers`` and ``images`` arrays of a glTF document, each image naming its file
in :attr:`Materials.files` by ``uri``), because glTF's material model is the one every format we
write can be translated from; an OBJ's MTL is read into the same terms and its text is also kept
(``mtl``) to be written back unchanged. Operations never look inside: they carry the library as
it is and keep each face's ``material``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Materials:
    #: one name per material; the face attribute ``material`` indexes this list
    names: list[str]
    #: ``{"materials": [...], "textures": [...], "samplers": [...], "images": [...]}`` in glTF
    #: 2.0 terms; an image refers to its file by ``{"uri": name}`` (a key of ``files``)
    gltf: dict[str, list[Any]] = field(default_factory=dict)
    #: image files (PNG, JPEG, ...) by name, as the asset held them
    files: dict[str, bytes] = field(default_factory=dict)
    #: the OBJ material library's text when the asset came with one (written back as it was)
    mtl: str | None = None

    def __len__(self) -> int:
        return len(self.names)

    def to_json(self) -> dict[str, Any]:
        """Everything but the files' bytes, as JSON (the stored form keeps the files apart)."""
        return {"names": self.names, "gltf": self.gltf, "mtl": self.mtl, "files": list(self.files)}

    @classmethod
    def from_json(cls, doc: dict[str, Any], files: dict[str, bytes]) -> Materials:
        """Raises TypeError for a document whose ``mtl`` is neither text nor null."""
        mtl = doc.get("mtl")
        if mtl is not None and not isinstance(mtl, str):
            raise TypeError("a material library's MTL text is not text")
        return cls(
            names=[str(n) for n in doc.get("names", [])],
            gltf={k: list(v) for k, v in (doc.get("gltf") or {}).items()},
            files={name: files[name] for name in doc.get("files", []) if name in files},
            mtl=mtl,
        )

    def encode(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()


def library_problem(gltf: dict[str, Any], n_names: int | None = None) -> str | None:
    """What is wrong with a material library's glTF terms, in plain words (None: nothing):
    arrays that are not lists of objects, values JSON cannot hold (NaN, infinities, sets,
    bytes), ``extensions`` that are not objects, names that are not text, a texture naming an
    image or sampler the library does not have, a material's texture reference whose ``index``
    or ``texCoord`` is not a valid whole number, factors that are not lists of numbers. A
    library with a problem cannot be written as valid glTF or MTL."""
    for key in ("materials", "textures", "samplers", "images"):
        items = gltf.get(key, [])
        if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
            return f"{key} is not a list of objects"
    try:
        json.dumps(gltf, allow_nan=False)
    except (TypeError, ValueError):
        return "the library holds values JSON cannot hold (NaN, infinity, or not JSON at all)"
    n_images, n_samplers = len(gltf.get("images", [])), len(gltf.get("samplers", []))
    n_textures = len(gltf.get("textures", []))
    for key in ("materials", "textures", "samplers", "images"):
        for i, item in enumerate(gltf.get(key, [])):
            if not isinstance(item.get("extensions", {}), dict):
                return f"{key[:-1]} {i} has extensions that are not an object"
            if not isinstance(item.get("name", ""), str):
                return f"{key[:-1]} {i} has a name that is not text"
    for i, t in enumerate(gltf.get("textures", [])):
        for ref, n in (("source", n_images), ("sampler", n_samplers)):
            if ref in t and not _whole(t[ref], n):
                return f"texture {i} names {ref} {str(t[ref])[:20]}, which the library lacks"
    for i, image in enumerate(gltf.get("images", [])):
        for k in ("uri", "mimeType"):
            if k in image and not isinstance(image[k], str):
                return f"image {i} has a {k} that is not text"
    for i, m in enumerate(gltf.get("materials", [])):
        if m.keys() <= {"name"}:  # a name alone (checked above): nothing more to look at
            continue
        problem = _material_problem(m, n_textures)
        if problem:
            return f"material {i}: {problem}"
    if n_names is not None and len(gltf.get("materials", [])) > n_names:
        return "the library has more materials than names"
    return None


def _whole(x: Any, below: int | None = None) -> bool:
    ok = isinstance(x, int) and not isinstance(x, bool) and x >= 0
    return ok and (below is None or x < below)


def _numbers(x: Any, n: int) -> bool:
    return (
        isinstance(x, list)
        and len(x) == n
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in x)
    )


def _material_problem(m: dict[str, Any], n_textures: int) -> str | None:
    pbr = m.get("pbrMetallicRoughness", {})
    if not isinstance(pbr, dict):
        return "pbrMetallicRoughness is not an object"
    if "baseColorFactor" in pbr and not _numbers(pbr["baseColorFactor"], 4):
        return "baseColorFactor is not 4 numbers"
    if "emissiveFactor" in m and not _numbers(m["emissiveFactor"], 3):
        return "emissiveFactor is not 3 numbers"
    for k in ("metallicFactor", "roughnessFactor", "alphaCutoff"):
        if k in pbr and not _numbers([pbr[k]], 1):
            return f"{k} is not a number"
    for key, ref in [*pbr.items(), *m.items()]:
        if not str(key).endswith("Texture"):
            continue
        if not isinstance(ref, dict) or not _whole(ref.get("index"), n_textures):
            return f"{key} does not name a texture the library has"
        if not _whole(ref.get("texCoord", 0)):
            return f"{key} has a texCoord that is not a whole number"
        ext = ref.get("extensions", {})
        if not isinstance(ext, dict):
            return f"{key} has extensions that are not an object"
        t = ext.get("KHR_texture_transform")
        if t is not None and (
            not isinstance(t, dict)
            or not _whole(t.get("texCoord", 0))
            or ("offset" in t and not _numbers(t["offset"], 2))
            or ("scale" in t and not _numbers(t["scale"], 2))
            or ("rotation" in t and not _numbers([t["rotation"]], 1))
        ):
            return f"{key} has a KHR_texture_transform that is not offset, scale and rotation"
    return None


def combine(libraries: list[Materials | None]) -> tuple[Materials, list[int]]:
    """One library holding the materials, textures, samplers and images of every library in
    ``libraries`` (the parts of one mesh), and for each part the offset its faces' ``material``
    indices take in it. The second part's references are remapped (a texture's ``source`` and
    ``sampler``, also inside its extensions; a material's ``...Texture.index``, also inside
    its extensions); identical samplers and images are kept once, and image files of the same
    bytes are one file (a file name another file already has is prefixed with the part's
    number). A part without a library (None) gets glTF's default material, added once at the
    end, and its offset points at it. The combined library has no MTL text
    (:func:`~.io.mtl.write_mtl` writes one from the glTF terms): the parts' texts would name
    clashing materials and files."""
    import hashlib

    names: list[str] = []
    out: dict[str, list[Any]] = {"materials": [], "textures": [], "samplers": [], "images": []}
    required: list[str] = []
    files: dict[str, bytes] = {}
    by_digest: dict[bytes, str] = {}
    seen: dict[str, dict[str, int]] = {"samplers": {}, "images": {}}
    offsets: list[int] = []
    need_default = False

    def once(key: str, item: dict[str, Any]) -> int:
        text = json.dumps(item, sort_keys=True)
        if text not in seen[key]:
            seen[key][text] = len(out[key])
            out[key].append(item)
        return seen[key][text]

    for part, lib in enumerate(libraries):
        if lib is None:
            offsets.append(-1)
            need_default = True
            continue
        gltf = json.loads(json.dumps(lib.gltf))  # a copy the result owns
        file_name: dict[str, str] = {}
        for name, data in lib.files.items():
            digest = hashlib.sha256(data).digest()
            if digest not in by_digest:
                unique = name if name not in files else f"{part}_{name}"
                while unique in files:
                    unique = f"{part}_{unique}"
                files[unique] = data
                by_digest[digest] = unique
            file_name[name] = by_digest[digest]
        image_map = []
        for image in gltf.get("images", []):
            if image.get("uri") in file_name:
                image["uri"] = file_name[image["uri"]]
            image_map.append(once("images", image))
        sampler_map = [once("samplers", s) for s in gltf.get("samplers", [])]
        texture_base = len(out["textures"])
        for t in gltf.get("textures", []):
            _remap_texture(t, image_map, sampler_map)
            out["textures"].append(t)
        materials = list(gltf.get("materials", []))
        materials += [{"name": n} for n in lib.names[len(materials) :]]
        for m in materials:
            _remap_texture_refs(m, texture_base)
        offsets.append(len(names))
        names += list(lib.names)
        out["materials"] += materials
        required += [e for e in gltf.get("extensionsRequired", []) if e not in required]
    if need_default:
        default = "default"
        while default in names:
            default += "_"
        offsets = [len(names) if o < 0 else o for o in offsets]
        names.append(default)
        out["materials"].append({"name": default})
    gltf_out: dict[str, list[Any]] = {k: v for k, v in out.items() if v}
    if required:
        gltf_out["extensionsRequired"] = required
    return Materials(names=names, gltf=gltf_out, files=files), offsets


def _remap_texture(t: dict[str, Any], images: list[int], samplers: list[int]) -> None:
    """A texture's image and sampler references (``source``, ``sampler``, and the ``source`` of
    its extensions: ``KHR_texture_basisu``, ``EXT_texture_webp``...) as ``images``/``samplers``
    map them (``library_problem`` has checked they are in range)."""
    if isinstance(t.get("source"), int):
        t["source"] = images[t["source"]]
    if isinstance(t.get("sampler"), int):
        t["sampler"] = samplers[t["sampler"]]
    for ext in (t.get("extensions") or {}).values():
        source = ext.get("source") if isinstance(ext, dict) else None
        if isinstance(source, int) and 0 <= source < len(images):
            ext["source"] = images[source]


def _remap_texture_refs(node: Any, base: int, key: str = "") -> None:
    """Every texture reference (an object under a key ending in ``Texture`` with an
    ``index``) in a material, its extensions included, moved by ``base``."""
    if isinstance(node, dict):
        if key.endswith("Texture") and isinstance(node.get("index"), int):
            node["index"] += base
        for k, v in node.items():
            _remap_texture_refs(v, base, str(k))
    elif isinstance(node, list):
        for v in node:
            _remap_texture_refs(v, base, key)
