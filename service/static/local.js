// The chosen file, read in the browser for the preview before any job runs. Vertices are
// numbered as the service numbers them, so a vertex picked on this preview is the vertex id a
// step such as geodesic_distance means:
//
// - OBJ: every `v` line a vertex, as workers/engine/io/obj.py reads it (read here, since three's
//   OBJLoader splits vertices); each `f` polygon is fanned into triangles for the picture (the
//   service ear-clips a non-convex one: the same vertices, other triangles);
// - PLY: three's PLYLoader (vertices in file order, faces as the index; polygons of more than
//   four corners are not drawn here; a face `texcoord` list is stepped over);
// - STL: three's STLLoader (three corners per triangle, unshared, as the service reads STL);
// - GLB: three's GLTFLoader; the ids are the service's when the file holds one mesh placed once
//   (several meshes are shown, but picking is left off: their joined order is the service's
//   business);
// - OFF: read here (the header, the vertices, polygons fanned);
// - `.gz` of any of these: unpacked with the browser's DecompressionStream.
//
// Anything else (zip, npz, glTF with side files) is not parsed here: `parseLocal` throws a
// `LocalUnsupported` error and the page waits for the service's preview of the stored input.

export class LocalUnsupported extends Error {}

// Larger files are left to the service's preview (reduced by vertex clustering there).
export const MAX_LOCAL_BYTES = 100 * 1024 * 1024;

function extOf(name) {
  const lower = name.toLowerCase();
  const m = /\.([a-z0-9]+)$/.exec(lower);
  return m ? m[1] : "";
}

async function gunzip(buffer) {
  if (typeof DecompressionStream === "undefined") {
    throw new LocalUnsupported("this browser cannot unpack .gz files");
  }
  const stream = new Blob([buffer]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).arrayBuffer();
}

function fan(out, corners) {
  for (let i = 1; i + 1 < corners.length; i++) out.push(corners[0], corners[i], corners[i + 1]);
}

export function parseOBJ(text) {
  const position = [];
  const index = [];
  let nv = 0;
  const lines = text.split(/\r?\n/);
  for (let line of lines) {
    if (line.length < 2) continue;
    const c0 = line.charCodeAt(0);
    if (c0 !== 118 && c0 !== 102) continue; // 'v', 'f'
    line = line.trim();
    if (line.startsWith("v ") || line.startsWith("v\t")) {
      const t = line.split(/\s+/);
      position.push(Number(t[1]), Number(t[2]), Number(t[3]));
      nv += 1;
    } else if (line.startsWith("f ") || line.startsWith("f\t")) {
      const t = line.split(/\s+/);
      const corners = [];
      for (let i = 1; i < t.length; i++) {
        if (!t[i]) continue;
        const v = parseInt(t[i], 10); // "12/4/7" -> 12
        corners.push(v < 0 ? nv + v : v - 1);
      }
      fan(index, corners);
    }
  }
  return { position: new Float32Array(position), index: new Uint32Array(index) };
}

