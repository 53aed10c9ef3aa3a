// Talking to the API: the multipart submission (XMLHttpRequest, for upload progress), following
// a job by server-sent events with a polling fallback, cancelling, and errors in plain words.

export const ENDED = new Set(["succeeded", "failed", "cancelled", "expired"]);

// Submit like any REST caller: `mesh` parts and the JSON `spec`. Resolves with the job; rejects
// with an Error carrying `problem` (the problem+json body) when the API refuses.
export function submitJob(files, spec, { onProgress, signal } = {}) {
  return new Promise((resolve, reject) => {
    const body = new FormData();
    for (const f of files) body.append("mesh", f, f.name);
    body.append("spec", JSON.stringify(spec));
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "v1/jobs");
    xhr.responseType = "json";
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable && onProgress) onProgress(e.loaded, e.total);
    });
    xhr.upload.addEventListener("load", () => onProgress && onProgress(1, 1, true));
    xhr.addEventListener("load", () => {
      if (xhr.status === 200 || xhr.status === 202) resolve(xhr.response);
      else reject(problemError(xhr.response, xhr.status));
    });
    xhr.addEventListener("error", () => reject(networkError()));
    xhr.addEventListener("abort", () => reject(Object.assign(new Error("Upload cancelled."),
                                                             { aborted: true })));
    if (signal) signal.addEventListener("abort", () => xhr.abort());
    xhr.send(body);
  });
}

function problemError(body, status) {
  const problem = body && typeof body === "object" ? body
    : { code: "http.error", detail: `the service answered ${status}`, status };
  return Object.assign(new Error(problem.detail || "request failed"), { problem });
}

function networkError() {
  return problemError({ code: "network", detail: "the service could not be reached" }, 0);
}

export async function getJSON(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw problemError(body, r.status);
  return body;
}

export async function cancelJob(id) {
  const r = await fetch(`v1/jobs/${id}`, { method: "DELETE" });
  const body = await r.json().catch(() => null);
  if (!r.ok && r.status !== 409) throw problemError(body, r.status);
  return r.ok ? body : getJSON(`v1/jobs/${id}`);
}

// Follow a job until it ends: `onJob(job, transport)` for every new state. Server-sent events
// (`/v1/jobs/{id}/events`) when the browser has EventSource; polling every `pollMs` otherwise or
// as soon as the stream fails. Returns `stop()`.
export function followJob(id, onJob, { poll = false, pollMs = 750 } = {}) {
  let stopped = false;
  let source = null;
  let timer = null;
  const stop = () => {
    stopped = true;
    if (source) source.close();
    clearTimeout(timer);
  };
  const deliver = (job, transport) => {
    if (stopped) return;
    onJob(job, transport);
    if (ENDED.has(job.state)) stop();
  };
  const polling = async () => {
    if (stopped) return;
    try {
      deliver(await getJSON(`v1/jobs/${id}`), "polling");
    } catch (err) {
      if (err.problem && err.problem.status === 404) {
        stop();
        return;
      }
    }
    if (!stopped) timer = setTimeout(polling, pollMs);
  };
  if (poll || typeof EventSource === "undefined") {
    polling();
  } else {
    source = new EventSource(`v1/jobs/${id}/events`);
    source.addEventListener("job", (e) => deliver(JSON.parse(e.data), "events"));
    source.addEventListener("gone", () => stop());
    source.addEventListener("error", () => {
      if (stopped) return;
      source.close();  // fall back rather than let EventSource reconnect forever
      source = null;
      polling();
    });
  }
  return stop;
}

const PLAIN = [
  ["format.archive", "The archive could not be opened, or holds no mesh we can read."],
  ["format.", "The file could not be read as a mesh."],
  ["mesh.", "The mesh cannot be processed as it is."],
  ["op.", "A pipeline step refused its settings for this mesh."],
  ["spec.", "The pipeline or the output settings are not valid."],
  ["request.invalid", "The request is missing something (is a mesh file chosen?)."],
  ["upload.too_large", "The file is larger than this service accepts."],
  ["idempotency.", "This submission clashes with an earlier one."],
  ["job.timeout", "The job ran longer than its deadline and was stopped."],
  ["job.not_found", "The job is not known to the service (it may have expired)."],
  ["job.expired", "The job has expired; its files were deleted."],
  ["worker.", "The worker running the job stopped; the job was retried and gave up."],
  ["engine.", "The engine failed unexpectedly; the job was retried and gave up."],
  ["redis.unavailable", "The service is briefly unavailable. Try again shortly."],
  ["network", "The service could not be reached."],
];

function sentence(text) {
  const t = String(text || "").trim();
  if (!t) return "";
  return t[0].toUpperCase() + t.slice(1) + (/[.!?]$/.test(t) ? "" : ".");
}

// An error (a job's `error` or a problem+json body) as { headline, message, code, details[] }.
export function plainError(err) {
  const code = err.code || "error";
  const hit = PLAIN.find(([prefix]) => code.startsWith(prefix));
  const details = [];
  const context = err.detail && typeof err.detail === "object" ? err.detail : err.context || {};
  for (const [k, v] of Object.entries(context)) {
    details.push(`${k.replace(/_/g, " ")}: ${typeof v === "object" ? JSON.stringify(v) : v}`);
  }
  for (const e of err.errors || []) {
    const where = (e.loc || []).filter((p) => p !== "body").join(" › ");
    details.push(`${where ? where + ": " : ""}${e.msg || e.message || JSON.stringify(e)}`);
  }
  const message = sentence(typeof err.detail === "string" ? err.detail : err.message);
  return { headline: hit ? hit[1] : "Something went wrong.", message, code, details };
}
