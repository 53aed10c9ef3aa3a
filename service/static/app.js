// The page: choose a mesh, build a pipeline from the catalogue (`GET /v1/operations`, each
// operation's form generated from its JSON Schema), submit it as any REST caller would, follow
// the job, preview input and result in 3D, download.
//
// The chosen file is read in the browser (local.js) and shown at once; a click on that preview
// picks vertices for the steps that take them (PICKABLE). Presets fill the form from
// presets.json; the form can be copied as a curl command or a Python script (request.js); jobs
// this browser submitted are listed from localStorage and open again on a click (or from
// `#job=<id>` in the address).
//
// `?poll=1` in the page's address follows jobs by polling instead of server-sent events.

import { buildFields, readFields, writeFields } from "./form.js";
import { ENDED, cancelJob, followJob, getJSON, plainError, submitJob } from "./job.js";
import { LocalUnsupported, parseLocal } from "./local.js";
import { curlCommand, pythonScript } from "./request.js";

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);

const state = {
  ops: new Map(),
  files: [],
  job: null,
  stopFollow: null,
  upload: null,
  viewer: null, // the viewer module, once three.js loaded
  views: null,
  previews: { input: null, result: null },
  colourTouched: false,
  localToken: 0,
  pickTarget: null, // the field picked vertices go to (the last one focused)
  presets: [],
};

// Step parameters a click on the preview can fill: a list of vertex ids, a point, a direction.
export const PICKABLE = {
  geodesic_distance: { sources: "vertices" },
  slice_plane: { point: "point", normal: "normal" },
};

// Output options that matter only for some pipelines and formats (see OutputSpec): matrix files
// exist only when a step makes artifacts; polygons only when a step makes polygon groups (these
// face attributes) and the format can write polygons; compression only for GLB (Draco).
const POLYGON_ATTRIBUTES = new Set(["quad_id", "polygon_id"]);
const POLYGON_FORMATS = new Set(["obj", "ply", "off"]);
const COMPRESSED_FORMATS = new Set(["glb"]);

const RECENT_KEY = "tessera.recentJobs";
const RECENT_MAX = 25;

const KIND_LABELS = {
  reindex: "Clean-up and re-indexing",
  static: "Measures and attributes",
  report: "Reports",
  remesh: "Remeshing (a new surface)",
  dynamic: "Local remeshing (flips, collapses, splits)",
};

// ------------------------------------------------------------------ formatting
function bytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["kB", "MB", "GB"];
  let v = n;
  let i = -1;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

function seconds(s) {
  if (s < 0.001) return `${(s * 1e6).toFixed(0)} µs`;
  if (s < 1) return `${(s * 1000).toFixed(s < 0.01 ? 2 : 0)} ms`;
  return `${s.toFixed(2)} s`;
}

export function num(v) {
  if (v === null || v === undefined) return "–";
  const a = Math.abs(v);
  if (v !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
  return String(Number(v.toPrecision(3)));
}

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

// ------------------------------------------------------------------ files
function setFiles(list) {
  state.files = [...list];
  const ul = $("file-list");
  ul.replaceChildren(
    ...state.files.map((f, i) => {
      const remove = el("button", { type: "button", className: "icon", textContent: "✕",
                                    title: `Remove ${f.name}` });
      remove.setAttribute("aria-label", `Remove ${f.name}`);
      remove.addEventListener("click", () => {
        state.files.splice(i, 1);
        setFiles(state.files);
        $("file").focus();
      });
      return el("li", {}, el("span", { className: "file-name", textContent: f.name }),
                el("span", { className: "muted", textContent: bytes(f.size) }), remove);
    }),
  );
  $("drop").classList.toggle("has-file", state.files.length > 0);
  previewLocal();
}

// Read the (first) chosen file here and show it before anything is uploaded.
async function previewLocal() {
  const token = ++state.localToken;
  state.local = null;
  const note = $("local-note");
  resetPreview();
  if (state.views) state.views.reframe();
  if (!state.files.length) {
    note.textContent = "";
    document.body.dataset.local = "none";
    updatePicking();
    return;
  }
  const f = state.files[0];
  if (!state.views) {
    note.textContent = "No preview here: the 3D view is unavailable.";
    document.body.dataset.local = "unsupported";
    return;
  }
  note.textContent = `Reading ${f.name} in the browser…`;
  document.body.dataset.local = "reading";
  try {
    const data = await parseLocal(f);
    if (token !== state.localToken) return;
    data.header.pickable = data.header.pickable && state.files.length === 1;
    state.local = data;
    state.previews.input = data;
    state.views.show(0, data);
    $("input-counts").textContent = `${countsText(data.header)} · read in the browser`;
    const more = state.files.length > 1 ? ` (the first of ${state.files.length} files)` : "";
    note.textContent = `${f.name}${more} is shown in the preview.` +
      (data.header.pickable ? " Click the model to pick vertices for a step." : "");
    document.body.dataset.local = "shown";
    updateColourChoices();
    applyColour();
  } catch (err) {
    if (token !== state.localToken) return;
    const why = err instanceof LocalUnsupported ? err.message
      : `it could not be read here (${err.message})`;
    note.textContent = `No preview before the upload: ${why}. The service previews the input ` +
      "once the job is submitted.";
    document.body.dataset.local = "unsupported";
  }
  updatePicking();
}

function wireFiles() {
  const drop = $("drop");
  $("file").addEventListener("change", (e) => setFiles(e.target.files));
  for (const type of ["dragenter", "dragover"]) {
    drop.addEventListener(type, (e) => {
      e.preventDefault();
      drop.classList.add("over");
    });
  }
  for (const type of ["dragleave", "drop"]) {
    drop.addEventListener(type, () => drop.classList.remove("over"));
  }
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    if (e.dataTransfer && e.dataTransfer.files.length) setFiles(e.dataTransfer.files);
  });
}

