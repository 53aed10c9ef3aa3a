"""Wavefront material libraries (MTL): read into :class:`~..materials.Materials` beside an OBJ,
and written from them.

Reading keeps the library's text as it was (``Materials.mtl``, written back unchanged) and the
image files its maps name (``Materials.files``, found in the archive the OBJ came in by their
path relative to the library, then case-insensitively, then by their file name alone, as
libraries written on Windows often name absolute paths). The materials are also translated into
glTF 2.0 terms (``Materials.gltf``), so that every format can be written from them:

- ``Kd`` is ``pbrMetallicRoughness.baseColorFactor`` (with the opacity as alpha), ``map_Kd`` its
  ``baseColorTexture``; OBJ materials are not metals (``metallicFactor`` 0);
- ``d`` is the opacity and ``Tr`` the transparency (``1 - d``), except ``Tr 1`` without ``d``,
  which exporters such as MeshLab write meaning opaque; an opacity below 1 sets ``alphaMode``
  ``BLEND``;
- ``Ns`` (the Phong exponent) gives ``roughnessFactor`` as ``sqrt(2 / (Ns + 2))`` (the usual
  Blinn-Phong to microfacet correspondence), ``Ke`` the ``emissiveFactor``;
- ``map_Bump``, ``bump`` or ``norm`` is the ``normalTexture`` (``-bm`` its scale).

Writing (:func:`write_mtl`) generates a library from the glTF terms when there is no text to
write back: ``newmtl``, ``Kd`` and ``d`` from the base colour, ``map_Kd`` from its texture's
image, ``Ns`` from the roughness, ``Ke`` from the emission, ``norm`` from the normal texture.
"""

from __future__ import annotations

import math
import posixpath
import re
from typing import Any

from ..materials import Materials

#: options a texture map statement may carry before its file name, with their most numbers
_MAP_OPTIONS = {
    "-blendu": 1,
    "-blendv": 1,
    "-boost": 1,
    "-mm": 2,
    "-o": 3,
    "-s": 3,
    "-t": 3,
    "-texres": 1,
    "-clamp": 1,
    "-bm": 1,
    "-imfchan": 1,
    "-type": 1,
    "-cc": 1,
}
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


def parse_mtl(text: str) -> list[tuple[str, dict[str, list[str]]]]:
    """The materials of an MTL's text in declaration order: ``(name, {statement: words})``, the
    first occurrence of each statement kept (keys lower-case)."""
    out: list[tuple[str, dict[str, list[str]]]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        word, _, rest = line.partition(" ") if " " in line else line.partition("\t")
        key = word.lower()
        if key == "newmtl":
            out.append((rest.strip(), {}))
        elif out:
            out[-1][1].setdefault(key, rest.split())
    return out


def map_file(words: list[str]) -> tuple[str, dict[str, list[str]]]:
    """The file name of a texture map statement's words and its options (``-o``, ``-s`` and
    ``-t`` take one to three numbers, the others a fixed count of words); the last word is
    always part of the name."""
    options: dict[str, list[str]] = {}
    i = 0
    while i < len(words) - 1 and words[i].lower() in _MAP_OPTIONS:
        name, most = words[i].lower(), _MAP_OPTIONS[words[i].lower()]
        i += 1
        args: list[str] = []
        while len(args) < most and i < len(words) - 1:
            if name in ("-o", "-s", "-t") and not _NUMBER.match(words[i]):
                break
            args.append(words[i])
            i += 1
        options[name] = args
    return " ".join(words[i:]), options


def texture_names(text: str) -> list[str]:
    """The image files an MTL's maps name (``map_*``, ``bump``, ``norm``, ``disp``, ``decal``,
    ``refl``), each once, as written."""
    out: list[str] = []
    for _, statements in parse_mtl(text):
        for key, words in statements.items():
            if key.startswith("map_") or key in ("bump", "norm", "disp", "decal", "refl"):
                name, _ = map_file(words)
                if name and name not in out:
                    out.append(name)
    return out


def file_key(name: str) -> str:
    """Where an image the library names is kept (``Materials.files``) and written in a zip: its
    relative path, normalised (``./a/b.png`` -> ``a/b.png``, backslashes as slashes), or its file
    name alone when the path is absolute or leaves the library's folder."""
    path = name.replace("\\", "/")
    norm = posixpath.normpath(path)
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path) or norm.split("/")[0] == "..":
        return posixpath.basename(norm)
    return norm


