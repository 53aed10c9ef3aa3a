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
        return cls(
            names=[str(n) for n in doc.get("names", [])],
            gltf={k: list(v) for k, v in (doc.get("gltf") or {}).items()},
            files={name: files[name] for name in doc.get("files", []) if name in files},
            mtl=doc.get("mtl"),
        )

    def encode(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()