// ------------------------------------------------------------------ pipeline
function renumber() {
  const steps = [...$("steps").children];
  steps.forEach((li, i) => {
    li.querySelector(".step-num").textContent = String(i + 1);
    li.querySelector(".up").disabled = i === 0;
    li.querySelector(".down").disabled = i === steps.length - 1;
  });
  $("steps-empty").hidden = steps.length > 0;
  updateAttributeChoices();
  updateApplicable();
  updatePicking();
}

function stepOps() {
  return [...$("steps").children].map((li) => li.dataset.op);
}

// Show the output options only where they apply.
function updateApplicable() {
  const box = $("output-fields");
  const format = box.querySelector("[name=format]");
  const matrix = box.querySelector("[name=matrix_format]");
  const polygons = box.querySelector("[name=polygons]");
  const compression = box.querySelector("[name=compression]");
  const ops = stepOps().map((n) => state.ops.get(n)).filter(Boolean);
  if (compression) {
    compression.closest(".field").hidden = !(format && COMPRESSED_FORMATS.has(format.value));
  }
  if (matrix) {
    matrix.closest(".field").hidden = !ops.some((op) => Object.keys(op.artifacts || {}).length);
  }
  if (polygons) {
    const groups = ops.some((op) => Object.keys(op.outputs || {})
      .some((name) => POLYGON_ATTRIBUTES.has(name)));
    polygons.closest(".field").hidden = !(groups && format && POLYGON_FORMATS.has(format.value));
  }
}

function addStep(name) {
  const op = state.ops.get(name);
  const li = el("li", { className: "step" });
  li.dataset.op = name;
  const button = (cls, text, label, onClick) => {
    const b = el("button", { type: "button", className: `icon ${cls}`, textContent: text,
                             title: label });
    b.setAttribute("aria-label", label);
    b.addEventListener("click", onClick);
    return b;
  };
  const head = el(
    "div", { className: "step-head" },
    el("span", { className: "step-num", ariaHidden: "true" }),
    el("h3", {}, el("code", { textContent: name })),
    el("span", { className: "badge", textContent: op.kind }),
    el("span", { className: "spacer" }),
    button("up", "↑", `Move ${name} up`, () => {
      if (li.previousElementSibling) li.parentNode.insertBefore(li, li.previousElementSibling);
      renumber();
      li.querySelector(".up").disabled ? li.querySelector(".down").focus()
        : li.querySelector(".up").focus();
    }),
    button("down", "↓", `Move ${name} down`, () => {
      if (li.nextElementSibling) li.parentNode.insertBefore(li.nextElementSibling, li);
      renumber();
      li.querySelector(".down").disabled ? li.querySelector(".up").focus()
        : li.querySelector(".down").focus();
    }),
    button("remove", "✕", `Remove ${name}`, () => {
      li.remove();
      renumber();
      $("op-select").focus();
    }),
  );
  const fields = el("div", { className: "fields" });
  buildFields(fields, op.params);
  if (!fields.children.length) {
    fields.append(el("p", { className: "muted", textContent: "No settings." }));
  }
  const about = el("details", { className: "about" }, el("summary", { textContent: "About" }),
                   el("p", { textContent: op.description }));
  if (op.report) about.append(el("p", { textContent: `Reports: ${op.report}` }));
  li.append(head, el("p", { className: "help", textContent: op.summary }), fields, about);
  for (const [param, role] of Object.entries(PICKABLE[name] || {})) {
    const input = fields.querySelector(`[name=${param}]`);
    if (!input) continue;
    input.dataset.pick = role;
    const help = fields.querySelector(`#${CSS.escape(input.id)}-help`);
    if (help) {
      help.textContent += role === "vertices"
        ? " · or click the model in the preview to add (or remove) a vertex"
        : role === "point" ? " · or click the model in the preview (the picked vertex)"
          : " · or focus this field and click the model (the surface normal there)";
    }
  }
  $("steps").append(li);
  renumber();
  return li;
}