def safe_member(path: str) -> bool:
    """Whether a library's image path (:func:`file_key`'s) may be written as a zip member and
    named on a ``map_`` line: a relative path without ``..``, blanks or control characters."""
    parts = path.split("/")
    return (
        bool(path)
        and not path.startswith("/")
        and all(p not in ("", ".", "..") for p in parts)
        and all(ch.isprintable() and not ch.isspace() for ch in path)
    )


def find_member(name: str, folder: str, members: dict[str, bytes]) -> str | None:
    """The archive member a library (or OBJ) in ``folder`` means by ``name``: the relative path,
    then the same case-insensitively, then a member with that file name in any folder."""
    key = file_key(name)
    path = posixpath.normpath(posixpath.join(folder, key)) if folder else key
    if path in members:
        return path
    lower = {m.lower(): m for m in members}
    if path.lower() in lower:
        return lower[path.lower()]
    base = posixpath.basename(key).lower()
    same = sorted(m for m in members if posixpath.basename(m).lower() == base)
    return same[0] if same else None


def read_materials(
    names: list[str],
    libraries: list[str],
    members: dict[str, bytes] | None,
    obj_path: str,
) -> tuple[Materials, dict[str, int], set[str]]:
    """The materials of an OBJ whose faces use ``names``: from its libraries (``mtllib``) found
    among the archive's ``members`` (None: the OBJ came alone). Returns the library, what was
    missing (``{"material libraries": n, "textures": n}``, for ``mesh.dropped``) and the members
    used."""
    dropped: dict[str, int] = {}
    used: set[str] = set()
    texts: list[str] = []
    folder = posixpath.dirname(obj_path)
    mtl_folder = folder
    for lib in libraries:
        member = find_member(lib, folder, members) if members else None
        if member is None:
            dropped["material libraries"] = dropped.get("material libraries", 0) + 1
            continue
        used.add(member)
        texts.append(members[member].decode("utf-8", "replace"))  # type: ignore[index]
        mtl_folder = posixpath.dirname(member)
    text = "\n".join(texts) if texts else None
    declared = parse_mtl(text) if text is not None else []
    by_name: dict[str, dict[str, list[str]]] = {}
    for n, st in declared:
        by_name.setdefault(n, st)
    order = list(names) + [n for n in by_name if n not in names]
    files: dict[str, bytes] = {}
    missing: set[str] = set()
    if text is not None:
        for tex in texture_names(text):
            member = find_member(tex, mtl_folder, members or {})
            if member is None:
                missing.add(tex)
                continue
            used.add(member)
            files[file_key(tex)] = members[member]  # type: ignore[index]
    if missing:
        dropped["textures"] = len(missing)
    gltf = to_gltf(order, by_name, files)
    return Materials(order, gltf=gltf, files=files, mtl=text), dropped, used


def to_gltf(
    order: list[str], by_name: dict[str, dict[str, list[str]]], files: dict[str, bytes]
) -> dict[str, list[Any]]:
    """The materials ``order`` in glTF 2.0 terms (see the module docstring); a material the
    library does not declare is glTF's default material with its name."""
    materials: list[dict[str, Any]] = []
    textures: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    image_of: dict[str, int] = {}

    def texture(words: list[str]) -> tuple[int, dict[str, list[str]]] | None:
        name, options = map_file(words)
        key = file_key(name) if name else ""
        if key not in files:
            return None
        if key not in image_of:
            image_of[key] = len(images)
            image: dict[str, Any] = {"uri": key}
            mime = _MIME.get(posixpath.splitext(key)[1].lower())
            if mime:
                image["mimeType"] = mime
            images.append(image)
        textures.append({"sampler": 0, "source": image_of[key]})
        return len(textures) - 1, options

    for name in order:
        st = by_name.get(name)
        material: dict[str, Any] = {"name": name}
        if st is None:
            materials.append(material)
            continue
        pbr: dict[str, Any] = {"metallicFactor": 0.0}
        alpha = 1.0
        if "d" in st and _floats(st["d"], 1):
            alpha = _floats(st["d"], 1)[0]
        elif "tr" in st and _floats(st["tr"], 1):
            tr = _floats(st["tr"], 1)[0]
            alpha = 1.0 if tr == 1.0 else 1.0 - tr
        alpha = min(max(alpha, 0.0), 1.0)
        kd = _floats(st.get("kd", []), 3)
        color = [min(max(c, 0.0), 1.0) for c in kd[:3]] if kd else [1.0, 1.0, 1.0]
        if kd or alpha < 1.0:
            pbr["baseColorFactor"] = [*color, alpha]
        if "ns" in st and _floats(st["ns"], 1):
            ns = max(_floats(st["ns"], 1)[0], 0.0)
            pbr["roughnessFactor"] = round(math.sqrt(2.0 / (ns + 2.0)), 6)
        if "map_kd" in st and (t := texture(st["map_kd"])) is not None:
            pbr["baseColorTexture"] = {"index": t[0]}
        material["pbrMetallicRoughness"] = pbr
        if alpha < 1.0:
            material["alphaMode"] = "BLEND"
        bump = st.get("norm") or st.get("map_bump") or st.get("bump")
        if bump and (t := texture(bump)) is not None:
            normal: dict[str, Any] = {"index": t[0]}
            scale = _floats(t[1].get("-bm", []), 1)
            if scale:
                normal["scale"] = scale[0]
            material["normalTexture"] = normal
        ke = _floats(st.get("ke", []), 3)
        if ke and any(c > 0 for c in ke[:3]):
            material["emissiveFactor"] = [min(max(c, 0.0), 1.0) for c in ke[:3]]
        materials.append(material)
    out: dict[str, list[Any]] = {"materials": materials}
    if textures:
        # glTF's defaults written out: linear filtering with mipmaps, repeated
        out["samplers"] = [{"magFilter": 9729, "minFilter": 9987, "wrapS": 10497, "wrapT": 10497}]
        out["textures"] = textures
        out["images"] = images
    return out


