// The page: choose a mesh, build a pipeline from the catalogue (`GET /v1/operations`, each
// operation's form generated from its JSON Schema), submit it as any REST caller would, follow
// the job, preview input and result in 3D, download.
//
// `?poll=1` in the page's address follows jobs by polling instead of server-sent events.

import { buildFields, readFields } from "./form.js";
import { ENDED, cancelJob, followJob, getJSON, plainError, submitJob } from "./job.js";

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
};

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
      });
      return el("li", {}, el("span", { className: "file-name", textContent: f.name }),
                el("span", { className: "muted", textContent: bytes(f.size) }), remove);
    }),
  );
  $("drop").classList.toggle("has-file", state.files.length > 0);
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
  $("steps").append(li);
  renumber();
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
  if (job.id) {
    links.push(el("a", { className: "button subtle", href: `v1/jobs/${job.id}`, target: "_blank",
                         rel: "noopener", textContent: "Job record (JSON)" }));
  }
  $("downloads").replaceChildren(...links);
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
    state.previews[which] = data;
    state.views.show(which === "input" ? 0 : 1, data);
    $(`${which}-counts`).textContent = countsText(data.header);
    updateColourChoices();
    applyColour();
  } catch (err) {
    setNote(`No preview of the ${which}: ${err.message}`);
  }
}

function resetPreview() {
  state.previews = { input: null, result: null };
  $("input-counts").textContent = "";
  $("result-counts").textContent = "";
  if (state.views) {
    for (const v of state.views.viewers) v.clear();
    state.views.framed = false;
  }
  updateColourChoices();
  applyColour();
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
  if (state.stopFollow) state.stopFollow();
  state.job = null;
  state.colourTouched = false;
  $("job-id").textContent = "";
  showError(null);
  renderTimings({});
  $("downloads").replaceChildren();
  $("stats").textContent = "";
  $("job-progress").value = 0;
  $("job-stage").textContent = "";
  resetPreview();

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
  renderJob(job);
  loadPreview("input", job.id);
  state.stopFollow = followJob(job.id, (j, transport) => {
    document.body.dataset.transport = transport;
    renderJob(j);
    if (j.state === "succeeded") loadPreview("result", j.id);
  }, { poll: query.has("poll") });
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
    renumber();
  } catch (err) {
    setState("rejected", "The operation catalogue could not be loaded.");
    showError(err.problem || { code: "network", detail: err.message });
  }
  await viewer;
  document.body.dataset.ready = "true";
}

main();
