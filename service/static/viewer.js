// The 3D preview: meshes from `/v1/jobs/{id}/preview` (see service/preview.py for the layout),
// drawn with three.js; two views share one camera so input and result turn together. A scalar
// attribute is drawn as colours: a sequential scale (viridis) for one-signed values, a diverging
// one (blue, white, red; symmetric about 0) for values of both signs. NaN and infinite values
// (e.g. vertices a geodesic distance cannot reach) are grey.
//
// A click (not a drag) on a view picks the vertex nearest to where the ray meets the surface
// (`Viewer.pick`); picked vertices are drawn as small spheres (`Viewer.setMarkers`).

import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";

const BASE = new THREE.Color(0xc9d2de);
const NONFINITE = [0.55, 0.55, 0.55];
const VIRIDIS = [[0.267, 0.005, 0.329], [0.283, 0.141, 0.458], [0.254, 0.265, 0.530],
  [0.207, 0.372, 0.553], [0.164, 0.471, 0.558], [0.128, 0.567, 0.551], [0.135, 0.659, 0.518],
  [0.267, 0.749, 0.441], [0.478, 0.821, 0.318], [0.741, 0.873, 0.150], [0.993, 0.906, 0.144]];
const DIVERGING = [[0.230, 0.299, 0.754], [0.553, 0.690, 0.996], [0.865, 0.865, 0.865],
  [0.958, 0.604, 0.482], [0.706, 0.016, 0.150]];

export function decodePreview(buffer) {
  const magic = new TextDecoder().decode(new Uint8Array(buffer, 0, 4));
  if (magic !== "TPV1") throw new Error("not a Tessera preview");
  const length = new DataView(buffer).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, length)));
  const base = 8 + length;
  const out = { header, attributes: [] };
  for (const b of header.buffers) {
    const Type = b.dtype === "uint32" ? Uint32Array : Float32Array;
    const array = new Type(buffer.slice(base + b.offset, base + b.offset + b.length));
    if (b.role === "attribute") out.attributes.push({ ...b, values: array });
    else out[b.role] = array;
  }
  return out;
}

export function scaleFor(range) {
  const { lo, hi } = range;
  if (lo < 0 && hi > 0) {
    const m = Math.max(-lo, hi);
    return { stops: DIVERGING, lo: -m, hi: m, diverging: true };
  }
  return { stops: VIRIDIS, lo, hi: hi > lo ? hi : lo + 1, diverging: false };
}

function sample(stops, t) {
  const x = Math.min(Math.max(t, 0), 1) * (stops.length - 1);
  const i = Math.min(Math.floor(x), stops.length - 2);
  const f = x - i;
  const a = stops[i];
  const b = stops[i + 1];
  return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f];
}

export function gradientCSS(scale) {
  const n = 12;
  const parts = [];
  for (let i = 0; i <= n; i++) {
    const [r, g, b] = sample(scale.stops, i / n).map((c) => Math.round(c * 255));
    parts.push(`rgb(${r} ${g} ${b}) ${((100 * i) / n).toFixed(1)}%`);
  }
  return `linear-gradient(to right, ${parts.join(", ")})`;
}

function colours(values, scale, repeat) {
  const out = new Float32Array(values.length * 3 * repeat);
  const span = scale.hi - scale.lo;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const c = Number.isFinite(v) ? sample(scale.stops, (v - scale.lo) / span) : NONFINITE;
    for (let k = 0; k < repeat; k++) out.set(c, (i * repeat + k) * 3);
  }
  return out;
}

