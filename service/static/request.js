// The page's job as a request someone can run elsewhere: a curl command (one file as the
// request body with the spec in the `Tessera-Spec` header, as the README recommends for large
// files; several files, or a spec too long for a header, as the multipart form the page itself
// sends) or a Python script using the `tessera` client. `base` is the service's URL ending
// in "/".

// The longest spec sent in a header, as the Python client decides (tessera/_common.py).
const MAX_SPEC_HEADER = 8192;

export function shellQuote(text) {
  return `'${String(text).replace(/'/g, "'\\''")}'`;
}

export function curlCommand(base, names, spec) {
  const url = `${base}v1/jobs`;
  const json = JSON.stringify(spec);
  const lines = ["curl -sS"];
  if (names.length === 1 && json.length <= MAX_SPEC_HEADER) {
    lines.push(`--data-binary ${shellQuote(`@${names[0]}`)}`,
               "-H 'Content-Type: application/octet-stream'",
               `-H ${shellQuote(`Tessera-Spec: ${json}`)}`,
               shellQuote(`${url}?filename=${encodeURIComponent(names[0])}`));
  } else {
    for (const n of names) lines.push(`-F ${shellQuote(`mesh=@${n}`)}`);
    lines.push(`-F ${shellQuote(`spec=${json}`)}`, shellQuote(url));
  }
  return lines.join(" \\\n     ");
}

// JSON text as a Python literal: true, false and null outside strings become True, False, None.
export function pythonLiteral(value, indent = 4) {
  return JSON.stringify(value, null, indent).replace(
    /"(?:[^"\\]|\\.)*"|\btrue\b|\bfalse\b|\bnull\b/g,
    (t) => ({ true: "True", false: "False", null: "None" })[t] || t,
  );
}

export function pythonScript(base, names, spec) {
  const server = base.replace(/\/$/, "");
  const mesh = names.length === 1 ? JSON.stringify(names[0])
    : `[${names.map((n) => JSON.stringify(n)).join(", ")}]`;
  const body = pythonLiteral(spec);
  return [
    "from tessera import Client",
    "",
    `spec = ${body}`,
    "",
    `with Client(${JSON.stringify(server)}) as tc:`,
    `    job = tc.submit(${mesh}, spec=spec)`,
    "    job = tc.wait(job)",
    '    print(job["id"], job["state"], job["stats_after"])',
    '    tc.download(job, job["result"]["filename"])',
    "",
  ].join("\n");
}