function updateAttributeChoices() {
  const box = $("attr-list");
  const was = new Map([...box.querySelectorAll("input")].map((i) => [i.value, i.checked]));
  const produced = new Map();
  for (const li of $("steps").children) {
    for (const [name, out] of Object.entries(state.ops.get(li.dataset.op).outputs || {})) {
      produced.set(name, out);
    }
  }
  const some = $("attr-some").checked;
  box.replaceChildren(
    ...[...produced].map(([name, out]) => {
      const input = el("input", { type: "checkbox", value: name, id: `attr-${name}`,
                                  checked: was.get(name) ?? true, disabled: !some });
      return el("div", { className: "field field-check" }, input,
                el("label", { htmlFor: input.id, textContent: `${name} ` },
                   el("small", { className: "muted", textContent: `per ${out.element}` })));
    }),
  );
  if (!produced.size) {
    box.append(el("p", { className: "muted", textContent: "The steps so far add no attributes." }));
  }
}

function buildSpec() {
  const pipeline = [...$("steps").children].map((li) => ({
    op: li.dataset.op, ...readFields(li.querySelector(".fields")),
  }));
  const output = readFields($("output-fields"));
  if ($("attr-some").checked) {
    output.attributes = [...$("attr-list").querySelectorAll("input:checked")].map((i) => i.value);
  }
  return { pipeline, output, ...readFields($("job-fields")) };
}

// ------------------------------------------------------------------ job display
const STATE_TEXT = {
  uploading: "Uploading…",
  queued: "Queued: waiting for a worker.",
  running: "Running.",
  succeeded: "Succeeded.",
  failed: "Failed.",
  cancelled: "Cancelled.",
  expired: "Expired: the job's files were deleted.",
  rejected: "Not accepted: nothing was queued.",
};

function setState(name, text) {
  const p = $("job-state");
  p.dataset.state = name;
  p.textContent = text || STATE_TEXT[name] || name;
  document.body.dataset.jobState = name;
}

function showError(err) {
  const box = $("error");
  if (!err) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const e = plainError(err);
  box.replaceChildren(
    el("p", { className: "error-head", textContent: e.headline }),
    e.message ? el("p", { className: "error-message", textContent: e.message }) : null,
    e.details.length ? el("ul", {}, ...e.details.map((d) => el("li", { textContent: d }))) : null,
    el("p", { className: "muted" }, "Code: ", el("code", { textContent: e.code })),
  );
  box.hidden = false;
}

function stageLabel(key) {
  const m = /^(\d+):(.+)$/.exec(key);
  if (m) return `step ${Number(m[1]) + 1} · ${m[2]}`;
  return key.replace(/_/g, " ");
}

function renderTimings(timings) {
  const entries = Object.entries(timings || {});
  const box = $("timings-box");
  box.hidden = entries.length === 0;
  const first = ["upload", "parse", "store_input", "queued"];
  entries.sort(([a], [b]) => {
    const rank = (k) => (first.includes(k) ? first.indexOf(k) - 10 : k === "run" ? 100 : 0);
    return rank(a) - rank(b);
  });
  const most = Math.max(...entries.filter(([k]) => k !== "run").map(([, v]) => v), 1e-9);
  $("timings").tBodies[0].replaceChildren(
    ...entries.map(([k, v]) => {
      const bar = el("span", { className: "bar" });
      bar.style.width = `${Math.min(100, (100 * v) / most).toFixed(1)}%`;
      const row = el("tr", {}, el("th", { scope: "row", textContent: stageLabel(k) }),
                     el("td", { className: "secs", textContent: seconds(v) }),
                     el("td", { className: "bar-cell" }, bar));
      if (k === "run") row.className = "total";
      return row;
    }),
  );
}

function renderStats(job) {
  const b = job.stats_before;
  const a = job.stats_after;
  const parts = [];
  if (job.input) parts.push(`${job.input.name}: ${job.input.vertices} vertices, ${job.input.faces} faces`);
  if (b && a) parts.push(`after the pipeline: ${a.vertices} vertices, ${a.faces} faces`);
  if (job.backend) parts.push(`ran on ${job.backend}`);
  $("stats").textContent = parts.join(" · ");
}

function renderDownloads(job) {
  const links = [];
  if (job.result) {
    links.push(el("a", { className: "button primary", href: job.result.url, id: "download-result",
                         download: job.result.filename },
                  `Download result `,
                  el("small", { textContent: `${job.result.filename}, ${bytes(job.result.bytes)}` })));
  }
  for (const [name, a] of Object.entries(job.artifacts || {})) {
    links.push(el("a", { className: "button", href: a.url, download: a.filename },
                  `${name} `, el("small", { textContent: `${a.filename}, ${bytes(a.bytes)}` })));
  }
  if (job.spec && job.spec.pipeline && !state.files.length) {
    // a job opened from the list: its settings can go back into the form
    const reuse = el("button", { type: "button", className: "button subtle", id: "reuse-spec",
                                 textContent: "Put its settings in the form" });
    reuse.addEventListener("click", () => {
      applyPreset({ name: "This job's settings", description: `from job ${job.id}.`,
                    spec: job.spec });
      $("file").focus();
    });
    links.push(reuse);
  }
  if (job.id) {
    links.push(el("a", { className: "button subtle", href: `v1/jobs/${job.id}`, target: "_blank",
                         rel: "noopener", textContent: "Job record (JSON)" }));
  }
  $("downloads").replaceChildren(...links);
}