def _floats(words: list[str], n: int) -> list[float]:
    """The first ``n`` words as numbers (fewer when fewer are numbers; a colour given as one
    number is grey)."""
    out = []
    for w in words[:n]:
        try:
            v = float(w)
        except ValueError:
            break
        if not math.isfinite(v):
            break
        out.append(v)
    if n == 3 and len(out) == 1:
        out = out * 3
    return out


def library_names(materials: Materials) -> list[str]:
    """The materials' names as ``usemtl`` and ``newmtl`` write them: as read when the library's
    text is kept, else each a single word (blanks as ``_``: readers take one word; ``#`` too:
    readers take it for a comment, so ``usemtl #c`` named no material), distinct."""
    if materials.mtl is not None:
        return list(materials.names)
    out: list[str] = []
    # a set, and the last number tried per word: searching a list from 1 each time made
    # 200 000 materials (or as many of one name) take minutes
    seen: set[str] = set()
    tried: dict[str, int] = {}
    for name in materials.names:
        word = re.sub(r"[\s#]+", "_", name.strip()) or "material"
        unique, n = word, tried.get(word, 1)
        while unique in seen:
            n += 1
            unique = f"{word}_{n}"
        tried[word] = n
        out.append(unique)
        seen.add(unique)
    return out


def write_mtl(materials: Materials) -> str:
    """The MTL text for ``materials``: the kept text when it has one (read with an OBJ), else
    generated from the glTF terms (see the module docstring)."""
    if materials.mtl is not None:
        return materials.mtl
    gltf = materials.gltf
    mats = gltf.get("materials", [])
    textures = gltf.get("textures", [])
    images = gltf.get("images", [])

    def image(ref: dict[str, Any] | None) -> str | None:
        try:
            uri = images[textures[int(ref["index"])]["source"]].get("uri")  # type: ignore[index]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
        ok = isinstance(uri, str) and uri in materials.files and safe_member(file_key(uri))
        return file_key(uri) if ok else None

    lines = ["# written by tessera"]
    for i, name in enumerate(library_names(materials)):
        m = mats[i] if i < len(mats) and isinstance(mats[i], dict) else {}
        pbr = m.get("pbrMetallicRoughness") or {}
        color = pbr.get("baseColorFactor") or [1.0, 1.0, 1.0, 1.0]
        lines += ["", f"newmtl {name}"]
        lines.append("Kd " + " ".join(_num(c) for c in color[:3]))
        if len(color) > 3 and float(color[3]) < 1.0:
            lines.append(f"d {_num(color[3])}")
        rough = pbr.get("roughnessFactor")
        if isinstance(rough, int | float) and rough > 0:
            lines.append(f"Ns {_num(max(2.0 / (float(rough) ** 2) - 2.0, 0.0))}")
        emissive = m.get("emissiveFactor")
        if isinstance(emissive, list) and len(emissive) == 3:
            lines.append("Ke " + " ".join(_num(c) for c in emissive))
        base = image(pbr.get("baseColorTexture"))
        if base:
            lines.append(f"map_Kd {base}")
        normal = image(m.get("normalTexture"))
        if normal:
            lines.append(f"norm {normal}")
    return "\n".join(lines) + "\n"


def _num(x: Any) -> str:
    return f"{float(x):.6g}"