// One canvas showing one mesh; `shared` ties its camera (and so its view) to other viewers.
export class Viewer {
  constructor(canvas, shared) {
    this.canvas = canvas;
    this.shared = shared;
    this.renderer = new THREE.WebGLRenderer({ canvas, antialias: true,
                                              preserveDrawingBuffer: true });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(0xf4f6f9);
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x8d96a3, 1.6));
    this.light = new THREE.DirectionalLight(0xffffff, 1.4);  // a headlight: follows the camera
    this.scene.add(this.light);
    this.controls = new OrbitControls(shared.camera, canvas);
    this.controls.addEventListener("change", () => shared.renderAll());
    this.material = new THREE.MeshStandardMaterial({ color: BASE, roughness: 0.65,
                                                     metalness: 0.0, side: THREE.DoubleSide });
    this.mesh = null;
    this.data = null;
    this.markers = new THREE.Group();
    this.scene.add(this.markers);
    this.raycaster = new THREE.Raycaster();
    new ResizeObserver(() => this.resize()).observe(canvas);
    this.resize();
  }

  resize() {
    const w = this.canvas.clientWidth || 300;
    const h = this.canvas.clientHeight || 300;
    this.renderer.setSize(w, h, false);
    this.shared.camera.aspect = w / h;
    this.shared.camera.updateProjectionMatrix();
    this.render();
  }

  clear() {
    if (this.mesh) {
      this.scene.remove(this.mesh);
      this.mesh.geometry.dispose();
    }
    this.mesh = null;
    this.data = null;
    this.indexed = null;
    this.flat = null;
    this.setMarkers([]);
    this.canvas.dataset.rendered = "false";
    this.render();
  }

  // The vertex under the canvas point (clientX, clientY): the ray from the camera through it
  // meets a triangle; of its three corners the one nearest to the hit point wins. Returns
  // { vertex, position: [x, y, z], normal: [x, y, z] (the triangle's) } or null (no hit).
  pick(clientX, clientY) {
    if (!this.mesh || !this.data) return null;
    const rect = this.canvas.getBoundingClientRect();
    const ndc = new THREE.Vector2(((clientX - rect.left) / rect.width) * 2 - 1,
                                  -((clientY - rect.top) / rect.height) * 2 + 1);
    this.raycaster.setFromCamera(ndc, this.shared.camera);
    const hit = this.raycaster.intersectObject(this.mesh, false)[0];
    if (!hit || hit.faceIndex === undefined || hit.faceIndex === null) return null;
    const { index, position } = this.data;
    let best = -1;
    let bestD = Infinity;
    for (let k = 0; k < 3; k++) {
      const v = index[3 * hit.faceIndex + k];
      const d = (position[3 * v] - hit.point.x) ** 2 + (position[3 * v + 1] - hit.point.y) ** 2
        + (position[3 * v + 2] - hit.point.z) ** 2;
      if (d < bestD) {
        bestD = d;
        best = v;
      }
    }
    const p = [position[3 * best], position[3 * best + 1], position[3 * best + 2]];
    const n = hit.face ? hit.face.normal : new THREE.Vector3(0, 0, 1);
    return { vertex: best, position: p, normal: [n.x, n.y, n.z] };
  }

  // Spheres at `points` ([{ position: [x, y, z], colour }]), sized by the mesh.
  setMarkers(points) {
    for (const m of [...this.markers.children]) {
      this.markers.remove(m);
      m.geometry.dispose();
      m.material.dispose();
    }
    const r = (this.indexed && this.indexed.boundingSphere ? this.indexed.boundingSphere.radius : 1)
      * 0.025;
    for (const p of points) {
      const ball = new THREE.Mesh(new THREE.SphereGeometry(r, 16, 12),
                                  new THREE.MeshBasicMaterial({ color: p.colour || 0xe0182d }));
      ball.position.set(...p.position);
      this.markers.add(ball);
    }
    this.canvas.dataset.markers = String(points.length);
    this.render();
  }

  setMesh(data) {
    this.clear();
    const g = new THREE.BufferGeometry();
    g.setAttribute("position", new THREE.BufferAttribute(data.position, 3));
    g.setIndex(new THREE.BufferAttribute(data.index, 1));
    if (data.normal) g.setAttribute("normal", new THREE.BufferAttribute(data.normal, 3));
    else g.computeVertexNormals();
    g.computeBoundingSphere();
    this.data = data;
    this.indexed = g;
    this.mesh = new THREE.Mesh(g, this.material);
    this.scene.add(this.mesh);
    return g.boundingSphere;
  }

  attribute(name, element) {
    if (!this.data) return null;
    return this.data.attributes.find((a) => a.name === name && a.element === element) || null;
  }

  // Colour by the attribute `key` ("vertex.name" or "face.name") on `scale`; null: plain.
  colour(key, scale) {
    if (!this.mesh) return;
    const [element, name] = key ? [key.slice(0, key.indexOf(".")), key.slice(key.indexOf(".") + 1)]
      : [null, null];
    const attr = key ? this.attribute(name, element) : null;
    let geometry = this.indexed;
    if (attr && element === "face") {
      // a colour per triangle: three unshared corners each
      if (!this.flat) this.flat = this.indexed.toNonIndexed();
      geometry = this.flat;
      geometry.setAttribute("color", new THREE.BufferAttribute(colours(attr.values, scale, 3), 3));
    } else if (attr) {
      geometry.setAttribute("color", new THREE.BufferAttribute(colours(attr.values, scale, 1), 3));
    }
    this.mesh.geometry = geometry;
    this.material.vertexColors = Boolean(attr);
    this.material.color = attr ? new THREE.Color(0xffffff) : BASE;
    this.material.needsUpdate = true;
    this.render();
  }

  setWireframe(on) {
    this.material.wireframe = on;
    this.render();
  }

  render() {
    // a directional light shines from its position towards its target (the origin)
    this.light.position.copy(this.shared.camera.position).sub(this.controls.target);
    this.renderer.render(this.scene, this.shared.camera);
    if (this.mesh) this.canvas.dataset.rendered = "true";
  }
}

// The camera and framing the views share.
export class Views {
  constructor(canvases) {
    this.camera = new THREE.PerspectiveCamera(35, 1, 0.01, 100);
    this.viewers = canvases.map((c) => new Viewer(c, this));
    this.framed = false;
  }

  renderAll() {
    for (const v of this.viewers) v.render();
  }

  frame(sphere) {
    const r = sphere.radius || 1;
    for (const v of this.viewers) v.controls.target.copy(sphere.center);
    const dir = new THREE.Vector3(0.55, 0.35, 1).normalize();
    this.camera.position.copy(sphere.center).addScaledVector(dir, r * 3.7);
    this.camera.near = r * 0.01;
    this.camera.far = r * 50;
    this.camera.updateProjectionMatrix();
    for (const v of this.viewers) v.controls.update();
    this.framed = true;
    this.renderAll();
  }

  // The screen's upward direction in the mesh's coordinates.
  screenUp() {
    const up = new THREE.Vector3(0, 1, 0).applyQuaternion(this.camera.quaternion);
    return [up.x, up.y, up.z];
  }

  // Frame the next mesh shown (a new file).
  reframe() {
    this.framed = false;
  }

  // Show `data` in viewer `i`; the first mesh shown frames both views.
  show(i, data) {
    const sphere = this.viewers[i].setMesh(data);
    if (!this.framed) this.frame(sphere);
    else this.renderAll();
  }
}