function cell(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString() : num(v);
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "string") return v;
  if (Array.isArray(v) && v.every((x) => typeof x === "number")) return v.map((x) => num(x)).join(", ");
  const t = JSON.stringify(v);
  return t.length > 300 ? `${t.slice(0, 300)}…` : t;
}

function change(b, a) {
  if (typeof b !== "number" || typeof a !== "number" || a === b) return "";
  const d = a - b;
  const sign = d > 0 ? "+" : "−";
  const abs = Number.isInteger(d) ? Math.abs(d).toLocaleString() : num(Math.abs(d));
  return b !== 0 ? `${sign}${abs} (${d > 0 ? "+" : "−"}${Math.abs((100 * d) / b).toFixed(1)} %)`
    : `${sign}${abs}`;
}

// The statistics before and after, and each step's report, as tables.
function renderReport(job) {
  const box = $("report-box");
  const before = job.stats_before || {};
  const after = job.stats_after || {};
  const reports = job.reports || [];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  box.hidden = !keys.length && !reports.length;
  $("stats-table").hidden = !keys.length;
  $("stats-table").tBodies[0].replaceChildren(...keys.map((k) => el(
    "tr", { className: change(before[k], after[k]) ? "changed" : "" },
    el("th", { scope: "row", textContent: k.replace(/_/g, " ") }),
    el("td", { textContent: cell(before[k]) }),
    el("td", { textContent: cell(after[k]) }),
    el("td", { className: "change", textContent: change(before[k], after[k]) }),
  )));
  $("step-reports").replaceChildren(...reports.map((r, i) => {
    const params = Object.entries(r.params || {}).filter(([k]) => k !== "op");
    const entries = Object.entries(r.report || {});
    const table = el("table", { className: "report-table" },
      el("tbody", {}, ...entries.map(([k, v]) => el("tr", {},
        el("th", { scope: "row", textContent: k.replace(/_/g, " ") }),
        el("td", { textContent: cell(v) })))));
    return el("section", { className: "step-report" },
      el("h4", {}, `Step ${i + 1} · `, el("code", { textContent: r.op }),
         el("span", { className: "muted", textContent:
           ` ${r.seconds !== undefined ? seconds(r.seconds) : ""}${r.backend ? ` on ${r.backend}` : ""}` })),
      params.length ? el("p", { className: "help", textContent:
        params.map(([k, v]) => `${k} = ${cell(v)}`).join(" · ") }) : null,
      entries.length ? table : el("p", { className: "muted", textContent: "No report." }));
  }));
}