export function parseOFF(text) {
  // one record a line: the header ("OFF", counts on it or the next line), the vertices, then a
  // face a line ("k i0 .. ik-1", colour values after the corners ignored)
  const lines = text.replace(/#[^\n]*/g, "").split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  let at = 0;
  let head = (lines[at++] || "").split(/\s+/);
  const kind = head[0];
  if (!/^[A-Z]*OFF$/i.test(kind)) throw new Error("no OFF header");
  if (kind.toUpperCase() !== "OFF") throw new LocalUnsupported(`${kind} files are left to the service`);
  head = head.length > 1 ? head.slice(1) : (lines[at++] || "").split(/\s+/);
  const nv = Number(head[0]);
  const nf = Number(head[1]);
  if (!Number.isInteger(nv) || !Number.isInteger(nf)) throw new Error("bad OFF counts");
  const position = new Float32Array(nv * 3);
  for (let i = 0; i < nv; i++) {
    const t = (lines[at++] || "").split(/\s+/);
    position[3 * i] = Number(t[0]);
    position[3 * i + 1] = Number(t[1]);
    position[3 * i + 2] = Number(t[2]);
  }
  const index = [];
  for (let f = 0; f < nf; f++) {
    const t = (lines[at++] || "").split(/\s+/).map(Number);
    fan(index, t.slice(1, 1 + t[0]));
  }
  return { position, index: new Uint32Array(index) };
}

// three's PLYLoader un-indexes a mesh whose faces carry a `texcoord` list (one vertex per
// corner), which would lose the service's vertex numbering: the face element's `texcoord` is
// renamed in the header (same length, so the body is untouched) and three steps over it.
function withoutFaceTexcoord(buffer) {
  const head = new TextDecoder("latin1").decode(buffer.slice(0, 65536));
  const end = head.indexOf("end_header");
  const face = head.indexOf("element face");
  if (end < 0 || face < 0 || face > end) return buffer;
  const next = head.indexOf("element ", face + 1);
  const stop = next >= 0 && next < end ? next : end;
  const at = head.slice(face, stop).search(/ texcoord\s/);
  if (at < 0) return buffer;
  const bytes = new Uint8Array(buffer.slice(0));
  bytes[face + at + 8] = "_".charCodeAt(0); // texcoord -> texcoor_
  return bytes.buffer;
}

function fromGeometry(g) {
  const position = new Float32Array(g.getAttribute("position").array);
  const n = position.length / 3;
  let index;
  if (g.index) index = new Uint32Array(g.index.array);
  else {
    index = new Uint32Array(n - (n % 3));
    for (let i = 0; i < index.length; i++) index[i] = i;
  }
  return { position, index };
}

async function parseGLB(buffer) {
  const { GLTFLoader } = await import("three/addons/loaders/GLTFLoader.js");
  const gltf = await new GLTFLoader().parseAsync(buffer, "");
  const parts = [];
  gltf.scene.updateMatrixWorld(true);
  gltf.scene.traverse((o) => {
    if (o.isMesh && o.geometry && o.geometry.getAttribute("position")) {
      const g = o.geometry.clone();
      g.applyMatrix4(o.matrixWorld);
      parts.push(fromGeometry(g));
    }
  });
  if (!parts.length) throw new Error("the file holds no triangle mesh");
  let nv = 0;
  let nf = 0;
  for (const p of parts) {
    nv += p.position.length / 3;
    nf += p.index.length;
  }
  const position = new Float32Array(nv * 3);
  const index = new Uint32Array(nf);
  let vo = 0;
  let fo = 0;
  for (const p of parts) {
    position.set(p.position, vo * 3);
    for (let i = 0; i < p.index.length; i++) index[fo + i] = p.index[i] + vo;
    vo += p.position.length / 3;
    fo += p.index.length;
  }
  return { position, index, pickable: parts.length === 1 };
}

// Parse `file` (a File or Blob with a name). Resolves with the viewer's mesh form:
// { position, index, attributes: [], header: {vertices, faces, local: true, pickable, format} }.
export async function parseLocal(file, name = file.name) {
  let ext = extOf(name);
  if (file.size > MAX_LOCAL_BYTES) {
    throw new LocalUnsupported(`${name} is too large to read in the browser`);
  }
  let buffer = await file.arrayBuffer();
  if (ext === "gz") {
    buffer = await gunzip(buffer);
    ext = extOf(name.slice(0, -3));
  }
  let mesh;
  if (ext === "obj") {
    mesh = parseOBJ(new TextDecoder().decode(buffer));
  } else if (ext === "off") {
    mesh = parseOFF(new TextDecoder().decode(buffer));
  } else if (ext === "ply") {
    const { PLYLoader } = await import("three/addons/loaders/PLYLoader.js");
    const g = new PLYLoader().parse(withoutFaceTexcoord(buffer));
    if (!g.index) throw new Error("the file holds points but no faces");
    mesh = fromGeometry(g);
  } else if (ext === "stl") {
    const { STLLoader } = await import("three/addons/loaders/STLLoader.js");
    mesh = fromGeometry(new STLLoader().parse(buffer));
  } else if (ext === "glb") {
    mesh = await parseGLB(buffer);
  } else {
    throw new LocalUnsupported(`.${ext || "?"} files are not read in the browser`);
  }
  const vertices = mesh.position.length / 3;
  const faces = mesh.index.length / 3;
  if (!faces) throw new Error("no faces found");
  for (let i = 0; i < mesh.index.length; i++) {
    if (!(mesh.index[i] < vertices)) throw new Error("a face refers to a vertex that is not there");
  }
  for (let i = 0; i < mesh.position.length; i++) {
    if (!Number.isFinite(mesh.position[i])) throw new Error("a vertex coordinate is not a number");
  }
  return {
    position: mesh.position,
    index: mesh.index,
    attributes: [],
    header: { vertices, faces, local: true, pickable: mesh.pickable !== false, format: ext,
              name },
  };
}