// ------------------------------------------------------------------ recent jobs
function recentLoad() {
  try {
    const list = JSON.parse(localStorage.getItem(RECENT_KEY) || "[]");
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

function recentSave(list) {
  try {
    localStorage.setItem(RECENT_KEY, JSON.stringify(list.slice(0, RECENT_MAX)));
  } catch {
    // storage full or off: the list is only a convenience
  }
  renderRecent();
}

function recentAdd(job, files) {
  const list = recentLoad().filter((r) => r.id !== job.id);
  list.unshift({
    id: job.id,
    file: files.map((f) => f.name).join(", ") || (job.input && job.input.name) || "",
    pipeline: (job.spec && job.spec.pipeline || []).map((s) => s.op),
    state: job.state,
    time: job.created_at || new Date().toISOString(),
  });
  recentSave(list);
}

function recentUpdate(job) {
  const list = recentLoad();
  const hit = list.find((r) => r.id === job.id);
  if (hit && hit.state !== job.state) {
    hit.state = job.state;
    recentSave(list);
  }
}

function when(iso) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return "";
  return t.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function renderRecent() {
  const list = recentLoad();
  $("recent-empty").hidden = list.length > 0;
  $("recent-clear").hidden = list.length === 0;
  $("recent").replaceChildren(...list.map((r) => {
    const steps = r.pipeline.length ? r.pipeline.join(" → ") : "convert only";
    const b = el("button", { type: "button", className: "recent-job" },
      el("span", { className: "recent-file", textContent: r.file || "(no file)" }),
      el("span", { className: "recent-steps", textContent: steps }),
      el("span", { className: `recent-state state-${r.state}`, textContent: r.state }),
      el("time", { className: "muted", dateTime: r.time, textContent: when(r.time) }));
    b.dataset.id = r.id;
    b.setAttribute("aria-label", `Open job ${r.id}: ${r.file}, ${steps}, ${r.state}`);
    b.addEventListener("click", () => openJob(r.id));
    if (state.job && state.job.id === r.id) b.setAttribute("aria-current", "true");
    return el("li", {}, b);
  }));
}

function clearJobView() {
  if (state.stopFollow) state.stopFollow();
  state.stopFollow = null;
  state.job = null;
  state.colourTouched = false;
  $("job-id").textContent = "";
  showError(null);
  renderTimings({});
  $("downloads").replaceChildren();
  $("stats").textContent = "";
  $("report-box").hidden = true;
  $("job-progress").value = 0;
  $("job-stage").textContent = "";
}

// Show a job again (from the list): its record, previews, and follow it if it still runs.
async function openJob(id) {
  clearJobView();
  state.localToken += 1; // a file still being read must not take the view back
  state.local = null;
  resetPreview();
  if (state.views) state.views.reframe();
  $("upload-progress").value = 0;
  $("upload-text").textContent = "opened from the list of recent jobs";
  history.replaceState(null, "", `#job=${encodeURIComponent(id)}`);
  let job;
  try {
    job = await getJSON(`v1/jobs/${encodeURIComponent(id)}`);
  } catch (err) {
    $("job-id").textContent = id;
    const gone = err.problem && [404, 410].includes(err.problem.status);
    setState(gone ? "expired" : "rejected",
             gone ? "This job is no longer known to the service (it expired)." : undefined);
    showError(err.problem);
    if (gone) {
      const list = recentLoad();
      const hit = list.find((r) => r.id === id);
      if (hit) hit.state = "expired";
      recentSave(list);
    }
    return;
  }
  renderJob(job);
  follow(job);
  $("job-title").scrollIntoView({ block: "nearest" });
}

function follow(job) {
  loadPreview("input", job.id);
  if (job.state === "succeeded") loadPreview("result", job.id);
  if (ENDED.has(job.state)) return;
  state.stopFollow = followJob(job.id, (j, transport) => {
    document.body.dataset.transport = transport;
    renderJob(j);
    if (j.state === "succeeded") loadPreview("result", j.id);
  }, { poll: query.has("poll") });
}

function renderJob(job) {
  state.job = job;
  $("job-id").textContent = job.id;
  let text = STATE_TEXT[job.state];
  if (job.state === "running" && job.stage) text = `Running: ${stageLabel(job.stage)}.`;
  if (job.state === "queued" && job.attempts > 0) text = `Queued again (attempt ${job.attempts + 1} of ${job.max_attempts}).`;
  if (job.state === "succeeded" && job.timings && job.timings.run !== undefined) {
    text = `Succeeded in ${seconds(job.timings.run)}.`;
  }
  setState(job.state, text);
  $("job-progress").value = job.progress;
  $("job-stage").textContent = `${Math.round(job.progress * 100)} %` +
    (job.stage && !ENDED.has(job.state) ? ` · ${stageLabel(job.stage)}` : "");
  showError(job.error);
  renderStats(job);
  renderTimings(job.timings);
  renderDownloads(job);
  renderReport(job);
  recentUpdate(job);
  renderRecent();
  $("cancel").disabled = ENDED.has(job.state);
}

// ------------------------------------------------------------------ preview
function setNote(text) {
  $("preview-note").textContent = text || "";
}

function countsText(h) {
  const t = `${h.vertices.toLocaleString()} vertices, ${h.faces.toLocaleString()} faces`;
  return h.reduced ? `${t} (reduced from ${h.source.faces.toLocaleString()} for the preview)` : t;
}

async function loadPreview(which, id) {
  if (!state.views) return;
  try {
    const r = await fetch(`v1/jobs/${id}/preview?mesh=${which}`);
    if (!r.ok) {
      const body = await r.json().catch(() => ({}));
      setNote(`No preview of the ${which}: ${body.detail || r.status}.`);
      return;
    }
    const data = state.viewer.decodePreview(await r.arrayBuffer());
    if (!state.job || state.job.id !== id) return; // a newer job took over
    const local = which === "input" ? state.local : null;
    if (local && local.header.pickable
        && (data.header.reduced || data.header.vertices !== local.header.vertices)) {
      return; // keep the browser's full reading (the service's is reduced)
    }
    // the service's reading: the same vertices, with the input's attributes to colour by
    // (several files: joined, numbered as the steps see them)
    state.previews[which] = data;
    if (which === "input") state.local = null;
    state.views.show(which === "input" ? 0 : 1, data);
    $(`${which}-counts`).textContent = countsText(data.header);
    updateColourChoices();
    applyColour();
    if (which === "input") updatePicking();
  } catch (err) {
    setNote(`No preview of the ${which}: ${err.message}`);
  }
}

function resetPreview({ keepLocal = false } = {}) {
  const local = keepLocal ? state.local : null;
  state.previews = { input: local, result: null };
  if (!local) $("input-counts").textContent = "";
  $("result-counts").textContent = "";
  if (state.views) {
    state.views.viewers.forEach((v, i) => {
      if (i > 0 || !local) v.clear();
    });
    if (!local) state.views.framed = false;
  }
  updateColourChoices();
  applyColour();
}

// ------------------------------------------------------------------ picking vertices
function pickInputs() {
  return [...$("steps").querySelectorAll("[data-pick]")]
    .filter((input) => !input.closest(".field").hidden);
}

// Where a pick goes: the pickable field focused last, else the first one of the last step
// that has any.
function pickTarget() {
  const inputs = pickInputs();
  if (state.pickTarget && inputs.includes(state.pickTarget)) return state.pickTarget;
  const last = inputs.at(-1);
  if (!last) return null;
  return last.closest(".step").querySelector("[data-pick]");
}

function pickableData() {
  const v = state.views && state.views.viewers[0];
  const data = v && v.data;
  if (!data) return null;
  if (data.header.reduced || data.header.pickable === false) return null;
  return data;
}

function stepLabel(input) {
  const li = input.closest(".step");
  return `step ${li.querySelector(".step-num").textContent} · ${li.dataset.op} ${input.name}`;
}

function ints(text) {
  return text.split(",").map((t) => t.trim()).filter((t) => /^\d+$/.test(t)).map(Number);
}

function coords(text) {
  const list = text.split(",").map((t) => Number(t.trim()));
  return list.length === 3 && list.every(Number.isFinite) && text.trim() ? list : null;
}

// Markers for the picked vertices (red) and plane points (blue), and the hint saying where the
// next pick goes.
function updatePicking() {
  const viewer = state.views && state.views.viewers[0];
  const data = pickableData();
  const status = $("pick-status");
  const target = pickTarget();
  if (viewer) {
    const points = [];
    if (data) {
      const n = data.position.length / 3;
      for (const input of pickInputs()) {
        if (input.dataset.pick === "vertices") {
          for (const v of ints(input.value)) {
            if (v < n) {
              points.push({ position: [data.position[3 * v], data.position[3 * v + 1],
                                       data.position[3 * v + 2]], colour: 0xe0182d });
            }
          }
        } else if (input.dataset.pick === "point") {
          const p = coords(input.value);
          if (p) points.push({ position: p, colour: 0x1f5fd6 });
        }
      }
    }
    viewer.setMarkers(points);
  }
  $("view-input").classList.toggle("pickable", Boolean(data && target));
  if (!target) {
    status.hidden = true;
    return;
  }
  status.hidden = false;
  if (!data) {
    status.textContent = viewer && viewer.data
      ? "Picking needs the whole mesh in the preview (this one is reduced or joined); type the values."
      : "Choose a mesh to pick on its preview, or type the values.";
    return;
  }
  if (!status.dataset.vertex) status.textContent = `Click the model to set ${stepLabel(target)}.`;
}

function fmt(x) {
  return String(Number(x.toPrecision(7)));
}

function onPick(clientX, clientY) {
  const data = pickableData();
  const target = pickTarget();
  if (!data || !target) return;
  const viewer = state.views.viewers[0];
  const hit = viewer.pick(clientX, clientY);
  if (!hit) return;
  const role = target.dataset.pick;
  const where = hit.position.map(fmt).join(", ");
  let said;
  if (role === "vertices") {
    const list = ints(target.value);
    const at = list.indexOf(hit.vertex);
    if (at >= 0) list.splice(at, 1);
    else list.push(hit.vertex);
    target.value = list.join(", ");
    said = `${at >= 0 ? "Removed" : "Added"} vertex ${hit.vertex} (at ${where})`;
  } else if (role === "point") {
    target.value = where;
    said = `Point set to vertex ${hit.vertex} (at ${where})`;
    const normal = target.closest(".fields").querySelector("[data-pick=normal]");
    if (normal && !normal.value.trim()) {
      // no direction yet: a plane level with the screen's horizontal through the point
      normal.value = state.views.screenUp().map(fmt).join(", ");
    }
  } else {
    target.value = hit.normal.map(fmt).join(", ");
    said = `Normal set to the surface normal at vertex ${hit.vertex}`;
  }
  target.dispatchEvent(new Event("input", { bubbles: true }));
  const status = $("pick-status");
  status.dataset.vertex = String(hit.vertex);
  status.dataset.position = JSON.stringify(hit.position);
  status.textContent = `${said} for ${stepLabel(target)}.`;
  updatePicking();
}

function wirePicking() {
  const canvas = $("view-input");
  let down = null;
  canvas.addEventListener("pointerdown", (e) => {
    down = e.button === 0 ? { x: e.clientX, y: e.clientY } : null;
  });
  canvas.addEventListener("pointerup", (e) => {
    const start = down;
    down = null;
    if (start && Math.hypot(e.clientX - start.x, e.clientY - start.y) <= 4) {
      onPick(e.clientX, e.clientY); // a click, not a drag that turns the view
    }
  });
  $("steps").addEventListener("focusin", (e) => {
    if (e.target.dataset && e.target.dataset.pick) {
      state.pickTarget = e.target;
      delete $("pick-status").dataset.vertex;
      updatePicking();
    }
  });
  $("steps").addEventListener("input", (e) => {
    if (e.target.dataset && e.target.dataset.pick) updatePicking();
  });
}

// ------------------------------------------------------------------ presets
function applyPreset(preset) {
  const steps = $("steps");
  steps.replaceChildren();
  const missing = [];
  for (const step of preset.spec.pipeline) {
    if (!state.ops.has(step.op)) {
      missing.push(step.op);
      continue;
    }
    const li = addStep(step.op);
    const { op, ...params } = step;
    writeFields(li.querySelector(".fields"), params);
  }
  const output = preset.spec.output || {};
  writeFields($("output-fields"), output);
  writeFields($("job-fields"), preset.spec);
  const only = Array.isArray(output.attributes) ? new Set(output.attributes) : null;
  $(only ? "attr-some" : "attr-all").checked = true;
  renumber();
  if (only) {
    for (const box of $("attr-list").querySelectorAll("input")) box.checked = only.has(box.value);
  }
  $("preset-about").textContent = `${preset.name}: ${preset.description}` +
    (missing.length ? ` (not offered by this service: ${missing.join(", ")})` : "");
}

async function loadPresets() {
  const select = $("preset");
  try {
    const body = await getJSON("static/presets.json");
    state.presets = body.presets;
    select.replaceChildren(new Option("Choose a starting point…", ""),
      ...body.presets.map((p, i) => new Option(p.name, String(i))));
    select.disabled = false;
    $("use-preset").disabled = false;
  } catch {
    select.replaceChildren(new Option("No presets", ""));
  }
  $("use-preset").addEventListener("click", () => {
    const p = state.presets[Number(select.value)];
    if (select.value !== "" && p) applyPreset(p);
    else select.focus();
  });
}

// ------------------------------------------------------------------ run it elsewhere
function serviceBase() {
  return new URL(".", location.href).href;
}

async function copyRequest(kind) {
  const spec = buildSpec();
  const names = state.files.length ? state.files.map((f) => f.name) : ["mesh.ply"];
  const text = kind === "curl" ? curlCommand(serviceBase(), names, spec)
    : pythonScript(serviceBase(), names, spec);
  const box = $("request-box");
  const area = $("request-text");
  box.hidden = false;
  area.value = text;
  area.dataset.kind = kind;
  area.rows = Math.min(18, text.split("\n").length + 1);
  $("request-label").textContent = kind === "curl" ? "curl command" : "Python (the tessera client)";
  const where = state.files.length ? "Run it in the folder that holds the file."
    : "Choose a mesh first, or put your file's name in place of mesh.ply.";
  let copied = false;
  try {
    await navigator.clipboard.writeText(text);
    copied = true;
  } catch {
    area.select();
  }
  $("request-note").textContent = `${copied ? "Copied to the clipboard." : "Select the text and copy it."} ${where}`;
}

function attributeKeys() {
  const keys = new Map();
  for (const which of ["result", "input"]) {
    for (const a of (state.previews[which] || { attributes: [] }).attributes) {
      keys.set(`${a.element}.${a.name}`, a);
    }
  }
  return keys;
}

function updateColourChoices() {
  const select = $("colour-by");
  const keys = attributeKeys();
  const current = select.value;
  select.replaceChildren(new Option("nothing (plain)", ""),
    ...[...keys].map(([key, a]) => new Option(`${a.name} (per ${a.element})`, key)));
  if (keys.has(current)) select.value = current;
  else if (!state.colourTouched && state.previews.result) {
    // show what the pipeline computed: the first vertex attribute of the result
    const first = state.previews.result.attributes.find((a) => a.element === "vertex");
    select.value = first ? `vertex.${first.name}` : "";
  } else select.value = "";
}

function applyColour() {
  if (!state.views) return;
  const key = $("colour-by").value;
  const attr = key ? attributeKeys().get(key) : null;
  const robust = $("colour-range").value === "robust";
  const lo = attr ? (robust ? attr.low : attr.min) : null;
  const hi = attr ? (robust ? attr.high : attr.max) : null;
  const legend = $("legend");
  if (!attr || lo === null || hi === null) {
    for (const v of state.views.viewers) v.colour(null);
    legend.hidden = true;
    return;
  }
  const scale = state.viewer.scaleFor({ lo, hi });
  for (const v of state.views.viewers) v.colour(key, scale);
  $("legend-name").textContent = attr.name;
  $("legend-lo").textContent = num(scale.lo);
  $("legend-hi").textContent = num(scale.hi);
  $("legend-bar").style.background = state.viewer.gradientCSS(scale);
  $("legend-bar").setAttribute("aria-label",
    `colour scale for ${attr.name} from ${num(scale.lo)} to ${num(scale.hi)}`);
  const notes = [];
  if (scale.diverging) notes.push("white is 0");
  if (robust && (attr.min < lo || attr.max > hi)) notes.push(`values run from ${num(attr.min)} to ${num(attr.max)}`);
  if (attr.nonfinite) notes.push(`${attr.nonfinite.toLocaleString()} not finite (grey)`);
  $("legend-note").textContent = notes.join(" · ");
  legend.hidden = false;
}

async function startViewer() {
  try {
    state.viewer = await import("./viewer.js");
    state.views = new state.viewer.Views([$("view-input"), $("view-result")]);
    setNote("Drag to turn, scroll or pinch to zoom, right-drag to pan; both views move together.");
  } catch (err) {
    setNote("The 3D preview is unavailable: three.js could not be loaded (run ./dev.sh setup, " +
            `which installs it with npm ci) or WebGL is off. ${err.message}`);
  }
  $("wireframe").addEventListener("change", (e) => {
    if (state.views) for (const v of state.views.viewers) v.setWireframe(e.target.checked);
  });
  $("colour-by").addEventListener("change", () => {
    state.colourTouched = true;
    applyColour();
  });
  $("colour-range").addEventListener("change", applyColour);
}

// ------------------------------------------------------------------ submit and cancel
async function onSubmit(e) {
  e.preventDefault();
  const form = $("job-form");
  const spec = buildSpec();
  if (!form.checkValidity()) {
    form.reportValidity();
    return;
  }
  if (!state.files.length) {
    setState("rejected", "Choose a mesh file first.");
    $("file").focus();
    return;
  }
  clearJobView();
  resetPreview({ keepLocal: true });

  const total = state.files.reduce((n, f) => n + f.size, 0);
  $("upload-progress").value = 0;
  $("upload-text").textContent = `0 of ${bytes(total)}`;
  setState("uploading");
  const ctrl = new AbortController();
  state.upload = ctrl;
  $("cancel").disabled = false;
  $("submit").disabled = true;
  let job;
  try {
    job = await submitJob(state.files, spec, {
      signal: ctrl.signal,
      onProgress: (loaded, size, done) => {
        $("upload-progress").value = done ? 1 : loaded / size;
        $("upload-text").textContent = done ? `${bytes(total)} sent; the service checks the file…`
          : `${bytes(loaded)} of ${bytes(size)}`;
      },
    });
  } catch (err) {
    $("cancel").disabled = true;
    if (err.aborted) {
      setState("cancelled", "Upload cancelled: nothing was queued.");
    } else {
      setState("rejected");
      showError(err.problem);
    }
    return;
  } finally {
    state.upload = null;
    $("submit").disabled = false;
  }
  $("upload-progress").value = 1;
  $("upload-text").textContent = `${bytes(total)} sent and accepted`;
  recentAdd(job, state.files);
  history.replaceState(null, "", `#job=${encodeURIComponent(job.id)}`);
  renderJob(job);
  follow(job);
}

async function onCancel() {
  if (state.upload) {
    state.upload.abort();
    return;
  }
  if (!state.job || ENDED.has(state.job.state)) return;
  $("cancel").disabled = true;
  try {
    renderJob(await cancelJob(state.job.id));
  } catch (err) {
    showError(err.problem);
  }
}

// ------------------------------------------------------------------ start
async function main() {
  wireFiles();
  $("job-form").addEventListener("submit", onSubmit);
  $("cancel").addEventListener("click", onCancel);
  $("attr-all").addEventListener("change", updateAttributeChoices);
  $("attr-some").addEventListener("change", updateAttributeChoices);
  $("copy-curl").addEventListener("click", () => copyRequest("curl"));
  $("copy-python").addEventListener("click", () => copyRequest("python"));
  $("recent-clear").addEventListener("click", () => recentSave([]));
  wirePicking();
  renderRecent();
  const viewer = startViewer();
  try {
    const [catalogue, openapi] = await Promise.all([getJSON("v1/operations"),
                                                    getJSON("openapi.json")]);
    const select = $("op-select");
    const groups = new Map();
    for (const op of catalogue.data) {
      state.ops.set(op.name, op);
      if (!groups.has(op.kind)) {
        groups.set(op.kind, el("optgroup", { label: KIND_LABELS[op.kind] || op.kind }));
      }
      groups.get(op.kind).append(new Option(op.name, op.name));
    }
    select.replaceChildren(...groups.values());
    const showSummary = () => {
      $("op-summary").textContent = state.ops.get(select.value)?.summary || "";
    };
    select.addEventListener("change", showSummary);
    showSummary();
    select.disabled = false;
    $("add-step").disabled = false;
    $("add-step").addEventListener("click", () => addStep(select.value));
    const schemas = openapi.components.schemas;
    buildFields($("output-fields"), schemas.OutputSpec, ["attributes"]);
    buildFields($("job-fields"), schemas.JobCreate, ["pipeline", "output"]);
    $("output-fields").addEventListener("change", updateApplicable);
    renumber();
    await loadPresets();
  } catch (err) {
    setState("rejected", "The operation catalogue could not be loaded.");
    showError(err.problem || { code: "network", detail: err.message });
  }
  await viewer;
  const opened = /^#job=(.+)$/.exec(location.hash);
  if (opened) await openJob(decodeURIComponent(opened[1]));
  document.body.dataset.ready = "true";
}

main();
